// vm/cuda/library_attrs.h — typed, checked access to a library kernel's attributes.
//
// Library kernels (serialization/library_ops.h) carry their parameters as
// key/value attributes. AttrReader looks them up by key, checks the value's type
// and range, and turns every problem into kInvalidExecutable naming the kernel
// and the key. Finish() rejects keys that no lookup asked for (a misspelled
// attribute must not be silently ignored).
//
// ReadConvAttrs reads the attributes every convolution library kernel shares
// (cudnn.conv2d, cudnn.conv_transpose, keel.conv2d): one reader, one set of
// defaults and ranges.
//
// Lifetime: borrows the KernelEntry, which outlives it (used at VM creation only).
// Thread-safety: a plain object, one thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "keel/status.h"
#include "vm/executable.h"

namespace keel::vm_internal {

class AttrReader {
 public:
  explicit AttrReader(const KernelEntry& k) : k_(k), used_(k.attrs.size(), false) {}

  // One integer (a one-element ints list); `def` when absent.
  Result<int64_t> Int(std::string_view key, int64_t def, int64_t min, int64_t max);
  Result<int64_t> RequiredInt(std::string_view key, int64_t min, int64_t max);
  // An ints list of exactly `n` values, each in [min, max]; `def` when absent.
  Result<std::vector<int64_t>> Ints(std::string_view key, size_t n, std::vector<int64_t> def, int64_t min,
                                    int64_t max);
  // An ints list of at most `max_n` values, each in [min, max]; empty when absent.
  Result<std::vector<int64_t>> IntList(std::string_view key, size_t max_n, int64_t min, int64_t max);
  bool Has(std::string_view key) const;
  Result<double> Float(std::string_view key, double def);
  // A string from `allowed`; `def` when absent (required when def is null).
  Result<std::string> Str(std::string_view key, const char* def, std::vector<std::string_view> allowed);
  // kInvalidExecutable naming the first attribute no lookup used.
  Status Finish() const;

  Status Error(std::string_view key, const std::string& what) const {
    return InvalidExecutable("kernel " + k_.name + " (" + k_.library_op + "): attribute \"" + std::string(key) +
                             "\" " + what);
  }

 private:
  const AttrEntry* Find(std::string_view key);
  const KernelEntry& k_;
  std::vector<bool> used_;
};

// The library attribute "layout" (serialization/library_ops.h): true for "nhwc".
Result<bool> ReadLayout(AttrReader& at);

// A convolution kernel's attributes (serialization/library_ops.h, cudnn.conv2d):
// `spatial` values per axis (pads: 2 * spatial), every value within int32.
struct ConvAttrs {
  std::vector<int64_t> pads, strides, dilations;
  int64_t group = 1;
  bool has_bias = false, has_residual = false, nhwc = false;
  std::string activation;  // "", "relu" or "clip"
  double clip_min = 0.0, clip_max = 6.0;
  // The arguments' order (X, W, [bias], [residual], Y, [workspace]): bias and
  // residual -1 when absent; `args` counts them without the workspace.
  int bias_arg = -1, res_arg = -1, y_arg = 2, args = 3;
};
// Reads them and rejects any other key (AttrReader::Finish).
Result<ConvAttrs> ReadConvAttrs(const KernelEntry& k, size_t spatial);

}  // namespace keel::vm_internal
