// compiler/ops/pool.cc — MaxPool, AveragePool (1-3 spatial dims; pads or
// auto_pad, strides, dilations, ceil_mode, count_include_pad) and
// GlobalAveragePool.
//
// The optimized lowering is compiler/codegen/lower_pool.cc (2-D); on CUDA,
// cuDNN pooling is preferred where it fits. The reference evaluator is the
// plain window loop: padding never wins a max, and only positions inside the
// padded input count for count_include_pad (a ceil_mode overhang never does).
#include <limits>

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/reference.h"
#include "compiler/ops/registry.h"
#include "compiler/ops/window.h"

namespace keel::ops {
namespace {

Status CanonicalizePool(ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  const ir::TensorType& x = InputType(node, 0);
  if (x.shape.size() < 3) return NodeError(node, "input must have rank >= 3 ([N, C, spatial...]), got " + x.ToString());
  if (!node.attrs().Has("kernel_shape")) return NodeError(node, "kernel_shape is required");
  KEEL_ASSIGN_OR_RETURN(auto kernel, node.attrs().GetInts("kernel_shape", {}));
  const bool is_max = node.op_type() == "MaxPool";
  KEEL_RETURN_IF_ERROR(CanonicalizeWindow(node, {x.shape.begin() + 2, x.shape.end()}, kernel, true));
  KEEL_ASSIGN_OR_RETURN(int64_t ceil_mode, node.attrs().GetInt("ceil_mode", 0));
  node.attrs().Set("ceil_mode", ceil_mode);
  if (is_max) {
    KEEL_ASSIGN_OR_RETURN(int64_t so, node.attrs().GetInt("storage_order", 0));
    if (so != 0) return NodeUnsupported(node, "storage_order=1 is not supported");
  } else {
    KEEL_ASSIGN_OR_RETURN(int64_t cip, node.attrs().GetInt("count_include_pad", 0));
    node.attrs().Set("count_include_pad", cip);
  }
  return Status::Ok();
}

Result<std::vector<ir::TensorType>> InferPool(const ir::Node& node) {
  KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
  KEEL_RETURN_IF_ERROR(CheckOutputs(node, 1, "the argmax indices"));
  const ir::TensorType& x = InputType(node, 0);
  if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string("pooling on ") + ir::DTypeName(x.dtype));
  KEEL_ASSIGN_OR_RETURN(int64_t ceil_mode, node.attrs().GetInt("ceil_mode", 0));
  KEEL_ASSIGN_OR_RETURN(auto sp, WindowOutput(node, {x.shape.begin() + 2, x.shape.end()}, ceil_mode != 0));
  std::vector<int64_t> out{x.shape[0], x.shape[1]};
  out.insert(out.end(), sp.begin(), sp.end());
  return One({x.dtype, out});
}

Result<std::vector<ir::TensorDataPtr>> EvaluatePool(const ir::Node& node, const std::vector<ir::TensorDataPtr>& in,
                                                    const std::vector<ir::TensorType>& out_types) {
  const bool is_max = node.op_type() == "MaxPool";
  const ir::TensorType& yt = out_types[0];
  const std::vector<double> x = TensorToDoubles(*in[0]);
  KEEL_ASSIGN_OR_RETURN(Window3 w, MakeWindow3(node, in[0]->type.shape, yt.shape));
  KEEL_ASSIGN_OR_RETURN(int64_t cip, node.attrs().GetInt("count_include_pad", 0));
  const int64_t ivol = w.in[0] * w.in[1] * w.in[2];
  std::vector<double> y(static_cast<size_t>(yt.NumElements()), 0.0);
  size_t yi = 0;
  for (int64_t nc = 0; nc < w.n * w.c; ++nc) {
    const double* xin = &x[static_cast<size_t>(nc * ivol)];
    for (int64_t o0 = 0; o0 < w.out[0]; ++o0) {
      for (int64_t o1 = 0; o1 < w.out[1]; ++o1) {
        for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
          double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t count = 0;
          for (int64_t k0 = 0; k0 < w.k[0]; ++k0) {
            const int64_t i0 = o0 * w.s[0] - w.pb[0] + k0 * w.d[0];
            for (int64_t k1 = 0; k1 < w.k[1]; ++k1) {
              const int64_t i1 = o1 * w.s[1] - w.pb[1] + k1 * w.d[1];
              for (int64_t k2 = 0; k2 < w.k[2]; ++k2) {
                const int64_t i2 = o2 * w.s[2] - w.pb[2] + k2 * w.d[2];
                const bool inside = i0 >= 0 && i0 < w.in[0] && i1 >= 0 && i1 < w.in[1] && i2 >= 0 && i2 < w.in[2];
                const bool in_padded = i0 < w.in[0] + w.pe[0] && i1 < w.in[1] + w.pe[1] && i2 < w.in[2] + w.pe[2];
                if (inside) {
                  const double v = xin[(i0 * w.in[1] + i1) * w.in[2] + i2];
                  acc = is_max ? std::max(acc, v) : acc + v;
                  ++count;
                } else if (cip && in_padded) {
                  ++count;
                }
              }
            }
          }
          y[yi++] = is_max ? acc : (count ? acc / static_cast<double>(count) : 0.0);
        }
      }
    }
  }
  KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(yt, y));
  return std::vector<ir::TensorDataPtr>{out};
}

