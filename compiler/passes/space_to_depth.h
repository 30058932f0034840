// compiler/passes/space_to_depth.h — runs a strided convolution over few
// input channels as a stride-1 convolution over more: the input, padded, goes
// through SpaceToDepth (blocks of s x s pixels become s*s*C channels), and the
// weight is rearranged at compile time to match,
//
//   W'[o, (a*s + b)*C + c, U, V] = W[o, c, s*U + a, s*V + b]   (0 past the kernel),
//
// a kernel of ceil(KH/s) x ceil(KW/s), zero channels appended up to the
// target's count. The result is the same function (the products are the same;
// only the summation order changes). Why: a library may have no fast kernel
// for 3 input channels at stride 2 (cuDNN's bf16 ResNet stem, see
// driver/cuda_backend.cc), but a fast one for 16 channels at stride 1.
//
// Candidates: 2-D Conv, group 1, equal strides s >= 2, dilation 1, explicit
// pads, a constant weight, NCHW. The target's predicate returns the channel
// count to use (0: leave the node); it must be at least s*s*C. Runs on the
// typed graph after BatchNormalization folding (the weight is final) and
// before mixed precision and channels-last (the new Pad and SpaceToDepth nodes
// are converted and laid out like any other). Deterministic: the new nodes
// are named after the convolution, a rearranged weight after the weight (one
// per weight, stride and channel count, shared by the convolutions that read
// it). The output type is checked.
//
// Errors: Internal when the rewritten convolution's type differs from the old.
// Thread-safety: one graph at a time per pass object.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "compiler/passes/pass.h"

namespace keel::passes {

// The input channels to run a candidate convolution with after space-to-depth
// (at least stride^2 times its own), or 0 to keep it.
using SpaceToDepthPredicate = std::function<int64_t(const ir::Node& conv)>;

// Whether `conv` is a candidate (see the file comment).
bool SpaceToDepthApplies(const ir::Node& conv);

class SpaceToDepthPass : public Pass {
 public:
  explicit SpaceToDepthPass(SpaceToDepthPredicate channels) : channels_(std::move(channels)) {}
  std::string name() const override { return "space-to-depth"; }
  std::string description() const override {
    return "strided convolutions over few channels as SpaceToDepth + a stride-1 convolution, where the target prefers it";
  }
  Status Run(ir::Graph& graph) override;

 private:
  SpaceToDepthPredicate channels_;
};

}  // namespace keel::passes
