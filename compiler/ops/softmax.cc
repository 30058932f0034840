// compiler/ops/softmax.cc — Softmax, LogSoftmax and Hardmax.
//
// Opset 13 normalizes over one axis (default -1). Before 13 the input is
// coerced to 2-D at `axis` (default 1): the op normalizes over every dimension
// from `axis` on. The importer marks those nodes keel.legacy_flatten=1;
// canonical form: `axis` non-negative, plus keel.flatten=1 when the row spans
// several trailing dimensions (over the last dimension alone both forms agree,
// and the attribute is dropped).
// Lowering: compiler/codegen/lower_softmax.cc.
#include <cmath>
#include <limits>

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/row_reference.h"

namespace keel::ops {
namespace {

Status CanonicalizeSoftmax(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
  if (rank == 0) return NodeError(node, "input must have rank >= 1");
  KEEL_ASSIGN_OR_RETURN(int64_t legacy, node.attrs().GetInt("keel.legacy_flatten", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t flatten, node.attrs().GetInt("keel.flatten", 0));
  KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", legacy ? 1 : -1, rank));
  node.attrs().Erase("keel.legacy_flatten");
  const bool several = (legacy || flatten) && *node.attrs().GetInt("axis", 0) < rank - 1;
  if (several) {
    node.attrs().Set("keel.flatten", int64_t{1});
  } else {
    node.attrs().Erase("keel.flatten");
  }
  return Status::Ok();
}

Result<std::vector<ir::TensorDataPtr>> EvaluateSoftmax(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                       const std::vector<ir::TensorType>& out_types) {
  const ir::TensorData& x = *in[0];
  const int64_t rank = static_cast<int64_t>(x.type.shape.size());
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", rank - 1));
  KEEL_ASSIGN_OR_RETURN(int64_t flatten, node.attrs().GetInt("keel.flatten", 0));
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < (flatten ? rank : axis + 1); ++d) axes.push_back(d);
  const std::string& op = node.op_type();
  auto out = NewTensor(out_types[0]);
  for (const std::vector<int64_t>& row : RowOffsets(x.type.shape, axes)) {
    double mx = -std::numeric_limits<double>::infinity();
    size_t first_max = 0;
    for (size_t j = 0; j < row.size(); ++j) {
      const double v = ElementAsDouble(x, row[j]);
      if (v > mx) {
        mx = v;
        first_max = j;
      }
    }
    double sum = 0;
    for (int64_t o : row) sum += std::exp(ElementAsDouble(x, o) - mx);
    for (size_t j = 0; j < row.size(); ++j) {
      const double v = ElementAsDouble(x, row[j]);
      double y = std::exp(v - mx) / sum;
      if (op == "LogSoftmax") y = v - mx - std::log(sum);
      if (op == "Hardmax") y = j == first_max ? 1.0 : 0.0;
      StoreDouble(*out, row[j], y);
    }
  }
  return std::vector<ir::TensorDataPtr>{out};
}

}  // namespace

void RegisterSoftmaxOps(Registry& r) {
  using codegen::SoftmaxKind;
  const std::pair<const char*, SoftmaxKind> kinds[] = {
      {"Softmax", SoftmaxKind::kSoftmax}, {"LogSoftmax", SoftmaxKind::kLogSoftmax}, {"Hardmax", SoftmaxKind::kHardmax}};
  for (const auto& [name, kind] : kinds) {
    OpDef def;
    def.name = name;
    def.versions = {1, 11, 13};
    def.fusion = FusionClass::kAnchor;
    if (kind == SoftmaxKind::kHardmax) {
      def.half = HalfPolicy::kHalf;  // compares only
    } else {
      KeepF32(def, "exponentials normalized over a row");
    }
    if (kind == SoftmaxKind::kSoftmax) def.pattern_role = PatternRole::kSoftmax;
    def.normalize = [](ir::Node& node, int version) -> Status {
      if (version < 13) node.attrs().Set("keel.legacy_flatten", int64_t{1});
      return Status::Ok();
    };
    def.canonicalize = CanonicalizeSoftmax;
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
      if (!IsFloatType(InputType(node, 0).dtype))
        return NodeUnsupported(node, node.op_type() + " on " + ir::DTypeName(InputType(node, 0).dtype));
      return One(InputType(node, 0));
    };
    def.evaluate = EvaluateSoftmax;
    def.kernel = [kind = kind](codegen::LowerContext& ctx, const ir::Node& node,
                               const std::vector<codegen::StoreFn>& stores) {
      return codegen::LowerSoftmax(ctx, node, kind, stores[0]);
    };
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