OpDef Pool(const std::string& name, std::vector<int> versions) {
  OpDef def;
  def.name = name;
  def.versions = std::move(versions);
  def.fusion = FusionClass::kAnchor;
  def.library = LibraryCall::kPool;
  def.canonicalize = CanonicalizePool;
  def.infer = InferPool;
  def.evaluate = EvaluatePool;
  def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
    return codegen::LowerPool(ctx, node, stores[0]);
  };
  return def;
}

}  // namespace

void RegisterPoolOps(Registry& r) {
  r.Add(Pool("MaxPool", {1, 8, 10, 11, 12, 22}));
  r.Add(Pool("AveragePool", {1, 7, 10, 11, 19, 22}));
  {
    OpDef def;
    def.name = "GlobalAveragePool";
    def.versions = {1, 22};
    def.fusion = FusionClass::kAnchor;
    def.infer = [](const ir::Node& node) -> Result<std::vector<ir::TensorType>> {
      KEEL_RETURN_IF_ERROR(CheckArity(node, 1, 1));
      const ir::TensorType& x = InputType(node, 0);
      if (x.shape.size() < 3) return NodeError(node, "input must have rank >= 3, got " + x.ToString());
      if (!IsFloatType(x.dtype)) return NodeUnsupported(node, std::string("pooling on ") + ir::DTypeName(x.dtype));
      std::vector<int64_t> out(x.shape.size(), 1);
      out[0] = x.shape[0];
      out[1] = x.shape[1];
      return One({x.dtype, out});
    };
    def.evaluate = [](const ir::Node&, const std::vector<ir::TensorDataPtr>& in,
                      const std::vector<ir::TensorType>& out_types) -> Result<std::vector<ir::TensorDataPtr>> {
      const std::vector<double> x = TensorToDoubles(*in[0]);
      const int64_t nc = out_types[0].NumElements();
      const int64_t len = in[0]->type.NumElements() / std::max<int64_t>(nc, 1);
      std::vector<double> y(static_cast<size_t>(nc), 0.0);
      for (int64_t i = 0; i < nc; ++i) {
        double acc = 0;
        for (int64_t j = 0; j < len; ++j) acc += x[static_cast<size_t>(i * len + j)];
        y[static_cast<size_t>(i)] = len ? acc / static_cast<double>(len) : 0.0;
      }
      KEEL_ASSIGN_OR_RETURN(ir::TensorDataPtr out, TensorFromDoubles(out_types[0], y));
      return std::vector<ir::TensorDataPtr>{out};
    };
    def.kernel = [](codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
      return codegen::LowerGlobalAveragePool(ctx, node, stores[0]);
    };
    r.Add(std::move(def));
  }
}

}  // namespace keel::ops
