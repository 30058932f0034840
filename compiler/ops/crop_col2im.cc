// compiler/ops/crop_col2im.cc — two opset-18 image reshapers:
//
//   CenterCropPad  composite (expansion.h): each listed axis is center-cropped
//                  (Slice) or zero-padded (Pad) to the constant target size; an
//                  odd difference puts the extra element at the end (the
//                  reference's floor((dim - size) / 2) start).
//   Col2Im         injective: the inverse of im2col. input [N, C*K, L] holds,
//                  for each of the K = prod(block_shape) kernel offsets, a
//                  column per sliding block (L = prod of the block counts);
//                  output [N, C, image_shape...] sums every column element onto
//                  the image position it covers. Written output-centric: image
//                  position p receives, for each kernel offset j, the block b
//                  with b * stride - pad_begin + j * dilation == p when that b
//                  exists (a fixed K taps per output element, so it fuses like
//                  any index function).
#include "compiler/codegen/lower_context.h"
#include "compiler/ops/expansion.h"
#include "compiler/ops/lowering.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/registry.h"

namespace keel::ops {
namespace {

using codegen::Expr;
using codegen::TensorFn;
using ir::Value;

// ---- CenterCropPad -----------------------------------------------------------------------

Status CanonicalizeCenterCropPad(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 2));
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "shape"));
  if (HasInput(node, 1)) return NeedsConstant(node, 1, "the target shape decides the output shape");
  if (!node.attrs().Has("shape")) return NodeError(node, "the shape input is required");
  const int64_t rank = static_cast<int64_t>(InputType(node, 0).shape.size());
  if (!node.attrs().Has("axes")) {
    std::vector<int64_t> all;
    for (int64_t d = 0; d < rank; ++d) all.push_back(d);
    node.attrs().Set("axes", all);
  }
  KEEL_RETURN_IF_ERROR(CanonicalizeAxesAttr(node, "axes", rank, false));
  KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
  KEEL_ASSIGN_OR_RETURN(auto shape, node.attrs().GetInts("shape", {}));
  if (shape.size() != axes.size()) {
    return NodeError(node, "shape " + ShapeString(shape) + " does not match the " + std::to_string(axes.size()) + " axes");
  }
  for (int64_t s : shape) {
    if (s < 0) return NodeError(node, "negative target size in shape " + ShapeString(shape));
  }
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferCenterCropPad(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
  KEEL_ASSIGN_OR_RETURN(auto shape, node.attrs().GetInts("shape", {}));
  ir::TensorType t = InputType(node, 0);
  for (size_t i = 0; i < axes.size() && i < shape.size(); ++i) t.shape[static_cast<size_t>(axes[i])] = shape[i];
  KEEL_RETURN_IF_ERROR(CheckedElements(node, t.shape).status());
  return One(t);
}

Result<std::vector<Value*>> ExpandCenterCropPad(Expander& b, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(auto axes, node.attrs().GetInts("axes", {}));
  KEEL_ASSIGN_OR_RETURN(auto shape, node.attrs().GetInts("shape", {}));
  Value* x = node.input(0);
  const std::vector<int64_t> in = x->type().shape;
  const size_t rank = in.size();
  std::vector<int64_t> starts, ends, crop_axes, pads(2 * rank, 0);
  bool pad = false;
  for (size_t i = 0; i < axes.size(); ++i) {
    const size_t a = static_cast<size_t>(axes[i]);
    const int64_t dim = in[a], size = shape[i];
    if (size < dim) {
      starts.push_back((dim - size) / 2);
      ends.push_back((dim - size) / 2 + size);
      crop_axes.push_back(axes[i]);
    } else if (size > dim) {
      pads[a] = (size - dim) / 2;
      pads[a + rank] = size - dim - pads[a];
      pad = true;
    }
  }
  Value* y = x;
  if (!crop_axes.empty()) {
    std::vector<int64_t> steps(crop_axes.size(), 1);
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Slice", {y, b.Ints(starts), b.Ints(ends), b.Ints(crop_axes), b.Ints(steps)}));
  }
  if (pad) {
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Pad", {y, b.Ints(pads)}));
  }
  if (y == x) {
    KEEL_ASSIGN_OR_RETURN(y, b.Op("Identity", {x}));
  }
  return std::vector<Value*>{y};
}

// ---- Col2Im ------------------------------------------------------------------------------

// Kernel offsets summed per output element at most (each is one read in the
// fused expression).
constexpr int64_t kMaxCol2ImTaps = 1024;

struct Col2ImParams {
  std::vector<int64_t> image, block, dilations, pads, strides, blocks;  // blocks: sliding blocks per axis
  int64_t taps = 1;                                                      // prod(block)
};

