// compiler/ops/control_flow.cc — If, Loop and Scan: ops whose semantics is a
// subgraph (ir::Node::subgraph). Keel compiles static graphs, so they never
// reach codegen: shape inference inlines an If whose condition is a constant
// (or selects between both branches), and unrolls a Loop with a constant trip
// count and a Scan over static sequence lengths (compiler/passes/control_flow.h).
// What cannot be made static is refused there, one line naming the node.
//
// The hooks here only define the internal form: the importer binds captured
// outer values (attributes "formal_inputs", "<attr>.captures"); normalize marks
// Scan-8's batched form.
#include "compiler/ops/all_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

// Reached only when the control-flow pass did not rewrite the node.
Status NotInlined(const ir::Node& node) {
  return NodeUnsupported(node, "control flow that cannot be made static (inlined or unrolled) is not supported");
}

Status RequireSubgraphs(const ir::Node& node, const std::vector<std::string>& attrs) {
  for (const std::string& a : attrs) {
    if (!node.subgraph(a)) return NodeError(node, "missing the graph attribute '" + a + "'");
  }
  return Status::Ok();
}

OpDef ControlFlowOp(const std::string& name, ControlFlow kind, std::vector<int> versions,
                    std::vector<std::string> graphs) {
  OpDef def;
  def.name = name;
  def.control_flow = kind;
  def.versions = std::move(versions);
  def.fusion = FusionClass::kNone;
  def.removed_by = "shape-inference (control flow)";
  def.normalize = [graphs, kind](ir::Node& node, int version) -> Status {
    KEEL_RETURN_IF_ERROR(RequireSubgraphs(node, graphs));
    // Scan-8: a batch axis 0 on every input and output, the sequence axis 1, and
    // an optional leading sequence_lens input.
    if (kind == ControlFlow::kScan && version == 8) node.attrs().Set("batched", int64_t{1});
    return Status::Ok();
  };
  def.canonicalize = [](ir::Node& node) -> Status { return NotInlined(node); };
  def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> { return NotInlined(node); };
  return def;
}

}  // namespace

void RegisterControlFlowOps(Registry& r) {
  r.Add(ControlFlowOp("If", ControlFlow::kIf, {1, 11, 13, 16, 19, 21, 23, 24, 25}, {"then_branch", "else_branch"}));
  r.Add(ControlFlowOp("Loop", ControlFlow::kLoop, {1, 11, 13, 16, 19, 21, 23, 24, 25}, {"body"}));
  r.Add(ControlFlowOp("Scan", ControlFlow::kScan, {8, 9, 11, 16, 19, 21, 23, 24, 25}, {"body"}));
}

}  // namespace keel::ops
