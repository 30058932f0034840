// compiler/passes/subpixel_conv_transpose.h — runs a strided transposed
// convolution as a forward one over the input and a pixel shuffle:
//
//   ConvTranspose(X, W, B)  ->  Slice(DepthToSpace(Conv(X, W', B'), s, DCR))
//
// Output position u = q * s + r (before the begin pads are cropped) takes the
// taps t = j * s + r of the kernel and the inputs q - j: for each phase r, a
// stride-1 convolution over X with the taps of that phase. One Conv computes
// every phase as its own group of output channels: W' [s * s * Co, Ci, J, J]
// (J = ceil(k / s); a phase's taps flipped, zero where a phase has fewer), pads
// J - 1 on both sides, B' the bias repeated per phase. DepthToSpace (DCR: the
// phase is the outer channel index) interleaves the phases, and a Slice crops
// the begin pads and whatever lies past the output (output_padding's zeros are
// the phases' zero-padded reads). The same function: the same products, each
// output's sum in another order.
//
// Why: cuDNN runs a strided transposed convolution as a data gradient with
// "folding" passes around it: a UNet's 3x3 stride-2 32 -> 16 upsampling at 128x128
// took 102 us at batch 32 on an H200 (fold, pad, dgrad, unfold, bias), where a
// forward convolution to 64 channels and one gather take a fraction of that.
//
// Candidates: 2-D ConvTranspose, group 1, equal strides of at least 2, dilations
// 1, a constant f32 weight and f32 input, a constant bias or none, canonical
// pads, and an output the computed rows cover (begin pad + output size <=
// (input + J - 1) * s per axis). The target's predicate decides per node.
// Runs where im2col does (after BatchNormalization folding, before mixed
// precision and channels-last). Deterministic: new nodes named after the
// ConvTranspose, rearranged weights after the weight. The output type is checked.
//
// Errors: Internal when the rewritten output's type differs from the node's.
// Thread-safety: one graph at a time per pass object.
#pragma once

#include <functional>
#include <utility>

#include "compiler/passes/pass.h"

namespace keel::passes {

// Whether the target runs a candidate ConvTranspose as a forward convolution
// and a pixel shuffle.
using SubpixelPredicate = std::function<bool(const ir::Node& conv_transpose)>;

// Whether `node` is a candidate (see the file comment).
bool SubpixelApplies(const ir::Node& node);

class SubpixelConvTransposePass : public Pass {
 public:
  explicit SubpixelConvTransposePass(SubpixelPredicate take) : take_(std::move(take)) {}
  std::string name() const override { return "subpixel"; }
  std::string description() const override {
    return "strided transposed convolutions as a forward convolution and a pixel shuffle, where the target prefers it";
  }
  Status Run(ir::Graph& graph) override;

 private:
  SubpixelPredicate take_;
};

}  // namespace keel::passes
