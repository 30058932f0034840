// compiler/driver/cuda_host_emitter_kernels.cc — keelc --emit=cuda-host: the
// program's ResolveKernels (see cuda_host_emitter_internal.h): every kernel of the
// kernel table in order, as vm/cuda/cuda_device.cc ResolveKernel resolves it —
// generated kernels from the library's module; cublas.gemm, cudnn.conv2d and
// cudnn.pool2d with the descriptors vm/cuda/cublas_kernels.cc and cudnn_kernels.cc
// build, their attributes read with serialization/library_ops.h's defaults and
// baked in as literals, and each tuned problem's key (vm/cuda/autotune.h
// ConvProblemKey / GemmProblemKey, less the TF32 suffix the program adds).
#include <cinttypes>
#include <string>
#include <vector>

#include "common/conv_geometry.h"
#include "compiler/driver/cuda_host_emitter_internal.h"
#include "serialization/library_ops.h"

namespace keel::driver::cuda_host {
namespace {

namespace lo = ser::library_ops;

class Attrs {
 public:
  explicit Attrs(const fb::Kernel& k) : k_(k) {}
  const fb::Attr* Find(const char* key) const {
    if (k_.attrs() == nullptr) return nullptr;
    for (const fb::Attr* a : *k_.attrs()) {
      if (a != nullptr && Str(a->key()) == key) return a;
    }
    return nullptr;
  }
  Result<int64_t> Int(const char* key, std::optional<int64_t> def) const {
    const fb::Attr* a = Find(key);
    if (a == nullptr || a->ints() == nullptr || a->ints()->size() != 1) {
      if (a == nullptr && def) return *def;
      return Error(key, "must be one integer");
    }
    return a->ints()->Get(0);
  }
  Result<std::vector<int64_t>> Ints(const char* key, size_t n, std::vector<int64_t> def) const {
    const fb::Attr* a = Find(key);
    if (a == nullptr) {
      if (!def.empty()) return def;
      return Error(key, "is required");
    }
    if (a->ints() == nullptr || a->ints()->size() != n) return Error(key, "must be " + std::to_string(n) + " integers");
    return std::vector<int64_t>(a->ints()->begin(), a->ints()->end());
  }
  Result<double> Float(const char* key, double def) const {
    const fb::Attr* a = Find(key);
    if (a == nullptr) return def;
    if (a->floats() == nullptr || a->floats()->size() != 1) return Error(key, "must be one float");
    return a->floats()->Get(0);
  }
  Result<std::string> Text(const char* key, const char* def) const {
    const fb::Attr* a = Find(key);
    if (a == nullptr) {
      if (def != nullptr) return std::string(def);
      return Error(key, "is required");
    }
    return Str(a->str());
  }

