// common/constant_block.h — where a device's constants (weights) go in the one
// device block that holds them all, and which host-to-device copies fill it.
//
// A model's weights are uploaded at load: one allocation per device and as few
// copies as the file allows, instead of one cudaMalloc + one cudaMemcpy per
// constant. The executable writer puts each device's constants together in the
// data segment at kDeviceConstantAlignment boundaries, so a whole device's
// weights are normally one run of bytes: one copy, with every constant at the
// same relative position (and alignment) in the block as in the file. Constants
// that are not adjacent in the file (an older file, other data in between) start
// a new run at the next aligned offset of the block.
//
// Two parties must lay the block out identically: the VM (vm/interpreter.cc)
// and the CUDA host program (compiler/driver/cuda_host_emitter.cc, whose trace
// must equal the VM's); this function is that one layout.
//
// Thread-safety: a pure function. Errors: none (the reader has already checked
// every constant lies inside the data segment, so no sum here can overflow).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace keel::common {

// The alignment of a device block and of each run inside it (cuBLASLt and cuDNN
// are fastest with 256-byte aligned operands; cudaMalloc gives at least that).
inline constexpr uint64_t kDeviceConstantAlignment = 256;

// One constant's bytes in the data segment.
struct ConstantSpan {
  uint64_t offset = 0;  // from the start of the data segment
  uint64_t size = 0;
};

// One host-to-device copy: `bytes` from data-segment offset `src` to block offset `dst`.
struct ConstantCopy {
  uint64_t src = 0;
  uint64_t dst = 0;
  uint64_t bytes = 0;
};

struct ConstantBlockLayout {
  uint64_t bytes = 0;                 // the block's size (0: nothing to allocate)
  std::vector<uint64_t> offset;       // per span (same order as the input): its offset in the block
  std::vector<ConstantCopy> copies;   // in data-segment order; zero-size spans need none
};

// Lays out the constants `spans` (one device's, any order) in one block.
// Deterministic: the same spans give the same layout.
ConstantBlockLayout LayOutConstantBlock(std::span<const ConstantSpan> spans);

}  // namespace keel::common
