// compiler/ops/movement_split.cc — injective ops that cut or rearrange an
// input along axes: Split (several outputs), DepthToSpace, SpaceToDepth and
// Compress (constant condition only).
//
// Split canonical form: attribute `split` (one size per chunk, summing to the
// axis) and a non-negative `axis`. When the model gives neither `split` nor
// `num_outputs`, the number of chunks is the number of outputs the node
// declares, recorded at import before unused trailing outputs are dropped.
#include <algorithm>
#include <cstring>

#include "compiler/ops/channels_last.h"
#include "compiler/ops/movement_util.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::TensorFn;

// ---- Split ---------------------------------------------------------------------------------

Status CanonicalizeSplit(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 2));
  const ir::TensorType& x = InputType(node, 0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", 0, rank));
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "split"));
  if (HasInput(node, 1)) return NeedsConstant(node, 1, "the split sizes decide the output shapes");
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  const int64_t dim = x.shape[static_cast<size_t>(axis)];
  if (!node.attrs().Has("split")) {
    KEEL_ASSIGN_OR_RETURN(int64_t declared, node.attrs().GetInt("keel.num_outputs", 0));
    KEEL_ASSIGN_OR_RETURN(int64_t n, node.attrs().GetInt("num_outputs", declared));
    if (n < 1) return NodeError(node, "num_outputs " + std::to_string(n) + " is not positive");
    // Equal chunks of ceil(dim / n); the last one is smaller when dim does not divide.
    const int64_t chunk = (dim + n - 1) / n;
    std::vector<int64_t> split(static_cast<size_t>(n), chunk);
    split.back() = dim - chunk * (n - 1);
    if (split.back() < 0) {
      return NodeError(node, "axis " + std::to_string(axis) + " of size " + std::to_string(dim) + " cannot be split into " +
                                 std::to_string(n) + " chunks");
    }
    node.attrs().Set("split", split);
  }
  node.attrs().Erase("num_outputs");
  node.attrs().Erase("keel.num_outputs");
  KEEL_ASSIGN_OR_RETURN(auto split, node.attrs().GetInts("split", {}));
  int64_t sum = 0;
  for (int64_t s : split) {
    if (s < 0 || s > dim) return NodeError(node, "split " + ShapeString(split) + " has a size outside [0, " + std::to_string(dim) + "]");
    sum += s;
  }
  if (sum != dim) {
    return NodeError(node, "split " + ShapeString(split) + " does not sum to axis " + std::to_string(axis) + "'s size " +
                               std::to_string(dim));
  }
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferSplit(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  KEEL_ASSIGN_OR_RETURN(auto split, node.attrs().GetInts("split", {}));
  if (node.outputs().size() > split.size()) {
    return NodeError(node, "has " + std::to_string(node.outputs().size()) + " outputs for " + std::to_string(split.size()) +
                               " chunks");
  }
  std::vector<ir::TensorType> out;
  for (size_t i = 0; i < node.outputs().size(); ++i) {
    ir::TensorType t = x;
    t.shape[static_cast<size_t>(axis)] = split[i];
    out.push_back(t);
  }
  return out;
}

Status DefineSplit(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  KEEL_ASSIGN_OR_RETURN(auto split, node.attrs().GetInts("split", {}));
  int64_t offset = 0;
  for (size_t o = 0; o < node.outputs().size(); ++o) {
    TensorFn fn;
    fn.type = node.output(o)->type();
    fn.at = [in, axis, offset](const std::vector<Expr>& idx) {
      std::vector<Expr> r = idx;
      r[static_cast<size_t>(axis)] = idx[static_cast<size_t>(axis)] + offset;
      return in->at(r);
    };
    ctx.Define(node.output(o), std::move(fn));
    offset += split[o];
  }
  return Status::Ok();
}

// ---- DepthToSpace / SpaceToDepth ----------------------------------------------------------------