 private:
  Status Error(const char* key, const std::string& what) const {
    return InvalidExecutable("kernel " + Str(k_.name()) + " (" + Str(k_.library_op()) + "): attribute \"" + key +
                             "\" " + what);
  }
  const fb::Kernel& k_;
};


}  // namespace

// ---- kernels (vm/cuda/cuda_device.cc ResolveKernel, in kernel-table order) ----

Status Emitter::EmitKernels() {
  const auto* kernels = root().kernels();
  const size_t n = kernels != nullptr ? kernels->size() : 0;
  plans_.resize(n);
  // State declarations first (globals, so Run and Cleanup see them).
  for (size_t i = 0; i < n; ++i) {
    const fb::Kernel& k = *kernels->Get(static_cast<uint32_t>(i));
    const std::string op = Str(k.library_op());
    const char* type = k.kind() == fb::KernelKind::cuda_generated ? "CUfunction"
                       : op == lo::kCublasGemm                    ? "GemmKernel"
                       : op == lo::kCudnnConv2d                   ? "ConvKernel"
                       : op == lo::kCudnnPool2d                   ? "PoolKernel"
                                                                  : nullptr;
    if (type == nullptr) return Unsupported("kernel " + Str(k.name()) + ": unknown library op \"" + op + "\"");
    o_ << "static " << type << " k" << i << (k.kind() == fb::KernelKind::cuda_generated ? " = nullptr" : "")
       << ";  // " << Com(Str(k.name())) << "\n";
  }
  o_ << "\n// Every kernel of the kernel table, in order, as the VM resolves them at load.\n"
        "static void ResolveKernels() {\n";
  bool module_loaded = false;
  for (size_t i = 0; i < n; ++i) {
    const fb::Kernel& k = *kernels->Get(static_cast<uint32_t>(i));
    KernelPlan& p = plans_[i];
    p.name = Str(k.name());
    p.op = Str(k.library_op());
    p.kind = k.kind();
    if (k.kind() == fb::KernelKind::cuda_generated) {
      if (const fb::LaunchConfig* l = k.launch(); l != nullptr) {
        for (uint32_t d = 0; d < 3; ++d) {
          if (l->grid() != nullptr && d < l->grid()->size()) p.grid[d] = l->grid()->Get(d);
          if (l->block() != nullptr && d < l->block()->size()) p.block[d] = l->block()->Get(d);
        }
        p.shared = l->shared_bytes();
      } else {
        for (int d = 0; d < 3; ++d) p.grid[d] = p.block[d] = 0;  // the VM's KernelEntry defaults
      }
      // The VM appends " programmatic" when it launches the library's kernels as
      // programmatic dependents; the program decides that at run time (GeneratedLaunchSuffix).
      p.launch_call = "cuLaunchKernel grid=(" + std::to_string(p.grid[0]) + "," + std::to_string(p.grid[1]) + "," +
                      std::to_string(p.grid[2]) + ") block=(" + std::to_string(p.block[0]) + "," +
                      std::to_string(p.block[1]) + "," + std::to_string(p.block[2]) + ")";
      o_ << "  // kernel " << i << ": " << Com(p.name) << " (generated), " << p.launch_call << " shared "
         << p.shared << "\n";
      if (!module_loaded) {
        o_ << "  LoadModule();  // the library's module, once, at its first generated kernel\n";
        module_loaded = true;
      }
      o_ << "  CU_CHECK(cuModuleGetFunction(&k" << i << ", g_module, " << Lit(p.name) << "));\n";
      if (p.shared > 48 * 1024) {
        o_ << "  CU_CHECK(cuFuncSetAttribute(k" << i << ", CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, "
           << p.shared << "));\n";
      }
    } else if (p.op == lo::kCublasGemm) {
      KEEL_RETURN_IF_ERROR(EmitGemm(i, k, p));
    } else if (p.op == lo::kCudnnConv2d) {
      KEEL_RETURN_IF_ERROR(EmitConv(i, k, p));
    } else {
      KEEL_RETURN_IF_ERROR(EmitPool(i, k, p));
    }
  }
  o_ << "}\n\n";
  return Status::Ok();
}

static std::vector<int64_t> ArgShape(const fb::Kernel& k, size_t i) {
  return k.args() != nullptr && i < k.args()->size() ? Shape(k.args()->Get(static_cast<uint32_t>(i))->shape())
                                                     : std::vector<int64_t>();
}
static size_t NumArgs(const fb::Kernel& k) { return k.args() != nullptr ? k.args()->size() : 0; }

Status Emitter::EmitGemm(size_t i, const fb::Kernel& k, KernelPlan& p) {
  Attrs at(k);
  KEEL_ASSIGN_OR_RETURN(const int64_t m, at.Int(lo::attr::kM, std::nullopt));
  KEEL_ASSIGN_OR_RETURN(const int64_t n, at.Int(lo::attr::kN, std::nullopt));
  KEEL_ASSIGN_OR_RETURN(const int64_t kk, at.Int(lo::attr::kK, std::nullopt));
  KEEL_ASSIGN_OR_RETURN(const int64_t batch, at.Int(lo::attr::kBatch, 1));
  KEEL_ASSIGN_OR_RETURN(const int64_t ta, at.Int(lo::attr::kTransA, 0));
  KEEL_ASSIGN_OR_RETURN(const int64_t tb, at.Int(lo::attr::kTransB, 0));
  KEEL_ASSIGN_OR_RETURN(const int64_t sa, at.Int(lo::attr::kStrideA, m * kk));
  KEEL_ASSIGN_OR_RETURN(const int64_t sb, at.Int(lo::attr::kStrideB, kk * n));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_bias, at.Int(lo::attr::kHasBias, 0));
  KEEL_ASSIGN_OR_RETURN(const std::string bias_mode, at.Text(lo::attr::kBiasBroadcast, lo::value::kBiasRow));
  KEEL_ASSIGN_OR_RETURN(const double alpha, at.Float(lo::attr::kAlpha, 1.0));
  KEEL_ASSIGN_OR_RETURN(const double beta, at.Float(lo::attr::kBeta, 1.0));
  KEEL_ASSIGN_OR_RETURN(const std::string epi, at.Text(lo::attr::kEpilogue, ""));
  if (m < 1 || n < 1 || kk < 1 || batch < 1 || batch > INT32_MAX) {
    return InvalidExecutable("kernel " + p.name + " (cublas.gemm): bad m/n/k/batch");
  }
  p.has_bias = has_bias != 0;
  p.full_bias = p.has_bias && bias_mode == lo::value::kBiasFull;
  p.bias_arg = p.has_bias ? 2 : -1;
  p.y_arg = p.has_bias ? 3 : 2;
  if (NumArgs(k) != static_cast<size_t>(p.y_arg + 1) + (k.workspace_bytes() > 0 ? 1 : 0)) {
    return InvalidExecutable("kernel " + p.name + " (cublas.gemm): wrong argument count");
  }
  const bool row_bias = p.has_bias && !p.full_bias;
  const char* epilogue = "CUBLASLT_EPILOGUE_DEFAULT";
  if (epi == lo::value::kEpilogueRelu) epilogue = row_bias ? "CUBLASLT_EPILOGUE_RELU_BIAS" : "CUBLASLT_EPILOGUE_RELU";
  else if (epi == lo::value::kEpilogueGeluTanh) epilogue = row_bias ? "CUBLASLT_EPILOGUE_GELU_BIAS" : "CUBLASLT_EPILOGUE_GELU";
  else if (!epi.empty()) return InvalidExecutable("kernel " + p.name + " (cublas.gemm): unknown epilogue " + epi);
  else if (row_bias) epilogue = "CUBLASLT_EPILOGUE_BIAS";
  // vm/cuda/autotune.h GemmProblemKey less "|tf32<0|1>" (the program adds it: --allow-tf32).
  const std::string problem = "gemm|" + std::to_string(m) + "," + std::to_string(n) + "," + std::to_string(kk) + "," +
                              std::to_string(batch) + "," + std::to_string(ta) + std::to_string(tb) + "," +
                              std::to_string(sa) + "," + std::to_string(sb) + "|" + bias_mode +
                              std::to_string(p.has_bias ? 1 : 0) + "|" + epi + "|" + std::to_string(alpha) + "," +
                              std::to_string(beta);
  ++tuned_problems_;
  KEEL_ASSIGN_OR_RETURN(const std::string alpha_lit, FloatLit(alpha, true));
  KEEL_ASSIGN_OR_RETURN(const std::string beta_lit, FloatLit(p.full_bias ? beta : 0.0, true));