Result<Col2ImParams> ReadCol2Im(const ir::Node& node) {
  Col2ImParams p;
  KEEL_ASSIGN_OR_RETURN(p.image, node.attrs().GetInts("image_shape", {}));
  KEEL_ASSIGN_OR_RETURN(p.block, node.attrs().GetInts("block_shape", {}));
  const size_t r = p.image.size();
  KEEL_ASSIGN_OR_RETURN(p.dilations, node.attrs().GetInts("dilations", std::vector<int64_t>(r, 1)));
  KEEL_ASSIGN_OR_RETURN(p.pads, node.attrs().GetInts("pads", std::vector<int64_t>(2 * r, 0)));
  KEEL_ASSIGN_OR_RETURN(p.strides, node.attrs().GetInts("strides", std::vector<int64_t>(r, 1)));
  if (r == 0 || p.block.size() != r || p.dilations.size() != r || p.strides.size() != r || p.pads.size() != 2 * r) {
    return NodeError(node, "image_shape " + ShapeString(p.image) + ", block_shape " + ShapeString(p.block) +
                               ", dilations, strides and pads must agree in length");
  }
  for (size_t i = 0; i < r; ++i) {
    if (p.image[i] <= 0 || p.block[i] <= 0 || p.dilations[i] <= 0 || p.strides[i] <= 0 || p.pads[i] < 0 ||
        p.pads[i + r] < 0) {
      return NodeError(node, "image_shape, block_shape, dilations and strides must be positive and pads non-negative");
    }
    const int64_t span = p.dilations[i] * (p.block[i] - 1) + 1;
    const int64_t padded = p.image[i] + p.pads[i] + p.pads[i + r];
    if (padded < span) return NodeError(node, "the block does not fit the padded image on axis " + std::to_string(i));
    p.blocks.push_back((padded - span) / p.strides[i] + 1);
    if (p.block[i] > kMaxElements / p.taps) return NodeError(node, "block_shape " + ShapeString(p.block) + " is too large");
    p.taps *= p.block[i];
  }
  return p;
}

Status CanonicalizeCol2Im(ir::Node& node) {
  // image_shape and block_shape become attributes (the node keeps one input).
  if (node.inputs().size() != 1) KEEL_RETURN_IF_ERROR(CheckArity(node, 3, 3));
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 2, "block_shape"));
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 1, "image_shape"));
  if (HasInput(node, 1)) return NeedsConstant(node, 1, "the image shape decides the output shape");
  if (HasInput(node, 2)) return NeedsConstant(node, 2, "the block shape decides the output shape");
  return ReadCol2Im(node).status();
}

Result<std::vector<ir::TensorType>> InferCol2Im(const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(Col2ImParams p, ReadCol2Im(node));
  const ir::TensorType& x = InputType(node, 0);
  if (x.shape.size() != 3) return NodeError(node, "input must be [N, C*prod(block_shape), L], got " + x.ToString());
  if (x.dtype == ir::DType::kBool) return NodeUnsupported(node, "Col2Im on bool");
  if (x.shape[1] % p.taps != 0) {
    return NodeError(node, "input " + x.ToString() + " channels are not a multiple of prod(block_shape) = " +
                               std::to_string(p.taps));
  }
  int64_t l = 1;
  for (int64_t n : p.blocks) l *= n;
  if (x.shape[2] != l) {
    return NodeError(node, "input " + x.ToString() + " has " + std::to_string(x.shape[2]) + " columns, the image has " +
                               std::to_string(l) + " sliding blocks " + ShapeString(p.blocks));
  }
  if (p.taps > kMaxCol2ImTaps) {
    return NodeUnsupported(node, "block_shape " + ShapeString(p.block) + " has more than " +
                                     std::to_string(kMaxCol2ImTaps) + " kernel offsets");
  }
  std::vector<int64_t> out{x.shape[0], x.shape[1] / p.taps};
  out.insert(out.end(), p.image.begin(), p.image.end());
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  return One({x.dtype, out});
}

Status DefineCol2Im(codegen::LowerContext& ctx, const ir::Node& node) {
  KEEL_ASSIGN_OR_RETURN(const TensorFn* in, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(Col2ImParams p, ReadCol2Im(node));
  TensorFn fn;
  fn.type = node.output(0)->type();
  const ir::DType ct = ComputeType(fn.type.dtype);
  fn.at = [in, p, ct, out_t = fn.type.dtype](const std::vector<Expr>& idx) {
    const size_t r = p.image.size();
    Expr sum = codegen::Cast(Expr(0), ct);
    std::vector<int64_t> off(r, 0);  // kernel offset, row-major over block_shape
    for (int64_t j = 0; j < p.taps; ++j) {
      Expr valid, col = Expr(0);
      for (size_t d = 0; d < r; ++d) {
        // Block b covers image position idx[2 + d] with this offset iff
        // b * stride == idx + pad_begin - off * dilation, 0 <= b < blocks.
        const Expr num = idx[2 + d] + Expr(p.pads[d] - off[d] * p.dilations[d]);
        const Expr b = num / Expr(p.strides[d]);
        Expr ok = num >= Expr(0) && b < Expr(p.blocks[d]);
        if (p.strides[d] > 1) ok = ok && codegen::Binary(codegen::BinaryOp::kEq, num % Expr(p.strides[d]), Expr(0));
        valid = valid.is_null() ? ok : (valid && ok);
        col = col * Expr(p.blocks[d]) + codegen::Clamp(b, 0, p.blocks[d] - 1);
      }
      const Expr v = codegen::Cast(in->at({idx[0], idx[1] * Expr(p.taps) + Expr(j), col}), ct);
      sum = sum + codegen::Select(valid, v, codegen::Cast(Expr(0), ct));
      for (size_t d = r; d-- > 0;) {  // next kernel offset
        if (++off[d] < p.block[d]) break;
        off[d] = 0;
      }
    }
    return codegen::Cast(sum, out_t);
  };
  ctx.Define(node.output(0), std::move(fn));
  return Status::Ok();
}

}  // namespace

void RegisterCropCol2ImOps(Registry& r) {
  {
    OpDef def;
    def.name = "CenterCropPad";
    def.versions = {18};
    def.removed_by = "shape-inference (expansion)";
    def.canonicalize = CanonicalizeCenterCropPad;
    def.infer = InferCenterCropPad;
    def.expand = ExpandCenterCropPad;
    r.Add(std::move(def));
  }
  {
    OpDef def;
    def.name = "Col2Im";
    def.versions = {18};
    def.fusion = FusionClass::kInjective;
    def.canonicalize = CanonicalizeCol2Im;
    def.infer = InferCol2Im;
    def.injective = DefineCol2Im;
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
