// compiler/ops/pool.cc — sliding-window pools over any number of spatial dims:
// MaxPool (optional Indices output, storage_order), AveragePool
// (count_include_pad), LpPool (p), all with pads or auto_pad, strides,
// dilations and ceil_mode; and the global pools GlobalMaxPool,
// GlobalAveragePool, GlobalLpPool; and MaxUnpool.
//
// The optimized lowering is compiler/codegen/lower_pool.cc (rank-generic); on
// CUDA, cuDNN pooling is preferred where it fits (2-D MaxPool/AveragePool
// without Indices, see cuda_backend.cc). The reference evaluator is the plain
// window loop: padding never wins a max and adds |0|^p = 0 to an Lp sum, and
// only positions inside the padded input count for count_include_pad (a
// ceil_mode overhang never does).
#include <algorithm>
#include <cmath>
#include <limits>

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/window.h"

namespace keel::ops {
namespace {

bool IsMax(const ir::Node& node) { return node.op_type() == "MaxPool" || node.op_type() == "GlobalMaxPool"; }
bool IsLp(const ir::Node& node) { return node.op_type() == "LpPool" || node.op_type() == "GlobalLpPool"; }

// Max pools take integers too (ONNX 12+: int8/uint8); averages and Lp norms are float only.
Status CheckPoolDType(const ir::Node& node, ir::DType t) {
  if (IsFloatType(t) || (IsMax(node) && IsIntegerType(t))) return Status::Ok();
  return NodeUnsupported(node, std::string("pooling on ") + ir::DTypeName(t));
}

Status CanonicalizeP(ir::Node& node) {
  // LpPool-1/GlobalLpPool-1 have a float p, later versions an int: one float form.
  KEEL_ASSIGN_OR_RETURN(double p, node.attrs().GetFloat("p", 2.0));
  if (!(p > 0) || !std::isfinite(p)) return NodeError(node, "p=" + std::to_string(p) + " must be positive");
  node.attrs().Set("p", p);
  return Status::Ok();
}

Status CanonicalizePool(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  if (x.shape.size() < 3) return NodeError(node, "input must have rank >= 3 ([N, C, spatial...]), got " + x.ToString());
  if (!node.attrs().Has("kernel_shape")) return NodeError(node, "kernel_shape is required");
  KEEL_ASSIGN_OR_RETURN(auto kernel, node.attrs().GetInts("kernel_shape", {}));
  KEEL_RETURN_IF_ERROR(CanonicalizeWindow(node, {x.shape.begin() + 2, x.shape.end()}, kernel, true));
  KEEL_ASSIGN_OR_RETURN(int64_t ceil_mode, node.attrs().GetInt("ceil_mode", 0));
  node.attrs().Set("ceil_mode", ceil_mode);
  if (IsMax(node)) {
    KEEL_ASSIGN_OR_RETURN(int64_t so, node.attrs().GetInt("storage_order", 0));
    if (so != 0 && so != 1) return NodeError(node, "storage_order=" + std::to_string(so) + " (expected 0 or 1)");
    node.attrs().Set("storage_order", so);
  } else if (IsLp(node)) {
    KEEL_RETURN_IF_ERROR(CanonicalizeP(node));
  } else {
    KEEL_ASSIGN_OR_RETURN(int64_t cip, node.attrs().GetInt("count_include_pad", 0));
    node.attrs().Set("count_include_pad", cip);
  }
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferPool(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  KEEL_RETURN_IF_ERROR(CheckOutputs(node, IsMax(node) ? 2 : 1, "the argmax indices"));
  const ir::TensorType& x = InputType(node, 0);
  KEEL_RETURN_IF_ERROR(CheckPoolDType(node, x.dtype));
  KEEL_ASSIGN_OR_RETURN(int64_t ceil_mode, node.attrs().GetInt("ceil_mode", 0));
  KEEL_ASSIGN_OR_RETURN(auto sp, WindowOutput(node, {x.shape.begin() + 2, x.shape.end()}, ceil_mode != 0));
  std::vector<int64_t> out{x.shape[0], x.shape[1]};
  out.insert(out.end(), sp.begin(), sp.end());
  KEEL_RETURN_IF_ERROR(CheckedElements(node, out).status());
  std::vector<ir::TensorType> types{{x.dtype, out}};
  if (node.outputs().size() > 1 && node.output(1)) types.push_back({ir::DType::kI64, out});
  return types;
}

// The pooled value of one window; `Indices` (MaxPool) is the flat index into X
// of the first maximum (spatial part column-major with storage_order=1).
Result<std::vector<ir::TensorDataPtr>> EvaluatePool(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                    const std::vector<ir::TensorType>& out_types) {
  const bool is_max = IsMax(node), is_lp = IsLp(node);
  const ir::TensorType& yt = out_types[0];
  const std::vector<double> x = TensorToDoubles(*in[0]);
  KEEL_ASSIGN_OR_RETURN(WindowND w, MakeWindow(node, in[0]->type.shape, yt.shape));
  KEEL_ASSIGN_OR_RETURN(int64_t cip, node.attrs().GetInt("count_include_pad", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t so, node.attrs().GetInt("storage_order", 0));
  KEEL_ASSIGN_OR_RETURN(double p, node.attrs().GetFloat("p", 2.0));
  const size_t sp = w.rank();
  const int64_t ivol = NumElementsOf(w.in), ovol = NumElementsOf(w.out), kvol = NumElementsOf(w.k);
  std::vector<double> y(static_cast<size_t>(yt.NumElements()), 0.0);
  std::vector<double> idx_out(y.size(), -1.0);
  size_t yi = 0;
  for (int64_t nc = 0; nc < w.n * w.c; ++nc) {
    const double* xin = &x[static_cast<size_t>(nc * ivol)];
    std::vector<int64_t> o(sp, 0);
    for (int64_t oi = 0; oi < ovol; ++oi, NextIndex(o, w.out)) {
      double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t count = 0, best = -1;
      std::vector<int64_t> kp(sp, 0);
      for (int64_t ki = 0; ki < kvol; ++ki, NextIndex(kp, w.k)) {
        bool inside = true, in_padded = true;
        int64_t flat = 0, flat_cm = 0, mul = 1;
        for (size_t d = 0; d < sp; ++d) {
          const int64_t id = o[d] * w.s[d] - w.pb[d] + kp[d] * w.d[d];
          inside = inside && id >= 0 && id < w.in[d];
          in_padded = in_padded && id < w.in[d] + w.pe[d];
          flat = flat * w.in[d] + id;
          flat_cm += id * mul;
          mul *= w.in[d];
        }
        if (inside) {
          const double v = xin[flat];
          if (is_max) {
            if (best < 0 || v > acc) { acc = v; best = nc * ivol + (so ? flat_cm : flat); }
          } else {
            acc += is_lp ? std::pow(std::fabs(v), p) : v;
          }
          ++count;
        } else if (cip && in_padded) {
          ++count;
        }
      }
      if (is_max) {
        idx_out[yi] = static_cast<double>(best);
        y[yi++] = best < 0 ? 0.0 : acc;
      } else if (is_lp) {
        y[yi++] = std::pow(acc, 1.0 / p);
      } else {
        y[yi++] = count ? acc / static_cast<double>(count) : 0.0;
      }
    }
  }
  std::vector<ir::TensorDataPtr> outs;
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(yt, y));
  outs.push_back(out);
  if (out_types.size() > 1) {
    KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr ind, TensorFromDoubles(out_types[1], idx_out));
    outs.push_back(ind);
  }
  return outs;
}

OpDef Pool(const std::string& name, std::vector<int> versions, ops::LibraryCall library, codegen::PoolKind kind) {
  OpDef def;
  def.name = name;
  def.versions = std::move(versions);
  def.fusion = FusionClass::kAnchor;
  def.half = HalfPolicy::kHalf;  // window sums accumulate in f32 inside the kernel
  def.library = library;
  def.canonicalize = CanonicalizePool;
  def.infer = InferPool;
  def.evaluate = EvaluatePool;
  def.channels_last_operands = {0};  // X NHWC (channels_last.h)
  def.kernel = [kind](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
    return codegen::LowerPool(ctx, node, kind, stores);
  };
  return def;
}

// ---- global pools: one value per (image, channel) over all spatial positions ----

Result<std::vector<ir::TensorType>> InferGlobalPool(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  if (x.shape.size() < 3) return NodeError(node, "input must have rank >= 3, got " + x.ToString());
  KEEL_RETURN_IF_ERROR(CheckPoolDType(node, x.dtype));
  std::vector<int64_t> out(x.shape.size(), 1);
  out[0] = x.shape[0];
  out[1] = x.shape[1];
  return One({x.dtype, out});
}

Result<std::vector<ir::TensorDataPtr>> EvaluateGlobalPool(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                          const std::vector<ir::TensorType>& out_types) {
  const bool is_max = IsMax(node), is_lp = IsLp(node);
  KEEL_ASSIGN_OR_RETURN(double p, node.attrs().GetFloat("p", 2.0));
  const std::vector<double> x = TensorToDoubles(*in[0]);
  const int64_t nc = out_types[0].NumElements();
  const int64_t len = in[0]->type.NumElements() / std::max<int64_t>(nc, 1);
  std::vector<double> y(static_cast<size_t>(nc), 0.0);
  for (int64_t i = 0; i < nc; ++i) {
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t j = 0; j < len; ++j) {
      const double v = x[static_cast<size_t>(i * len + j)];
      acc = is_max ? std::max(acc, v) : acc + (is_lp ? std::pow(std::fabs(v), p) : v);
    }
    y[static_cast<size_t>(i)] = is_max ? (len ? acc : 0.0) : is_lp ? std::pow(acc, 1.0 / p) : (len ? acc / static_cast<double>(len) : 0.0);
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{out};
}

OpDef GlobalPool(const std::string& name, std::vector<int> versions, codegen::PoolKind kind) {
  OpDef def;
  def.name = name;
  def.versions = std::move(versions);
  def.fusion = FusionClass::kAnchor;
  def.half = HalfPolicy::kHalf;  // window sums accumulate in f32 inside the kernel
  def.canonicalize = [](ir::Node& node) -> Status {
    KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
    return IsLp(node) ? CanonicalizeP(node) : Status::Ok();
  };
  def.infer = InferGlobalPool;
  def.evaluate = EvaluateGlobalPool;
  def.channels_last_operands = {0};  // X NHWC (channels_last.h)
  def.global_pool = true;
  def.kernel = [kind](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
    return codegen::LowerGlobalPool(ctx, node, kind, stores[0]);
  };
  return def;
}

// ---- MaxUnpool: scatters X into zeros at MaxPool's Indices ----------------------
// As the ONNX reference does, the indices address the natural (un-padded,
// strided) output (in - 1) * stride - pads + kernel; an output_shape (constant)
// at least that large places it at the origin of a larger zero tensor.

Status CanonicalizeMaxUnpool(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(LiftIntsInput(node, 2, "output_shape"));
  if (HasInput(node, 2)) return NeedsConstant(node, 2, "output_shape");
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
  const ir::TensorType& x = InputType(node, 0);
  if (x.shape.size() < 3) return NodeError(node, "input must have rank >= 3 ([N, C, spatial...]), got " + x.ToString());
  if (!node.attrs().Has("kernel_shape")) return NodeError(node, "kernel_shape is required");
  KEEL_ASSIGN_OR_RETURN(auto kernel, node.attrs().GetInts("kernel_shape", {}));
  return CanonicalizeWindow(node, {x.shape.begin() + 2, x.shape.end()}, kernel, false);
}

// The natural (scatter) shape; `out` the output shape.
Status UnpoolShapes(const ir::Node& node, std::vector<int64_t>& natural, std::vector<int64_t>& out) {
  const ir::TensorType& x = InputType(node, 0);
  const size_t sp = x.shape.size() - 2;
  KEEL_ASSIGN_OR_RETURN(auto kernel, node.attrs().GetInts("kernel_shape", {}));
  KEEL_ASSIGN_OR_RETURN(auto strides, node.attrs().GetInts("strides", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto pads, node.attrs().GetInts("pads", std::vector<int64_t>(2 * sp, 0)));
  if (kernel.size() != sp || strides.size() != sp || pads.size() != 2 * sp) {
    return NodeError(node, "kernel_shape/strides/pads do not match " + std::to_string(sp) + " spatial dims");
  }
  natural = {x.shape[0], x.shape[1]};
  for (size_t i = 0; i < sp; ++i) {
    const int64_t n = (x.shape[2 + i] - 1) * strides[i] - pads[i] - pads[i + sp] + kernel[i];
    if (n <= 0) return NodeError(node, "output spatial dim " + std::to_string(i) + " would be " + std::to_string(n));
    natural.push_back(n);
  }
  KEEL_ASSIGN_OR_RETURN(out, node.attrs().GetInts("output_shape", natural));
  if (out.size() != natural.size()) return NodeError(node, "output_shape " + ShapeString(out) + " has the wrong rank");
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] < natural[i] || (i < 2 && out[i] != natural[i])) {
      return NodeUnsupported(node, "output_shape " + ShapeString(out) + " smaller than the unpooled shape " +
                                       ShapeString(natural));
    }
  }
  return CheckedElements(node, out).status();
}