  o_ << "  // kernel " << i << ": " << Com(p.name) << " (cublas.gemm) m=" << m << " n=" << n << " k=" << kk
     << " batch=" << batch << " trans_a=" << ta << " trans_b=" << tb << " bias=" << (p.has_bias ? bias_mode : "none")
     << " epilogue=\"" << Com(epi) << "\"\n"
     << "  // Row-major Y = opA(A) opB(B) is column-major Y^T = opB(B)^T opA(A)^T: operands swapped, each\n"
     << "  // keeping its transpose flag (serialization/library_ops.h).\n"
     << "  {\n    GemmKernel& g = k" << i << ";\n    LtHandle();\n"
     << "    CUBLAS_CHECK(cublasLtMatmulDescCreate(&g.desc, g_allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : "
        "CUBLAS_COMPUTE_32F, CUDA_R_32F));\n"
     << "    const cublasOperation_t op_a = " << (tb ? "CUBLAS_OP_T" : "CUBLAS_OP_N") << ";  // on B\n"
     << "    const cublasOperation_t op_b = " << (ta ? "CUBLAS_OP_T" : "CUBLAS_OP_N") << ";  // on A\n"
     << "    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));\n"
     << "    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));\n"
     << "    const cublasLtEpilogue_t epilogue = " << epilogue << ";\n"
     << "    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof "
        "epilogue));\n";
  if (row_bias) {
    o_ << "    const cudaDataType_t bias_type = CUDA_R_32F;\n"
       << "    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, "
          "sizeof bias_type));\n";
  }
  auto layout = [&](const char* l, int64_t rows, int64_t cols, int64_t stride, const char* what) {
    o_ << "    GemmLayout(&g." << l << ", " << rows << ", " << cols << ", " << rows << ", " << batch << ", " << stride
       << ");  // " << what << "\n";
  };
  layout("a", tb ? kk : n, tb ? n : kk, sb, "operand 1 is B");
  layout("b", ta ? m : kk, ta ? kk : m, sa, "operand 2 is A");
  layout("d", n, m, m * n, "D is Y");
  layout("c", n, m, p.full_bias ? 0 : m * n, p.full_bias ? "C is the \"full\" bias, the same for every batch" : "C is Y");
  o_ << "    g.alpha = " << alpha_lit << ";\n    g.beta = " << beta_lit << ";\n"
     << "    GemmChooseAlgorithms(g, " << Lit(p.name) << ", " << Lit(problem) << ");\n  }\n";
  return Status::Ok();
}

