// compiler/passes/channels_last.h — keelc --layout: runs 2-D and 3-D images in
// channels-last (NHWC, NDHWC) order where the target is faster that way, with
// the transposes moved to the model's edges.
//
// cuDNN's half-precision convolutions run on tensor cores in NHWC; given NCHW
// they transpose inside every call. This pass puts every node the target
// prefers in channels-last form (ops/channels_last.h: a Conv, MaxPool or
// AveragePool whose rank-4 operands hold NHWC / OHWI data), then removes the
// transposes that form creates:
//
//   1. Each preferred node n becomes Transpose(to NCHW) ∘ n' ∘ Transpose(to
//      NHWC) on its moved operands; constant operands (weights) are moved at
//      compile time instead.
//   2. Transposes to NCHW sink towards the consumers: through elementwise ops
//      (constants moved at compile time, one-element operands kept), through
//      ops with an axis hook (OpDef::permute_axes: Concat, kept-dims
//      reductions), and into ops with a channels-last form the target prefers
//      (global pools). Two transposes in a row become one; an identity
//      transpose disappears, so a conv-relu-conv chain keeps NHWC throughout.
//      An op with an axis hook that drops axes (a mean over H and W without
//      keepdims) reads the channels-last tensor where its result stays the same
//      tensor ([N, C] either way).
//   2b. (When asked: the CPU.) A transpose back to NCHW behind an op in its axis form that
//      writes at least twice the elements it reads from one operand (an upsampling Resize),
//      that op's only reader, goes back in front of it: the op runs channels-first on the image
//      that is still small, and the transpose moves a fraction of the bytes.
//   3. A transpose to NHWC of an op's output (through elementwise ops with one
//      tensor operand: a stem's Relu) goes into that op where the target
//      prefers its output-only form (ops/channels_last.h: operands as they
//      are, output NHWC; the predicate is asked on the node so marked): a
//      stem convolution writes the NHWC tensor the chain after it reads.
//   4. A transpose that only moves size-1 axes (a pooled [N,1,1,C] back to
//      [N,C,1,1]) is a view: it becomes keel.Reshape.
// What is left is one transpose where NCHW data enters (the image, unless an
// op writes NHWC from it) and one where it leaves (a Flatten/Reshape that
// needs the NCHW order), both ordinary nodes that the memory plan counts.
//
// Only rank-4 and rank-5 tensors are rewritten (a node's operands and result
// alike: a transposed operand of another rank keeps the node as it is). The pass needs typed, canonical nodes
// (it runs after mixed-precision, before fusion) and is deterministic. With
// no predicate it changes nothing (every CPU build, and CUDA at f32 unless
// asked).
//
// Errors: Internal when a rewritten node's type rule disagrees with the
// permuted type (a bug in an op's channels-last form or axis hook).
// Thread-safety: one graph at a time per pass object.
#pragma once

#include <functional>
#include <utility>

#include "compiler/passes/pass.h"

namespace keel::passes {

// Whether the target wants this channels-first node (an op with a
// channels-last form) in channels-last form (driver/backend.h); asked also on
// a node in the output-only form (ops::IsOutputChannelsLast), whether it wants
// that one.
using ChannelsLastPredicate = std::function<bool(const ir::Node& node)>;

class ChannelsLastPass : public Pass {
 public:
  // `before_enlarging`: step 2b (below) on.
  explicit ChannelsLastPass(ChannelsLastPredicate prefers, bool before_enlarging = false)
      : prefers_(std::move(prefers)), before_enlarging_(before_enlarging) {}
  std::string name() const override { return "channels-last"; }
  std::string description() const override {
    return "run convolutions and pools channels-last where the target prefers it, transposes at the edges";
  }
  Status Run(ir::Graph& graph) override;

 private:
  ChannelsLastPredicate prefers_;
  bool before_enlarging_ = false;
};

}  // namespace keel::passes
