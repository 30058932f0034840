// compiler/passes/pass_manager.h — ordered pass pipelines, the pass registry and
// the default pipeline.
//
//   PassManager pm;  pm.Add(CreatePass("dce").value());  pm.Run(graph);
//
// Every pass in a manager can be switched off by name; a dump hook receives the
// printed IR (compiler/ir/printer.h) after a named pass (keelc --dump-ir=after-NAME)
// or after every pass ("*").
//
// Registry names (keelc --passes lists them with ListPasses()):
//   simplify, shape-inference, constant-folding, dce, cse, gelu-fusion,
//   batchnorm-folding, pad-folding, space-to-depth, subpixel, im2col, mixed-precision,
//   attention-fusion, channels-last, winograd, weight-packing, fusion, verify.
//
// Default pipeline (RunDefaultPipeline):
//   simplify, shape-inference, constant-folding, dce, cse, gelu-fusion,
//   batchnorm-folding, pad-folding, shape-inference, simplify (second run: Reshape-like ops
//   become keel.Reshape views once every shape is static), space-to-depth (a
//   no-op without the target's predicate), subpixel (likewise), im2col (likewise),
//   mixed-precision (a no-op at fp32),
//   attention-fusion (a no-op without the target's predicate), channels-last
//   (likewise), winograd (likewise), weight-packing (likewise),
//   fusion, dce, verify.
//
// Errors: Run stops at the first failing pass and returns its Status with the pass
// name as context ("pass shape-inference: Add 'n1': shapes ... do not broadcast").
// Ownership: a PassManager owns its passes. Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/passes/channels_last.h"
#include "compiler/passes/mixed_precision.h"
#include "compiler/passes/pass.h"
#include "compiler/passes/reduction_split.h"
#include "compiler/passes/attention_fusion.h"
#include "compiler/passes/weight_packing.h"
#include "compiler/passes/im2col.h"
#include "compiler/passes/subpixel_conv_transpose.h"
#include "compiler/passes/space_to_depth.h"
#include "compiler/passes/winograd.h"

namespace keel::passes {

// Receives (pass name, printed IR) after the passes selected for dumping.
using DumpSink = std::function<void(const std::string& pass_name, const std::string& ir_text)>;

struct PassInfo {
  std::string name;
  std::string description;
  bool enabled = true;
};

class PassManager {
 public:
  // Appends a pass; the same pass name may appear more than once.
  void Add(std::unique_ptr<Pass> pass);
  // Switches every pass of that name off (NotFound if the manager has none).
  Status Disable(const std::string& name);
  // Dumps after each run of the pass `name` ("*" = after every pass).
  void DumpAfter(const std::string& name, DumpSink sink);
  // Runs the enabled passes in order.
  Status Run(ir::Graph& graph);
  // The passes in order, with their enabled flag.
  std::vector<PassInfo> List() const;

 private:
  struct Entry {
    std::unique_ptr<Pass> pass;
    bool enabled = true;
  };
  std::vector<Entry> entries_;
  std::set<std::string> dump_after_;
  DumpSink sink_;
};

struct PipelineOptions {
  // Pass names to skip (verify cannot be skipped: it only checks).
  std::set<std::string> disabled;
  // Pass names after which to dump the IR ("*" = all), and where (default: stderr).
  std::set<std::string> dump_ir_after;
  DumpSink dump_sink;
  // constant-folding: folded results above this size are only created when they
  // do not duplicate a weight (see constant_folding.h).
  int64_t fold_max_bytes = 64 * 1024;
  // fusion can be limited to elementwise groups (no anchors) for debugging.
  bool fuse_anchors = true;
  // fusion: a row normalization computes the elementwise sum in front of it
  // (fusion.h, rule 0b; the target's choice).
  bool sum_prologues = false;
  // mixed-precision: the storage precision (fp32: the pass changes nothing), and
  // where its report goes (optional, not owned; must outlive the pipeline's run).
  MixedPrecisionOptions mixed_precision;
  MixedPrecisionReport* mixed_precision_report = nullptr;
  // channels-last: the target's preference (driver/backend.h, keelc --layout);
  // empty: the pass changes nothing.
  ChannelsLastPredicate channels_last;
  // channels-last: a transpose back to NCHW behind an op that enlarges the image goes in front of
  // it (channels_last.h, step 2b; the CPU's choice, not measured on the GPU).
  bool channels_last_before_enlarging = false;
  // winograd: the target's choice of Winograd tile per 3x3 convolution
  // (driver/backend.h, keelc --winograd); empty: the pass changes nothing.
  WinogradPredicate winograd;
  // weight-packing: the rows per panel the target's GEMM reads a convolution's
  // constant weight with, and the columns per panel it reads a MatMul's or
  // Gemm's constant B with (driver/backend.h); empty: that part of the pass
  // changes nothing.
  WeightPackingPredicate weight_packing;
  BPanelPredicate weight_packing_columns;
  // space-to-depth: the input channels the target runs a strided convolution
  // with after space-to-depth (driver/backend.h); empty: the pass changes nothing.
  SpaceToDepthPredicate space_to_depth;
  // subpixel: whether the target runs a strided ConvTranspose as a forward
  // convolution and a pixel shuffle (driver/backend.h); empty: the pass changes nothing.
  SubpixelPredicate subpixel;
  // im2col: the columns the target runs a convolution over few channels with
  // as a GEMM (driver/backend.h); empty: the pass changes nothing.
  Im2ColPredicate im2col;
  // attention-fusion: whether the target runs a keel.Attention problem
  // (driver/backend.h); empty: the pass changes nothing.
  AttentionPredicate attention;
  // reduction-split: the partial results the target runs a reduction with
  // (driver/backend.h); empty: the pass changes nothing.
  ReductionSplitPredicate reduction_split;
};

// All registered passes (name order).
std::vector<PassInfo> ListPasses();
// A fresh pass of that name configured from `options`; NotFound for unknown names.
Result<std::unique_ptr<Pass>> CreatePass(const std::string& name, const PipelineOptions& options = {});
// The default pipeline as a manager (options applied: disabled passes and dumps).
Result<PassManager> BuildDefaultPipeline(const PipelineOptions& options);
// Builds and runs the default pipeline on `graph`.
Status RunDefaultPipeline(ir::Graph& graph, const PipelineOptions& options);

}  // namespace keel::passes