Result<std::vector<ir::TensorType>> InferMaxUnpool(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 2, 2));
  const ir::TensorType& x = InputType(node, 0);
  const ir::TensorType& ind = InputType(node, 1);
  if (ind.dtype != ir::DType::kI64 || ind.shape != x.shape) {
    return NodeError(node, "indices " + ind.ToString() + " must be i64 of the input's shape " + x.ToString());
  }
  if (x.dtype == ir::DType::kBool) return NodeUnsupported(node, "MaxUnpool on bool");
  std::vector<int64_t> natural, out;
  KEEL_RETURN_IF_ERROR(UnpoolShapes(node, natural, out));
  return One({x.dtype, out});
}

Result<std::vector<ir::TensorDataPtr>> EvaluateMaxUnpool(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                         const std::vector<ir::TensorType>& out_types) {
  std::vector<int64_t> natural, out;
  KEEL_RETURN_IF_ERROR(UnpoolShapes(node, natural, out));
  const std::vector<double> x = TensorToDoubles(*in[0]);
  KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> ind, ReadInts(*in[1]));
  const int64_t total = NumElementsOf(natural);
  std::vector<double> y(static_cast<size_t>(out_types[0].NumElements()), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    if (ind[i] < 0 || ind[i] >= total) return NodeError(node, "index " + std::to_string(ind[i]) + " out of range");
    // Re-address the natural shape's flat index in the (maybe larger) output.
    int64_t rem = ind[i], flat = 0, mul = 1;
    for (size_t d = natural.size(); d-- > 0;) {
      flat += (rem % natural[d]) * mul;
      rem /= natural[d];
      mul *= out[d];
    }
    y[static_cast<size_t>(flat)] = x[i];
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr t, TensorFromDoubles(out_types[0], y));
  return std::vector<ir::TensorDataPtr>{t};
}

}  // namespace