Status CanonicalizeBlocks(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  if (x.shape.size() != 4) return NodeUnsupported(node, "input " + x.ToString() + " is not 4-D (N, C, H, W)");
  KEEL_ASSIGN_OR_RETURN(int64_t b, node.attrs().GetInt("blocksize", 0));
  if (b < 1) return NodeError(node, "blocksize " + std::to_string(b) + " must be positive");
  KEEL_ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode", "DCR"));
  if (mode != "DCR" && mode != "CRD") return NodeError(node, "mode '" + mode + "' is neither DCR nor CRD");
  node.attrs().Set("mode", mode);
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferDepthToSpace(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(int64_t b, node.attrs().GetInt("blocksize", 1));
  if (x.shape[1] % (b * b) != 0) {
    return NodeError(node, "channels " + std::to_string(x.shape[1]) + " are not a multiple of blocksize^2");
  }
  std::vector<int64_t> out = {x.shape[0], x.shape[1] / (b * b), x.shape[2] * b, x.shape[3] * b};
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  return One({x.dtype, out});
}

Status DefineDepthToSpace(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(int64_t b, node.attrs().GetInt("blocksize", 1));
  KEEL_ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode", "DCR"));
  TensorFn fn;
  fn.type = node.output(0)->type();
  // Channels-last (channels_last.h): input and output NHWC, the same shuffle.
  const bool cl = IsChannelsLast(node);
  const int64_t C = fn.type.shape[cl ? 3 : 1];
  const bool dcr = mode == "DCR";
  fn.at = [in, b, C, dcr, cl](const std::vector<Expr>& idx) {
    const Expr &c = idx[cl ? 3 : 1], &h = idx[cl ? 1 : 2], &w = idx[cl ? 2 : 3];
    Expr bh = h % b, bw = w % b;
    // DCR: channel = (bh*b + bw)*C + c; CRD: channel = c*b*b + bh*b + bw.
    Expr ch = dcr ? (bh * b + bw) * C + c : c * (b * b) + bh * b + bw;
    return cl ? in->at({idx[0], h / b, w / b, ch}) : in->at({idx[0], ch, h / b, w / b});
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferSpaceToDepth(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(int64_t b, node.attrs().GetInt("blocksize", 1));
  if (x.shape[2] % b != 0 || x.shape[3] % b != 0) {
    return NodeError(node, "spatial dims of " + x.ToString() + " are not multiples of blocksize " + std::to_string(b));
  }
  std::vector<int64_t> out = {x.shape[0], x.shape[1] * b * b, x.shape[2] / b, x.shape[3] / b};
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  return One({x.dtype, out});
}

Status DefineSpaceToDepth(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(int64_t b, node.attrs().GetInt("blocksize", 1));
  KEEL_ASSIGN_OR_RETURN(std::string mode, node.attrs().GetString("mode", "DCR"));
  TensorFn fn;
  fn.type = node.output(0)->type();
  const int64_t C = std::max<int64_t>(in->type.shape[1], 1);  // 0 channels: empty output, nothing read
  const bool dcr = mode == "DCR";
  fn.at = [in, b, C, dcr](const std::vector<Expr>& idx) {
    const Expr& oc = idx[1];
    // DCR: oc = (bh*b + bw)*C + c; CRD: oc = c*b*b + bh*b + bw.
    Expr c = dcr ? oc % C : oc / (b * b);
    Expr blk = dcr ? oc / C : oc % (b * b);
    return in->at({idx[0], c, idx[2] * b + blk / b, idx[3] * b + blk % b});
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

// ---- Compress ----------------------------------------------------------------------------------
// Canonical: attribute keel.selected (the kept positions along the axis, or of
// the flattened input when keel.flatten=1) and a non-negative axis.

Status CanonicalizeCompress(ir::Node& node) {
  if (node.attrs().Has("keel.selected")) return Status::Ok();
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
  const ir::TensorType& x = InputType(node, 0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const bool flatten = !node.attrs().Has("axis");
  if (!flatten) KEEL_RETURN_IF_ERROR(CanonicalizeAxisAttr(node, "axis", 0, rank));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  const int64_t len = flatten ? x.NumElements() : x.shape[static_cast<size_t>(axis)];
  const ir::TensorData* cond = ConstantInput(node, 1);
  if (!cond) return NeedsConstant(node, 1, "the condition decides the output shape");
  if (cond->type.shape.size() != 1) return NodeError(node, "condition " + cond->type.ToString() + " is not 1-D");
  const int64_t n = cond->type.NumElements();
  if (n > len) return NodeError(node, "condition has " + std::to_string(n) + " entries for " + std::to_string(len) + " slices");
  std::vector<int64_t> selected;
  for (int64_t i = 0; i < n; ++i) {
    if (ElementAsInt(*cond, i) != 0) selected.push_back(i);
  }
  node.attrs().Set("keel.selected", selected);
  node.attrs().Set("keel.flatten", int64_t{flatten ? 1 : 0});
  node.SetInputs({node.input(0)});
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferCompress(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_ASSIGN_OR_RETURN(auto selected, node.attrs().GetInts("keel.selected", {}));
  KEEL_ASSIGN_OR_RETURN(int64_t flatten, node.attrs().GetInt("keel.flatten", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  const int64_t n = static_cast<int64_t>(selected.size());
  if (flatten) return One({x.dtype, {n}});
  if (axis < 0 || axis >= static_cast<int64_t>(x.shape.size())) return NodeError(node, "axis is out of range");
  std::vector<int64_t> out = x.shape;
  out[static_cast<size_t>(axis)] = n;
  return One({x.dtype, out});
}

Status DefineCompress(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(auto selected, node.attrs().GetInts("keel.selected", {}));
  KEEL_ASSIGN_OR_RETURN(int64_t flatten, node.attrs().GetInt("keel.flatten", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t axis, node.attrs().GetInt("axis", 0));
  TensorFn fn;
  fn.type = node.output(0)->type();
  if (selected.empty()) {
    const ir::DType dt = fn.type.dtype;
    fn.at = [dt](const std::vector<Expr>&) { return TypedConst(0, dt); };
    ctx.Define(node.output(0), std::move(fn));
    return Status::Ok();
  }
  // The kept positions as a baked i64 table read with the output index.
  std::vector<uint8_t> bytes(selected.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), selected.data(), bytes.size());
  codegen::KernelFunc* k = &ctx.kernel();
  const int64_t n = static_cast<int64_t>(selected.size());
  const int table = k->AddConstant("compress_sel", ir::DType::kI64, {n}, std::move(bytes));
  const std::vector<int64_t> ishape = in->type.shape;
  const int64_t len = flatten ? codegen::NumElements(ishape) : ishape[static_cast<size_t>(axis)];
  fn.at = [in, k, table, n, len, flatten, axis, ishape](const std::vector<Expr>& idx) {
    const size_t ax = flatten ? 0 : static_cast<size_t>(axis);
    Expr pos = codegen::Clamp(k->Load(table, {codegen::Clamp(idx[ax], 0, n - 1)}), 0, len - 1);
    if (flatten) return in->at(codegen::Delinearize(ishape, pos));
    std::vector<Expr> r = idx;
    r[ax] = pos;
    return in->at(r);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

}  // namespace

void RegisterMovementSplitOps(Registry& r) {
  {
    OpDef def = InjectiveOp("Split", {1, 2, 11, 13, 18});
    def.normalize = [](ir::Node& node, int version) -> Status {
      // Opset 1 could pass the sizes as input 1; opsets 2-12 only as the attribute.
      if (version >= 2 && version < 13 && node.inputs().size() > 1) {
        return NodeError(node, "split sizes are an attribute before opset 13");
      }
      if (version < 18) node.attrs().Erase("num_outputs");
      if (!node.attrs().Has("split") && !node.attrs().Has("num_outputs") && !HasInput(node, 1)) {
        node.attrs().Set("keel.num_outputs", static_cast<int64_t>(node.outputs().size()));
      }
      return Status::Ok();
    };
    def.canonicalize = CanonicalizeSplit;
    def.infer = InferSplit;
    def.injective = DefineSplit;
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("DepthToSpace", {1, 11, 13, 28});
    def.normalize = [](ir::Node& node, int version) -> Status {
      if (version < 11) node.attrs().Erase("mode");  // DCR only before opset 11
      return Status::Ok();
    };
    def.canonicalize = CanonicalizeBlocks;
    def.infer = InferDepthToSpace;
    def.injective = DefineDepthToSpace;
    // X NHWC (channels_last.h): a pixel shuffle (passes/subpixel_conv_transpose.h)
    // between channels-last convolutions needs no transposes around it.
    def.channels_last_operands = {0};
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("SpaceToDepth", {1, 13, 28});
    def.normalize = [](ir::Node& node, int version) -> Status {
      if (version < 28) node.attrs().Erase("mode");  // DCR only before opset 28
      return Status::Ok();
    };
    def.canonicalize = CanonicalizeBlocks;
    def.infer = InferSpaceToDepth;
    def.injective = DefineSpaceToDepth;
    r.Add(std::move(def));
  }
  {
    OpDef def = InjectiveOp("Compress", {9, 11, 28});
    def.canonicalize = CanonicalizeCompress;
    def.infer = InferCompress;
    def.injective = DefineCompress;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
