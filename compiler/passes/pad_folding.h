// compiler/passes/pad_folding.h — a zero Pad in front of a convolution or an
// average pool that counts its padding joins the consumer's own pads.
//
// Exporters often pad explicitly: PyTorch writes Inception's
// avg_pool2d(3, stride 1, padding 1) as Pad + AveragePool, TensorFlow
// converters put a Pad before many convolutions. As a separate node the Pad
// is a kernel that copies the whole tensor, and under the channels-last layout
// one more node to carry along; folded, the consumer reads the unpadded input
// and pads implicitly, which computes the same values (the zeros it adds are
// the ones the Pad wrote, counted alike: OpDef::pads_with_zeros, which lets an
// average pool without pads of its own count padding from then on).
//
// Folded when: the Pad is canonical (constant mode, pads in the attribute),
// its padding value is zero (absent, or a constant whose bytes are all zero),
// it pads no batch or channel axis and nothing negatively, its result feeds
// only input 0 of one consumer whose op says pads_with_zeros, and the summed
// pads are symmetric on every spatial axis (libraries such as cuDNN pad both
// ends alike: an asymmetric fold could turn a library call into a slower
// generated kernel). Needs typed, canonical nodes. Deterministic.
//
// Thread-safety: one graph at a time per pass object.
#pragma once

#include "compiler/passes/pass.h"

namespace keel::passes {

class PadFoldingPass : public Pass {
 public:
  std::string name() const override { return "pad-folding"; }
  std::string description() const override {
    return "zero Pad before a Conv or a padding-counting AveragePool becomes the consumer's pads";
  }
  Status Run(ir::Graph& graph) override;
};

}  // namespace keel::passes