void RegisterPoolOps(Registry& r) {
  using codegen::PoolKind;
  r.Add(Pool("MaxPool", {1, 8, 10, 11, 12, 22}, LibraryCall::kMaxPool, PoolKind::kMax));
  {
    OpDef avg = Pool("AveragePool", {1, 7, 10, 11, 19, 22}, LibraryCall::kAveragePool, PoolKind::kAvg);
    // Padding counted in the divisor (and no ceil_mode overhang, which never
    // counts); a pool without pads of its own may start counting them.
    avg.pads_with_zeros = [](ir::Node& node) {
      auto cip = node.attrs().GetInt("count_include_pad", 0);
      auto ceil = node.attrs().GetInt("ceil_mode", 0);
      auto pads = node.attrs().GetInts("pads", {});
      if (!cip.ok() || !ceil.ok() || *ceil != 0 || !pads.ok()) return false;
      const bool unpadded = std::all_of(pads->begin(), pads->end(), [](int64_t p) { return p == 0; });
      if (*cip != 1 && !unpadded) return false;
      node.attrs().Set("count_include_pad", int64_t{1});
      return true;
    };
    r.Add(std::move(avg));
  }
  r.Add(Pool("LpPool", {1, 2, 11, 18, 22}, LibraryCall::kNone, PoolKind::kLp));
  r.Add(GlobalPool("GlobalAveragePool", {1, 22}, PoolKind::kAvg));
  r.Add(GlobalPool("GlobalMaxPool", {1, 22}, PoolKind::kMax));
  r.Add(GlobalPool("GlobalLpPool", {1, 2, 22}, PoolKind::kLp));
  {
    OpDef def;
    def.name = "MaxUnpool";
    def.versions = {9, 11, 22};
    def.fusion = FusionClass::kAnchor;
    def.half = HalfPolicy::kHalf;  // data movement
    def.canonicalize = CanonicalizeMaxUnpool;
    def.infer = InferMaxUnpool;
    def.evaluate = EvaluateMaxUnpool;
    def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores)
        -> Result<codegen::Stmt> {
      std::vector<int64_t> natural, out;
      KEEL_RETURN_IF_ERROR(UnpoolShapes(node, natural, out));
      return codegen::LowerMaxUnpool(ctx, node, natural, stores[0]);
    };
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
