// compiler/passes/pass_manager.cc — PassManager, the registry and the default
// pipeline (see pass_manager.h).
#include "compiler/passes/pass_manager.h"

#include <cstdio>
#include <map>

#include "compiler/ir/printer.h"
#include "compiler/passes/attention_fusion.h"
#include "compiler/passes/batchnorm_folding.h"
#include "compiler/passes/channels_last.h"
#include "compiler/passes/constant_folding.h"
#include "compiler/passes/cse.h"
#include "compiler/passes/dce.h"
#include "compiler/passes/fusion.h"
#include "compiler/passes/gelu_fusion.h"
#include "compiler/passes/pad_folding.h"
#include "compiler/passes/reduction_split.h"
#include "compiler/passes/shape_inference.h"
#include "compiler/passes/simplify.h"
#include "compiler/passes/im2col.h"
#include "compiler/passes/space_to_depth.h"
#include "compiler/passes/verify.h"
#include "compiler/passes/weight_packing.h"
#include "compiler/passes/winograd.h"

namespace keel::passes {

void PassManager::Add(std::unique_ptr<Pass> pass) { entries_.push_back(Entry{std::move(pass), true}); }

Status PassManager::Disable(const std::string& name) {
  bool found = false;
  for (Entry& e : entries_) {
    if (e.pass->name() == name) {
      e.enabled = false;
      found = true;
    }
  }
  if (!found) return NotFound("no pass named '" + name + "' in the pipeline");
  return Status::Ok();
}

void PassManager::DumpAfter(const std::string& name, DumpSink sink) {
  dump_after_.insert(name);
  sink_ = std::move(sink);
}

Status PassManager::Run(ir::Graph& graph) {
  for (Entry& e : entries_) {
    if (!e.enabled) continue;
    const std::string name = e.pass->name();
    Status s = e.pass->Run(graph);
    if (!s.ok()) return s.WithContext("pass " + name);
    if (sink_ && (dump_after_.count(name) || dump_after_.count("*"))) sink_(name, ir::PrintGraph(graph));
  }
  return Status::Ok();
}

std::vector<PassInfo> PassManager::List() const {
  std::vector<PassInfo> out;
  for (const Entry& e : entries_) out.push_back({e.pass->name(), e.pass->description(), e.enabled});
  return out;
}

namespace {
const std::vector<std::string>& RegisteredNames() {
  static const std::vector<std::string> names = {"attention-fusion", "batchnorm-folding", "channels-last", "constant-folding", "cse", "dce", "fusion", "gelu-fusion",
                                                 "im2col", "mixed-precision", "pad-folding", "reduction-split", "shape-inference", "simplify", "space-to-depth", "subpixel", "verify", "weight-packing", "winograd"};
  return names;
}
}  // namespace

Result<std::unique_ptr<Pass>> CreatePass(const std::string& name, const PipelineOptions& options) {
  if (name == "simplify") return std::unique_ptr<Pass>(new SimplifyPass());
  if (name == "shape-inference") return std::unique_ptr<Pass>(new ShapeInferencePass());
  if (name == "constant-folding") return std::unique_ptr<Pass>(new ConstantFoldingPass(options.fold_max_bytes));
  if (name == "dce") return std::unique_ptr<Pass>(new DcePass());
  if (name == "cse") return std::unique_ptr<Pass>(new CsePass());
  if (name == "batchnorm-folding") return std::unique_ptr<Pass>(new BatchNormFoldingPass());
  if (name == "pad-folding") return std::unique_ptr<Pass>(new PadFoldingPass());
  if (name == "channels-last") return std::unique_ptr<Pass>(new ChannelsLastPass(options.channels_last, options.channels_last_before_enlarging));
  if (name == "gelu-fusion") return std::unique_ptr<Pass>(new GeluFusionPass());
  if (name == "fusion") return std::unique_ptr<Pass>(new FusionPass(options.fuse_anchors, options.sum_prologues));
  if (name == "mixed-precision") {
    return std::unique_ptr<Pass>(new MixedPrecisionPass(options.mixed_precision, options.mixed_precision_report));
  }
  if (name == "attention-fusion") return std::unique_ptr<Pass>(new AttentionFusionPass(options.attention));
  if (name == "winograd") return std::unique_ptr<Pass>(new WinogradPass(options.winograd));
  if (name == "weight-packing") return std::unique_ptr<Pass>(new WeightPackingPass(options.weight_packing, options.weight_packing_columns));
  if (name == "space-to-depth") return std::unique_ptr<Pass>(new SpaceToDepthPass(options.space_to_depth));
  if (name == "subpixel") return std::unique_ptr<Pass>(new SubpixelConvTransposePass(options.subpixel));
  if (name == "im2col") return std::unique_ptr<Pass>(new Im2ColPass(options.im2col));
  if (name == "reduction-split") return std::unique_ptr<Pass>(new ReductionSplitPass(options.reduction_split));
  if (name == "verify") return std::unique_ptr<Pass>(new VerifyPass());
  return NotFound("unknown pass '" + name + "'");
}

std::vector<PassInfo> ListPasses() {
  std::vector<PassInfo> out;
  for (const std::string& n : RegisteredNames()) {
    auto p = CreatePass(n);
    if (p.ok()) out.push_back({n, (*p)->description(), true});
  }
  return out;
}

Result<PassManager> BuildDefaultPipeline(const PipelineOptions& options) {
  static const char* kOrder[] = {"simplify", "shape-inference", "constant-folding", "dce",    "cse", "gelu-fusion",
                                 "batchnorm-folding", "pad-folding", "shape-inference", "simplify", "space-to-depth",
                                 "subpixel", "im2col", "reduction-split", "mixed-precision",
                                 "attention-fusion", "channels-last", "winograd", "weight-packing", "fusion", "dce",
                                 "verify"};
  for (const std::string& d : options.disabled) {
    bool known = false;
    for (const std::string& n : RegisteredNames()) known = known || n == d;
    if (!known) return NotFound("--disable-pass: unknown pass '" + d + "'");
    if (d == "verify") return InvalidArgument("the verify pass cannot be disabled");
  }
  for (const std::string& d : options.dump_ir_after) {
    bool known = d == "*";
    for (const std::string& n : RegisteredNames()) known = known || n == d;
    if (!known) return NotFound("--dump-ir: unknown pass '" + d + "'");
  }
  PassManager pm;
  for (const char* name : kOrder) {
    KEEL_ASSIGN_OR_RETURN(std::unique_ptr<Pass> p, CreatePass(name, options));
    pm.Add(std::move(p));
  }
  for (const std::string& d : options.disabled) KEEL_RETURN_IF_ERROR(pm.Disable(d));
  DumpSink sink = options.dump_sink;
  if (!sink) {
    sink = [](const std::string& pass, const std::string& text) {
      std::fprintf(stderr, "// ---- IR after %s ----\n%s", pass.c_str(), text.c_str());
    };
  }
  for (const std::string& d : options.dump_ir_after) pm.DumpAfter(d, sink);
  return pm;
}

Status RunDefaultPipeline(ir::Graph& graph, const PipelineOptions& options) {
  KEEL_ASSIGN_OR_RETURN(PassManager pm, BuildDefaultPipeline(options));
  return pm.Run(graph);
}

}  // namespace keel::passes
