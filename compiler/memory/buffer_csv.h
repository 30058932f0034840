// compiler/memory/buffer_csv.h — memory-planning problems and solutions as CSV, in
// the exchange format of MiniMalloc (Moffitt, ASPLOS 2023; google/minimalloc), so
// that Keel's planners can be fed any buffer list and Keel's problems can be fed
// to other allocators.
//
// Problem (one buffer per row after a header naming the columns, in any order):
//
//   id,lower,upper,size[,alignment][,alias]
//   0,0,3,4096            a 4096-byte buffer live on the half-open interval [0, 3)
//
//   id         any text without commas or quotes (unique); becomes the tensor's name
//   lower      first step, integer in [0, 2^31 - 2]      (MiniMalloc also says `start`)
//   upper      one past the last step, integer > lower, <= 2^31 - 1
//   end        instead of upper: the last step (inclusive), as MiniMalloc reads it
//   size       bytes, integer in [0, 2^60]
//   alignment  optional power of two in [1, 2^24]; 1 when the column is absent
//   alias      optional (a Keel extension MiniMalloc ignores): the id of a buffer
//              whose bytes this one may overwrite in place (whose upper is this
//              one's lower + 1); empty for none
//   offset     optional; read and checked as an integer but not used (solutions
//              can be read back as problems)
//
// Other columns are ignored, as MiniMalloc does. Lifetimes map to TensorLifetime
// as first_use = lower, last_use = upper - 1 (Keel's steps are closed intervals).
// Every buffer is on the CPU device (the format has one address space).
//
// Solution: the problem's columns plus `offset` (the buffer's byte address within
// the one arena), the form MiniMalloc writes.
//
// Errors: InvalidArgument "<source>:<line>: <what>" on one line — a missing
// column, a non-number, a negative or too large value, upper <= lower, a
// duplicate id, an unknown alias, a bad alignment, more than kMaxCsvBuffers rows;
// IoError/NotFound for unreadable files. Formatting refuses (InvalidArgument) a
// problem with tensors on more than one device, or names unusable as ids when
// `ids_from_names` is set.
// Thread-safety: free functions without state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/memory/planner.h"
#include "keel/status.h"

namespace keel::memory {

// More rows than this is refused (a planning problem of 10^6 buffers already takes
// the fast planners seconds; larger files are almost certainly a mistake).
inline constexpr size_t kMaxCsvBuffers = 1000000;

// Parses a problem from `text`; `source` names it in errors (a path).
Result<std::vector<TensorLifetime>> ParseBufferCsv(const std::string& text, const std::string& source);
// Reads and parses the file at `path` (a regular file; see common/regular_file.h).
Result<std::vector<TensorLifetime>> ReadBufferCsv(const std::string& path);

// Writes a problem (offsets == nullptr) or a solution (one offset per tensor).
// Columns: id,lower,upper,size, then alignment when any tensor's alignment is not
// 1, then alias when any tensor has may_alias_with, then offset for a solution.
// Ids are the tensors' names when every name is non-empty, unique and free of
// commas, quotes and line breaks; otherwise the tensor indices 0..n-1.
// InvalidArgument when the tensors are on more than one device or offsets has the
// wrong length.
Result<std::string> FormatBufferCsv(const std::vector<TensorLifetime>& tensors,
                                    const std::vector<uint64_t>* offsets);

// Each tensor's byte address in a plan that lays everything out in one arena
// (an offset plan, or shared objects packed into one arena): storage offset +
// placement offset. FailedPrecondition for plans with several arenas or dynamic
// storages (their addresses are not in one address space).
Result<std::vector<uint64_t>> SingleArenaAddresses(const Plan& plan);

}  // namespace keel::memory