// Comma-separated values, for the int arrays of the N-d descriptor calls.
static std::string List(const std::vector<int64_t>& v) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r;
}

// The program restates channels-first library kernels only (layout "nchw").
Status RequireChannelsFirst(const Attrs& at, const std::string& name, const char* op) {
  KEEL_ASSIGN_OR_RETURN(const std::string layout, at.Text(lo::attr::kLayout, lo::value::kLayoutNchw));
  if (layout == lo::value::kLayoutNchw) return Status::Ok();
  return Unsupported("kernel " + name + " (" + op + "): layout " + layout +
                     " is not emitted in host programs yet; compile with --layout nchw");
}

Status Emitter::EmitConv(size_t i, const fb::Kernel& k, KernelPlan& p) {
  // The spatial rank comes from X (1, 2 or 3): the attributes' lengths follow it.
  const std::vector<int64_t> x_shape = ArgShape(k, 0);
  const size_t spatial = common::ConvSpatialDims(x_shape.size());
  if (spatial == 0) {
    return InvalidExecutable("kernel " + p.name + " (cudnn.conv2d): X must have 1 to 3 spatial dims (rank 3 to 5), got " +
                             ShapeText(x_shape));
  }
  Attrs at(k);
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> pads,
                        at.Ints(lo::attr::kPads, 2 * spatial, std::vector<int64_t>(2 * spatial, 0)));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> strides,
                        at.Ints(lo::attr::kStrides, spatial, std::vector<int64_t>(spatial, 1)));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> dil,
                        at.Ints(lo::attr::kDilations, spatial, std::vector<int64_t>(spatial, 1)));
  KEEL_ASSIGN_OR_RETURN(const int64_t group, at.Int(lo::attr::kGroup, 1));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_bias, at.Int(lo::attr::kHasBias, 0));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_res, at.Int(lo::attr::kHasResidual, 0));
  KEEL_ASSIGN_OR_RETURN(const std::string act, at.Text(lo::attr::kActivation, ""));
  KEEL_ASSIGN_OR_RETURN(const double clip_max, at.Float(lo::attr::kClipMax, 6.0));
  KEEL_RETURN_IF_ERROR(RequireChannelsFirst(at, p.name, "cudnn.conv2d"));
  const bool clip = act == lo::value::kActivationClip;
  if (!act.empty() && act != lo::value::kActivationRelu && !clip) {
    return InvalidExecutable("kernel " + p.name + " (cudnn.conv2d): unknown activation " + act);
  }
  p.has_bias = has_bias != 0;
  p.has_residual = has_res != 0;
  int next = 2;
  p.bias_arg = p.has_bias ? next++ : -1;
  p.res_arg = p.has_residual ? next++ : -1;
  p.y_arg = next++;
  if (NumArgs(k) != static_cast<size_t>(next) + (k.workspace_bytes() > 0 ? 1 : 0)) {
    return InvalidExecutable("kernel " + p.name + " (cudnn.conv2d): wrong argument count");
  }
  const std::vector<int64_t> xs = x_shape, ws = ArgShape(k, 1), ys = ArgShape(k, static_cast<size_t>(p.y_arg));
  // The VM's own check and cuDNN view (common/conv_geometry.h): 1-D lifted to 2-D.
  Result<common::CudnnConvGeometry> geometry = common::MakeCudnnConvGeometry(xs, ws, ys, pads, strides, dil, group);
  if (!geometry.ok()) return geometry.status().WithContext("kernel " + p.name + " (cudnn.conv2d)");
  const common::CudnnConvGeometry& g = *geometry;
  const int act_kind = act == lo::value::kActivationRelu ? 1 : clip ? 2 : 0;
  // vm/cuda/autotune.h ConvProblemKey less "|tf32<0|1>" (the program adds it: --allow-tf32).
  const std::string problem = "conv|" + ShapeText(xs) + ShapeText(ws) + ShapeText(ys) + ShapeText(pads) +
                              ShapeText(strides) + ShapeText(dil) + "|g" + std::to_string(group) + "|b" +
                              std::to_string(p.has_bias ? 1 : 0) + "|r" + std::to_string(p.has_residual ? 1 : 0) +
                              "|a" + std::to_string(act_kind);
  ++tuned_problems_;
  KEEL_ASSIGN_OR_RETURN(const std::string clip_lit, FloatLit(clip_max, false));
  std::vector<int64_t> bias_dims(g.x.size(), 1);
  bias_dims[1] = g.channels();
  o_ << "  // kernel " << i << ": " << Com(p.name) << " (cudnn.conv2d, " << spatial << "-D) X" << ShapeText(xs)
     << " W" << ShapeText(ws) << " Y" << ShapeText(ys) << " pads " << ShapeText(pads) << " strides "
     << ShapeText(strides) << " dilations " << ShapeText(dil) << " group " << group
     << (p.has_bias ? " +bias" : "") << (p.has_residual ? " +residual" : "") << " activation \"" << Com(act)
     << "\"\n";
  if (spatial == 1) o_ << "  // cuDNN convolves 2-D and 3-D problems: this 1-D one runs with a unit height.\n";
  o_ << "  {\n    ConvKernel& c = k" << i << ";\n    CudnnHandle();\n"
     << "    RuntimeKernels();  // keel_bias_act_f32[x4], the VM's epilogue\n"
     << "    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c.x));\n"
     << "    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c.y));\n"
     << "    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c.b));\n"
     << "    CUDNN_CHECK(cudnnCreateFilterDescriptor(&c.w));\n"
     << "    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&c.conv));\n"
     << "    ConvTensor(c.x, {" << List(g.x) << "});\n"
     << "    ConvTensor(c.y, {" << List(g.y) << "});\n"
     << "    ConvTensor(c.b, {" << List(bias_dims) << "});\n"
     << "    ConvFilter(c.w, {" << List(g.w) << "});\n"
     << "    ConvDescriptor(c.conv, {" << List(g.pads) << "}, {" << List(g.strides) << "}, {" << List(g.dilations)
     << "});  // pads, strides, dilations\n"
     << "    CUDNN_CHECK(cudnnSetConvolutionGroupCount(c.conv, " << group << "));\n"
     << "    CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv, g_allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));\n"
     << "    ConvCheckOutput(c, {" << List(g.y) << "}, " << Lit(p.name) << ");\n";
  o_ << "    c.has_bias = " << (p.has_bias ? "true" : "false") << ";\n"
     << "    c.has_residual = " << (p.has_residual ? "true" : "false") << ";\n"
     << "    c.act_kind = " << act_kind << ";  // " << (act.empty() ? "none" : Com(act)) << "\n"
     << "    c.clip_max = " << clip_lit << ";\n"
     << "    c.y_elems = " << g.y_elements() << ";\n    c.channels = " << g.channels() << ";\n    c.hw = "
     << g.spatial_size() << ";\n"
     << "    c.zero_bias_bytes = " << 4 * static_cast<uint64_t>(g.channels()) << ";\n"
     << "    ConvFinishPlan(c, " << Lit(p.name) << ", " << Lit(problem) << ");\n";
  o_ << "  }\n";
  return Status::Ok();
}

Status Emitter::EmitPool(size_t i, const fb::Kernel& k, KernelPlan& p) {
  Attrs at(k);
  KEEL_ASSIGN_OR_RETURN(const std::string mode, at.Text(lo::attr::kMode, nullptr));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> kernel, at.Ints(lo::attr::kKernel, 2, {}));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> pads, at.Ints(lo::attr::kPads, 4, {0, 0, 0, 0}));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> strides, at.Ints(lo::attr::kStrides, 2, {1, 1}));
  KEEL_RETURN_IF_ERROR(RequireChannelsFirst(at, p.name, "cudnn.pool2d"));
  const char* m = mode == lo::value::kPoolMax               ? "CUDNN_POOLING_MAX"
                  : mode == lo::value::kPoolAvg             ? "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING"
                  : mode == lo::value::kPoolAvgExcludePad ? "CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING"
                                                            : nullptr;
  if (m == nullptr) return InvalidExecutable("kernel " + p.name + " (cudnn.pool2d): unknown mode " + mode);
  const std::vector<int64_t> xs = ArgShape(k, 0), ys = ArgShape(k, 1);
  if (NumArgs(k) != 2 || xs.size() != 4 || ys.size() != 4) {
    return InvalidExecutable("kernel " + p.name + " (cudnn.pool2d): expected X, Y in NCHW");
  }
  o_ << "  // kernel " << i << ": " << Com(p.name) << " (cudnn.pool2d) " << Com(mode) << " X" << ShapeText(xs)
     << " Y" << ShapeText(ys) << " kernel " << ShapeText(kernel) << " pads " << ShapeText(pads) << " strides "
     << ShapeText(strides) << "\n"
     << "  {\n    PoolKernel& p = k" << i << ";\n    CudnnHandle();\n"
     << "    CUDNN_CHECK(cudnnCreateTensorDescriptor(&p.x));\n"
     << "    CUDNN_CHECK(cudnnCreateTensorDescriptor(&p.y));\n"
     << "    CUDNN_CHECK(cudnnCreatePoolingDescriptor(&p.p));\n"
     << "    CUDNN_CHECK(cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, " << xs[0] << ", "
     << xs[1] << ", " << xs[2] << ", " << xs[3] << "));\n"
     << "    CUDNN_CHECK(cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, " << ys[0] << ", "
     << ys[1] << ", " << ys[2] << ", " << ys[3] << "));\n"
     << "    CUDNN_CHECK(cudnnSetPooling2dDescriptor(p.p, " << m << ", CUDNN_PROPAGATE_NAN, " << kernel[0] << ", "
     << kernel[1] << ", " << pads[0] << ", " << pads[1] << ", " << strides[0] << ", " << strides[1] << "));\n"
     << "    int n = 0, c = 0, h = 0, w = 0;\n"
     << "    CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(p.p, p.x, &n, &c, &h, &w));\n"
     << "    if (n != " << ys[0] << " || c != " << ys[1] << " || h != " << ys[2] << " || w != " << ys[3]
     << ") Die(\"kernel \" " << Lit(p.name) << " \": Y does not match the pooling\");\n"
     << "    p.call = " << Lit("cudnnPoolingForward mode=" + mode) << ";\n  }\n";
  return Status::Ok();
}

}  // namespace keel::driver::cuda_host
