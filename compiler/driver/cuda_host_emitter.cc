// compiler/driver/cuda_host_emitter.cc — see cuda_host_emitter.h.
//
// The generated program is the prelude (cuda_host_emitter_prelude.cc) followed by
// model-specific text written here in the VM's load order: globals, OpenLibrary,
// ResolveKernels, AllocateArenas, UploadConstants, AllocateInputs, PinHostBlocks,
// Run (the instruction stream), WriteOutputs, Cleanup, main. Attribute defaults and
// argument positions follow serialization/library_ops.h as vm/cuda/ reads them.
#include "compiler/driver/cuda_host_emitter.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

#include "serialization/executable_reader.h"
#include "serialization/library_ops.h"

namespace keel::driver {
namespace {

namespace fb = keel::fb;
namespace lo = ser::library_ops;

// A C++ string literal (octal escapes for anything unprintable; `?` escaped against trigraphs).
std::string Lit(std::string_view s) {
  std::string r = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\' || c == '?') {
      r += '\\';
      r += static_cast<char>(c);
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\%03o", c);
      r += buf;
    } else {
      r += static_cast<char>(c);
    }
  }
  return r + "\"";
}

// Text safe inside a // comment: no control characters, no backslash (a trailing
// one would continue the comment onto the next line).
std::string Com(std::string_view s) {
  std::string r;
  for (unsigned char c : s) r += (c < 0x20 || c == 0x7f || c == '\\') ? '?' : static_cast<char>(c);
  return r;
}

std::string Str(const flatbuffers::String* s) { return s != nullptr ? s->str() : std::string(); }

std::vector<int64_t> Shape(const flatbuffers::Vector<int64_t>* v) {
  return v != nullptr ? std::vector<int64_t>(v->begin(), v->end()) : std::vector<int64_t>();
}

std::string ShapeText(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

uint64_t ByteSize(const std::vector<int64_t>& shape, fb::DType dtype) {
  uint64_t n = ser::DTypeSize(ser::FromFb(dtype));
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);  // verified by ReadExecutable
  return n;
}

// Exact float/double literals (hex), so the program uses the VM's very values.
Result<std::string> FloatLit(double v, bool single) {
  if (!std::isfinite(v)) return Unsupported("non-finite library attribute value");
  char buf[64];
  if (single) {
    std::snprintf(buf, sizeof buf, "%af", static_cast<double>(static_cast<float>(v)));
  } else {
    std::snprintf(buf, sizeof buf, "%a", v);
  }
  return std::string(buf);
}

std::string U64(uint64_t v) { return std::to_string(v) + "ull"; }

// Typed access to a library kernel's attributes with library_ops.h's defaults.
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

// Per-kernel facts the run needs (argument positions, what the launch does).
struct KernelPlan {
  std::string name, op;
  fb::KernelKind kind = fb::KernelKind::cuda_generated;
  // cublas.gemm
  bool has_bias = false, full_bias = false;
  int bias_arg = -1, y_arg = 2, res_arg = -1;
  // cudnn.conv2d
  bool has_residual = false, relu_fused = false, has_act = false;
  uint64_t y_bytes = 0;
  // generated
  std::string launch_call;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, shared = 0;
};

class Emitter {
 public:
  Emitter(const ser::ExecutableView& view, const CudaHostOptions& options) : v_(view), opt_(options) {}
  Result<std::string> Emit();

 private:
  Status Check();
  Status EmitKernels();
  Status EmitGemm(size_t index, const fb::Kernel& k, KernelPlan& p);
  Status EmitConv(size_t index, const fb::Kernel& k, KernelPlan& p);
  Status EmitPool(size_t index, const fb::Kernel& k, KernelPlan& p);
  void EmitLoad();
  Status EmitRun();
  Status EmitInvoke(uint32_t pc, const std::string& dbg, const fb::Invoke& op);
  void EmitOutputsAndMain();

  const fb::Executable& root() const { return *v_.root; }
  const fb::Function& main_fn() const { return *v_.main(); }

  const ser::ExecutableView& v_;
  const CudaHostOptions& opt_;
  std::ostringstream o_;
  std::vector<KernelPlan> plans_;
  bool needs_library_ = false;
  // Register facts during the run's emission: device (0 cpu, 1 cuda) and bytes.
  std::vector<uint8_t> reg_device_;
  std::vector<uint64_t> reg_bytes_;
  std::vector<int32_t> reg_dynamic_slot_;  // storage registers owning a live dynamic storage: plan slot
};

Status Emitter::Check() {
  const fb::Function& f = main_fn();
  if (root().kernels() != nullptr) {
    for (const fb::Kernel* k : *root().kernels()) {
      if (k->kind() == fb::KernelKind::cpu_generated) {
        return Unsupported("kernel " + Str(k->name()) +
                           " is a CPU kernel: --emit=cuda-host needs an executable compiled for --target cuda");
      }
      if (k->kind() == fb::KernelKind::cuda_generated) needs_library_ = true;
    }
  }
  if (f.params() == nullptr || f.results() == nullptr) return InvalidExecutable("main has no params/results table");
  return Status::Ok();
}

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

std::vector<int64_t> ArgShape(const fb::Kernel& k, size_t i) {
  return k.args() != nullptr && i < k.args()->size() ? Shape(k.args()->Get(static_cast<uint32_t>(i))->shape())
                                                     : std::vector<int64_t>();
}
size_t NumArgs(const fb::Kernel& k) { return k.args() != nullptr ? k.args()->size() : 0; }

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
     << "    GemmChooseAlgorithms(g, " << Lit(p.name) << ");\n  }\n";
  return Status::Ok();
}

Status Emitter::EmitConv(size_t i, const fb::Kernel& k, KernelPlan& p) {
  Attrs at(k);
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> pads, at.Ints(lo::attr::kPads, 4, {0, 0, 0, 0}));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> strides, at.Ints(lo::attr::kStrides, 2, {1, 1}));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> dil, at.Ints(lo::attr::kDilations, 2, {1, 1}));
  KEEL_ASSIGN_OR_RETURN(const int64_t group, at.Int(lo::attr::kGroup, 1));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_bias, at.Int(lo::attr::kHasBias, 0));
  KEEL_ASSIGN_OR_RETURN(const int64_t has_res, at.Int(lo::attr::kHasResidual, 0));
  KEEL_ASSIGN_OR_RETURN(const std::string act, at.Text(lo::attr::kActivation, ""));
  KEEL_ASSIGN_OR_RETURN(const double clip_max, at.Float(lo::attr::kClipMax, 6.0));
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
  const std::vector<int64_t> xs = ArgShape(k, 0), ws = ArgShape(k, 1), ys = ArgShape(k, static_cast<size_t>(p.y_arg));
  if (xs.size() != 4 || ws.size() != 4 || ys.size() != 4 || group < 1) {
    return InvalidExecutable("kernel " + p.name + " (cudnn.conv2d): X, W and Y must be NCHW");
  }
  p.y_bytes = ByteSize(ys, fb::DType::f32);
  p.relu_fused = act == lo::value::kActivationRelu;
  p.has_act = !act.empty();
  o_ << "  // kernel " << i << ": " << Com(p.name) << " (cudnn.conv2d) X" << ShapeText(xs) << " W" << ShapeText(ws)
     << " Y" << ShapeText(ys) << " pads " << ShapeText(pads) << " strides " << ShapeText(strides) << " dilations "
     << ShapeText(dil) << " group " << group << (p.has_bias ? " +bias" : "") << (p.has_residual ? " +residual" : "")
     << " activation \"" << Com(act) << "\"\n"
     << "  {\n    ConvKernel& c = k" << i << ";\n    CudnnHandle();\n"
     << "    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c.x));\n"
     << "    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c.y));\n"
     << "    CUDNN_CHECK(cudnnCreateTensorDescriptor(&c.b));\n"
     << "    CUDNN_CHECK(cudnnCreateFilterDescriptor(&c.w));\n"
     << "    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&c.conv));\n";
  auto t4 = [&](const char* d, const std::vector<int64_t>& s) {
    o_ << "    CUDNN_CHECK(cudnnSetTensor4dDescriptor(c." << d << ", CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, " << s[0]
       << ", " << s[1] << ", " << s[2] << ", " << s[3] << "));\n";
  };
  t4("x", xs);
  t4("y", ys);
  t4("b", {1, ws[0], 1, 1});
  o_ << "    CUDNN_CHECK(cudnnSetFilter4dDescriptor(c.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, " << ws[0] << ", " << ws[1]
     << ", " << ws[2] << ", " << ws[3] << "));\n"
     << "    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(c.conv, " << pads[0] << ", " << pads[1] << ", " << strides[0]
     << ", " << strides[1] << ", " << dil[0] << ", " << dil[1] << ", CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));\n"
     << "    CUDNN_CHECK(cudnnSetConvolutionGroupCount(c.conv, " << group << "));\n"
     << "    CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv, g_allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));\n"
     << "    int on = 0, oc = 0, oh = 0, ow = 0;\n"
     << "    CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(c.conv, c.x, c.w, &on, &oc, &oh, &ow));\n"
     << "    if (on != " << ys[0] << " || oc != " << ys[1] << " || oh != " << ys[2] << " || ow != " << ys[3]
     << ") Die(\"kernel \" " << Lit(p.name) << " \": Y does not match the convolution\");\n";
  if (p.has_act) {
    KEEL_ASSIGN_OR_RETURN(const std::string coef, FloatLit(clip ? clip_max : 0.0, false));
    o_ << "    CUDNN_CHECK(cudnnCreateActivationDescriptor(&c.act));\n"
       << "    CUDNN_CHECK(cudnnSetActivationDescriptor(c.act, "
       << (clip ? "CUDNN_ACTIVATION_CLIPPED_RELU" : "CUDNN_ACTIVATION_RELU") << ", CUDNN_PROPAGATE_NAN, " << coef
       << "));\n";
  }
  o_ << "    c.fused = " << (p.relu_fused ? "true" : "false") << ";\n"
     << "    ConvChooseAlgorithm(c, " << Lit(p.name) << ");\n";
  if (p.relu_fused && !p.has_bias) {
    const uint64_t bytes = 4 * static_cast<uint64_t>(ws[0]);
    o_ << "    // The fused call always adds a bias: give it zeros.\n"
       << "    c.zero_bias = DeviceMalloc(" << bytes << ", 256);\n"
       << "    CUDA_CHECK(cudaMemsetAsync(c.zero_bias, 0, " << bytes << ", g_stream));\n"
       << "    CUDA_CHECK(cudaStreamSynchronize(g_stream));\n";
  }
  o_ << "  }\n";
  return Status::Ok();
}

Status Emitter::EmitPool(size_t i, const fb::Kernel& k, KernelPlan& p) {
  Attrs at(k);
  KEEL_ASSIGN_OR_RETURN(const std::string mode, at.Text(lo::attr::kMode, nullptr));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> kernel, at.Ints(lo::attr::kKernel, 2, {}));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> pads, at.Ints(lo::attr::kPads, 4, {0, 0, 0, 0}));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> strides, at.Ints(lo::attr::kStrides, 2, {1, 1}));
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

// ---- load: arenas, constants, inputs, pinning (vm/interpreter.cc Init) ----

void Emitter::EmitLoad() {
  const fb::MemoryPlan* plan = root().memory_plan();
  const auto* arenas = plan != nullptr ? plan->arenas() : nullptr;
  const size_t na = arenas != nullptr ? arenas->size() : 0;
  o_ << "// One block per arena of the static plan (" << (na == 0 ? "none: every storage is dynamic" : "")
     << (na != 0 ? std::to_string(na) + " arena(s)" : "") << ").\n"
     << "[[maybe_unused]] static uint8_t* g_arena[" << std::max<size_t>(1, na) << "] = {};\n"
     << "static void AllocateArenas() {\n";
  for (size_t i = 0; i < na; ++i) {
    const fb::Arena* a = arenas->Get(static_cast<uint32_t>(i));
    const uint64_t align = std::max<uint64_t>(64, a->alignment());
    const bool dev = a->device() != fb::DeviceKind::cpu;
    o_ << "  g_arena[" << i << "] = static_cast<uint8_t*>(" << (dev ? "DeviceMalloc(" : "HostMalloc(")
       << U64(a->size()) << ", " << align << "));  // " << (dev ? "cuda" : "cpu") << " arena " << i << "\n";
    o_ << "  TraceSetup(\"arena " << i << "\", " << Lit(std::string(" allocate ") + (dev ? "cudaMalloc " : "aligned_alloc ") +
                                                     std::to_string(a->size()) + " bytes")
       << ");\n";
  }
  o_ << "}\n\n";

  const auto* consts = root().constants();
  const size_t nc = consts != nullptr ? consts->size() : 0;
  o_ << "// Constants (weights), uploaded once; read in place from the mapped model.keel: the data\n"
     << "// segment starts at byte " << root().data_segment_offset() << ", each offset below is within it.\n"
     << "[[maybe_unused]] static uint8_t* g_const[" << std::max<size_t>(1, nc) << "] = {};\n"
     << "static void UploadConstants(const MappedFile& keel) {\n"
     << "  const uint8_t* data = keel.data + " << U64(root().data_segment_offset()) << ";\n";
  for (size_t i = 0; i < nc; ++i) {
    const fb::Constant* c = consts->Get(static_cast<uint32_t>(i));
    o_ << "  // constant " << i << ": " << Com(Str(c->name())) << " " << ShapeText(Shape(c->shape())) << " "
       << ser::DTypeName(ser::FromFb(c->dtype())) << "\n";
    if (c->device() == fb::DeviceKind::cpu) {
      o_ << "  g_const[" << i << "] = const_cast<uint8_t*>(data + " << U64(c->offset()) << ");  // in place\n";
    } else {
      const std::string what = Lit("constant " + Str(c->name()));
      o_ << "  g_const[" << i << "] = static_cast<uint8_t*>(DeviceMalloc(" << U64(c->size()) << ", 256));\n"
         << "  TraceSetup(" << what << ", " << Lit(" allocate cudaMalloc " + std::to_string(c->size()) + " bytes")
         << ");\n";
      if (c->size() != 0) {
        o_ << "  CUDA_CHECK(cudaMemcpyAsync(g_const[" << i << "], data + " << U64(c->offset()) << ", "
           << U64(c->size()) << ", cudaMemcpyHostToDevice, g_stream));\n";
      }
      o_ << "  TraceSetup(" << what << ", "
         << Lit(" copy cudaMemcpyAsync host->device " + std::to_string(c->size()) + " bytes") << ");\n";
    }
  }
  o_ << "  CUDA_CHECK(cudaStreamSynchronize(g_stream));\n}\n\n";

  const auto* params = main_fn().params();
  o_ << "// The VM's input buffers: one per parameter, on the parameter's device.\n"
     << "static uint8_t* g_input[" << std::max<size_t>(1, params->size()) << "] = {};\n"
     << "static void AllocateInputs() {\n";
  for (uint32_t i = 0; i < params->size(); ++i) {
    const fb::TensorSig* s = params->Get(i);
    const uint64_t bytes = ByteSize(Shape(s->shape()), s->dtype());
    o_ << "  g_input[" << i << "] = static_cast<uint8_t*>("
       << (s->device() == fb::DeviceKind::cpu ? "HostMalloc(" : "DeviceMalloc(") << U64(bytes) << ", 64));  // "
       << Com(Str(s->name())) << " " << ShapeText(Shape(s->shape())) << "\n"
       << "  TraceSetup(" << Lit("input " + Str(s->name())) << ", "
       << Lit(std::string(" allocate ") + (s->device() == fb::DeviceKind::cpu ? "aligned_alloc " : "cudaMalloc ") +
              std::to_string(bytes) + " bytes")
       << ");\n";
  }
  o_ << "}\n\n"
     << "// Host blocks the GPU copies to and from are page-locked, so the copies are truly asynchronous.\n"
     << "static void PinHostBlocks() {\n";
  for (size_t i = 0; i < na; ++i) {
    const fb::Arena* a = arenas->Get(static_cast<uint32_t>(i));
    if (a->device() == fb::DeviceKind::cpu && a->size() > 0) {
      o_ << "  CUDA_CHECK(cudaHostRegister(g_arena[" << i << "], " << U64(a->size()) << ", cudaHostRegisterDefault));\n";
    }
  }
  for (uint32_t i = 0; i < params->size(); ++i) {
    const fb::TensorSig* s = params->Get(i);
    const uint64_t bytes = ByteSize(Shape(s->shape()), s->dtype());
    if (s->device() == fb::DeviceKind::cpu && bytes > 0) {
      o_ << "  CUDA_CHECK(cudaHostRegister(g_input[" << i << "], " << U64(bytes) << ", cudaHostRegisterDefault));\n";
    }
  }
  o_ << "}\n\n";
}

// ---- the run: one block per instruction ----

Status Emitter::EmitInvoke(uint32_t pc, const std::string& dbg, const fb::Invoke& op) {
  const KernelPlan& p = plans_.at(op.kernel());
  std::vector<std::string> a;
  if (op.args() != nullptr) {
    for (uint32_t r : *op.args()) a.push_back("R[" + std::to_string(r) + "]");
  }
  const std::string k = "k" + std::to_string(op.kernel());
  const std::string tr = "  Trace(" + std::to_string(pc) + ", \"invoke\", " + Lit(dbg) + ", ";
  const std::string kname = Lit(" kernel=" + p.name);
  if (p.kind == fb::KernelKind::cuda_generated) {
    o_ << "  {\n    void* args[] = {";
    for (size_t j = 0; j < a.size(); ++j) o_ << (j ? ", " : "") << a[j];
    o_ << (a.empty() ? "nullptr" : "") << "};\n    void* params[] = {";
    for (size_t j = 0; j < a.size(); ++j) o_ << (j ? ", " : "") << "&args[" << j << "]";
    o_ << (a.empty() ? "nullptr" : "") << "};\n"
       << "    CU_CHECK(cuLaunchKernel(" << k << ", " << p.grid[0] << ", " << p.grid[1] << ", " << p.grid[2] << ", "
       << p.block[0] << ", " << p.block[1] << ", " << p.block[2] << ", " << p.shared
       << ", reinterpret_cast<CUstream>(g_stream), params, nullptr));\n  }\n"
       << tr << Lit(" launch " + p.launch_call + " kernel=" + p.name) << ");\n";
    return Status::Ok();
  }
  auto arg = [&](int i) -> Result<std::string> {
    if (i < 0 || static_cast<size_t>(i) >= a.size()) return InvalidExecutable("kernel " + p.name + ": missing argument");
    return a[static_cast<size_t>(i)];
  };
  if (p.op == lo::kCublasGemm) {
    KEEL_ASSIGN_OR_RETURN(const std::string A, arg(0));
    KEEL_ASSIGN_OR_RETURN(const std::string B, arg(1));
    KEEL_ASSIGN_OR_RETURN(const std::string Y, arg(p.y_arg));
    o_ << "  {\n    GemmKernel& g = " << k << ";\n"
       << "    const void* A = " << A << ";\n    const void* B = " << B << ";\n    void* Y = " << Y << ";\n";
    if (p.has_bias) {
      KEEL_ASSIGN_OR_RETURN(const std::string bias, arg(p.bias_arg));
      o_ << "    const void* bias = " << bias << ";\n";
    }
    o_ << "    const void* C = " << (p.full_bias ? "bias" : "Y") << ";\n"
       << "    // The 16-byte-aligned algorithm when every operand allows it (CublasGemm::Launch).\n"
       << "    const bool use16 = g.has16 && ((reinterpret_cast<uintptr_t>(A) | reinterpret_cast<uintptr_t>(B) |\n"
       << "                                    reinterpret_cast<uintptr_t>(C) | reinterpret_cast<uintptr_t>(Y)) & 15u) == 0;\n";
    if (p.has_bias && !p.full_bias) {
      o_ << "    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof "
            "bias));\n";
    }
    o_ << "    CUBLAS_CHECK(cublasLtMatmul(g_lt, g.desc, &g.alpha, B, g.a, A, g.b, &g.beta, C, g.c, Y, g.d,\n"
       << "                                use16 ? &g.algo16 : &g.algo4, g_workspace, use16 ? g.ws16 : g.ws4, "
          "g_stream));\n"
       << "  " << tr << "\" launch \" + (use16 ? g.call16 : g.call4) + " << kname << ");\n  }\n";
    return Status::Ok();
  }
  if (p.op == lo::kCudnnConv2d) {
    KEEL_ASSIGN_OR_RETURN(const std::string X, arg(0));
    KEEL_ASSIGN_OR_RETURN(const std::string W, arg(1));
    KEEL_ASSIGN_OR_RETURN(const std::string Y, arg(p.y_arg));
    std::string bias = "nullptr", res;
    if (p.has_bias) { KEEL_ASSIGN_OR_RETURN(bias, arg(p.bias_arg)); }
    if (p.has_residual) { KEEL_ASSIGN_OR_RETURN(res, arg(p.res_arg)); }
    o_ << "  {\n    ConvKernel& c = " << k << ";\n    const float one = 1.f;\n    bool done = false;\n";
    if (p.relu_fused) {
      o_ << "    if (c.fused) {\n"
         << "      const float alpha2 = " << (p.has_residual ? "1.f" : "0.f") << ";\n"
         << "      const cudnnStatus_t s = cudnnConvolutionBiasActivationForward(\n"
         << "          g_cudnn, &one, c.x, " << X << ", c.w, " << W << ", c.conv, c.algo, g_workspace, c.ws, &alpha2, c.y, "
         << (p.has_residual ? res : Y) << ", c.b, " << (p.has_bias ? bias : "c.zero_bias") << ", c.act, c.y, " << Y
         << ");\n"
         << "      if (s == CUDNN_STATUS_SUCCESS) {\n        done = true;\n"
         << "      " << tr << "\" launch \" + c.call_fused + " << kname << ");\n"
         << "      } else if (s != CUDNN_STATUS_NOT_SUPPORTED) {\n        CUDNN_CHECK(s);\n      } else {\n"
         << "        c.fused = false;  // no fused kernel for this configuration: the sequence below from now on\n"
         << "      }\n    }\n";
    }
    o_ << "    if (!done) {\n      float beta = 0.f;\n";
    if (p.has_residual) {
      o_ << "      if (" << res << " != " << Y << ") CUDA_CHECK(cudaMemcpyAsync(" << Y << ", " << res << ", "
         << U64(p.y_bytes) << ", cudaMemcpyDeviceToDevice, g_stream));\n      beta = 1.f;\n";
    }
    o_ << "      CUDNN_CHECK(cudnnConvolutionForward(g_cudnn, &one, c.x, " << X << ", c.w, " << W
       << ", c.conv, c.algo, g_workspace, c.ws, &beta, c.y, " << Y << "));\n";
    if (p.has_bias) {
      o_ << "      CUDNN_CHECK(cudnnAddTensor(g_cudnn, &one, c.b, " << bias << ", &one, c.y, " << Y << "));\n";
    }
    if (p.has_act) {
      o_ << "      const float zero = 0.f;\n"
         << "      CUDNN_CHECK(cudnnActivationForward(g_cudnn, c.act, &one, c.y, " << Y << ", &zero, c.y, " << Y << "));\n";
    }
    o_ << "    " << tr << "\" launch \" + c.call_conv + " << kname << ");\n    }\n  }\n";
    return Status::Ok();
  }
  KEEL_ASSIGN_OR_RETURN(const std::string X, arg(0));
  KEEL_ASSIGN_OR_RETURN(const std::string Y, arg(1));
  o_ << "  {\n    const float one = 1.f, zero = 0.f;\n"
     << "    CUDNN_CHECK(cudnnPoolingForward(g_cudnn, " << k << ".p, &one, " << k << ".x, " << X << ", &zero, " << k
     << ".y, " << Y << "));\n  }\n"
     << tr << "\" launch \" + " << k << ".call + " << kname << ");\n";
  return Status::Ok();
}

Status Emitter::EmitRun() {
  const fb::Function& f = main_fn();
  const uint32_t nregs = f.num_registers();
  reg_device_.assign(nregs, 0);
  reg_bytes_.assign(nregs, 0);
  reg_dynamic_slot_.assign(nregs, -1);
  const auto* params = f.params();
  for (uint32_t i = 0; i < params->size(); ++i) {
    reg_device_[i] = static_cast<uint8_t>(params->Get(i)->device());
    reg_bytes_[i] = ByteSize(Shape(params->Get(i)->shape()), params->Get(i)->dtype());
  }
  const fb::MemoryPlan* plan = root().memory_plan();
  const auto* results = f.results();
  o_ << "// Registers of `main` (storages and tensor views are plain pointers here).\n"
     << "static std::vector<uint8_t*> R(" << std::max<uint32_t>(1, nregs) << ");\n"
     << "static uint8_t* g_output[" << std::max<size_t>(1, results->size()) << "] = {};\n"
     << "static std::vector<std::pair<void*, bool>> g_live_dynamic;  // dynamic storages the run leaves allocated\n\n"
     << "// The instruction stream of `main`, one block per instruction.\n"
     << "static void Run() {\n";
  for (uint32_t i = 0; i < params->size(); ++i) {
    o_ << "  R[" << i << "] = g_input[" << i << "];  // param " << Com(Str(params->Get(i)->name())) << "\n";
  }
  const auto* insts = f.instructions();
  for (uint32_t pc = 0; insts != nullptr && pc < insts->size(); ++pc) {
    const fb::Instruction* in = insts->Get(pc);
    const std::string dbg = Str(in->debug_name());
    auto head = [&](const char* opcode) {
      o_ << "\n  // #" << pc << " " << opcode << (dbg.empty() ? "" : " [" + Com(dbg) + "]") << "\n";
    };
    auto trace = [&](const char* opcode, const std::string& what) {
      o_ << "  Trace(" << pc << ", \"" << opcode << "\", " << Lit(dbg) << ", " << Lit(what) << ");\n";
    };
    switch (in->op_type()) {
      case fb::Op::AllocStorage: {
        const auto* op = in->op_as_AllocStorage();
        const fb::PlannedStorage* s = plan->storages()->Get(op->plan_slot());
        const bool dev = s->device() != fb::DeviceKind::cpu;
        head("alloc_storage");
        reg_device_[op->dst()] = dev ? 1 : 0;
        reg_bytes_[op->dst()] = s->size();
        if (s->arena() >= 0) {
          o_ << "  R[" << op->dst() << "] = g_arena[" << s->arena() << "] + " << U64(s->offset()) << ";  // slot "
             << op->plan_slot() << ", " << s->size() << " bytes\n";
          trace("alloc_storage", " arena-slice arena " + std::to_string(s->size()) + " bytes");
        } else {
          o_ << "  R[" << op->dst() << "] = static_cast<uint8_t*>(" << (dev ? "DeviceMalloc(" : "HostMalloc(")
             << U64(s->size()) << ", " << s->alignment() << "));  // slot " << op->plan_slot() << " (dynamic)\n";
          trace("alloc_storage", std::string(" allocate ") + (dev ? "cudaMalloc " : "aligned_alloc ") +
                                     std::to_string(s->size()) + " bytes");
          reg_dynamic_slot_[op->dst()] = static_cast<int32_t>(op->plan_slot());
        }
        break;
      }
      case fb::Op::AllocTensor: {
        const auto* op = in->op_as_AllocTensor();
        const std::vector<int64_t> shape = Shape(op->shape());
        head("alloc_tensor");
        o_ << "  R[" << op->dst() << "] = R[" << op->storage() << "] + " << U64(op->offset()) << ";  // "
           << ShapeText(shape) << " " << ser::DTypeName(ser::FromFb(op->dtype())) << "\n";
        trace("alloc_tensor", "");
        reg_device_[op->dst()] = reg_device_[op->storage()];
        reg_bytes_[op->dst()] = ByteSize(shape, op->dtype());
        reg_dynamic_slot_[op->dst()] = -1;
        break;
      }
      case fb::Op::LoadConst: {
        const auto* op = in->op_as_LoadConst();
        const fb::Constant* c = root().constants()->Get(op->const_index());
        head("load_const");
        o_ << "  R[" << op->dst() << "] = g_const[" << op->const_index() << "];  // " << Com(Str(c->name())) << "\n";
        trace("load_const", "");
        reg_device_[op->dst()] = c->device() != fb::DeviceKind::cpu ? 1 : 0;
        reg_bytes_[op->dst()] = c->size();
        reg_dynamic_slot_[op->dst()] = -1;
        break;
      }
      case fb::Op::Copy: {
        const auto* op = in->op_as_Copy();
        const bool src_dev = reg_device_[op->src()] != 0, dst_dev = reg_device_[op->dst()] != 0;
        const uint64_t bytes = reg_bytes_[op->src()];
        head("copy");
        const char* dir = src_dev ? (dst_dev ? "device->device" : "device->host")
                                  : (dst_dev ? "host->device" : "host->host");
        if (!src_dev && !dst_dev) {
          o_ << "  std::memcpy(R[" << op->dst() << "], R[" << op->src() << "], " << U64(bytes) << ");\n";
          trace("copy", std::string(" copy memcpy ") + dir + " " + std::to_string(bytes) + " bytes");
        } else {
          const char* kind = src_dev ? (dst_dev ? "cudaMemcpyDefault" : "cudaMemcpyDeviceToHost")
                                     : "cudaMemcpyHostToDevice";
          if (bytes != 0) {
            o_ << "  CUDA_CHECK(cudaMemcpyAsync(R[" << op->dst() << "], R[" << op->src() << "], " << U64(bytes)
               << ", " << kind << ", g_stream));\n";
          }
          trace("copy", std::string(" copy cudaMemcpyAsync ") + dir + " " + std::to_string(bytes) + " bytes");
        }
        break;
      }
      case fb::Op::Invoke: {
        head("invoke");
        o_ << "  // kernel " << in->op_as_Invoke()->kernel() << ": "
           << Com(plans_.at(in->op_as_Invoke()->kernel()).name) << "\n";
        KEEL_RETURN_IF_ERROR(EmitInvoke(pc, dbg, *in->op_as_Invoke()));
        break;
      }
      case fb::Op::FreeStorage: {
        const auto* op = in->op_as_FreeStorage();
        const bool dev = reg_device_[op->reg()] != 0;
        head("free_storage");
        o_ << "  " << (dev ? "DeviceFree(R[" : "std::free(R[") << op->reg() << "]);\n"
           << "  R[" << op->reg() << "] = nullptr;\n";
        trace("free_storage", dev ? " free cudaFree 0 bytes" : " free free 0 bytes");
        reg_dynamic_slot_[op->reg()] = -1;
        break;
      }
      case fb::Op::Ret: {
        const auto* op = in->op_as_Ret();
        head("ret");
        for (uint32_t j = 0; op->regs() != nullptr && j < op->regs()->size(); ++j) {
          o_ << "  g_output[" << j << "] = R[" << op->regs()->Get(j) << "];  // "
             << Com(Str(results->Get(j)->name())) << "\n";
        }
        trace("ret", "");
        break;
      }
      default:
        return InvalidExecutable("instruction " + std::to_string(pc) + " has an unknown opcode");
    }
  }
  // Dynamic storages still allocated at the end (the outputs'): the VM frees them at
  // its next run or its destruction; Cleanup does.
  for (uint32_t r = 0; r < nregs; ++r) {
    if (reg_dynamic_slot_[r] >= 0) {
      o_ << "  g_live_dynamic.emplace_back(R[" << r << "], " << (reg_device_[r] ? "true" : "false") << ");\n";
    }
  }
  o_ << "}\n\n";
  return Status::Ok();
}

void Emitter::EmitOutputsAndMain() {
  const fb::Function& f = main_fn();
  const auto* params = f.params();
  const auto* results = f.results();
  const fb::MemoryPlan* plan = root().memory_plan();
  const size_t na = plan != nullptr && plan->arenas() != nullptr ? plan->arenas()->size() : 0;
  const size_t nc = root().constants() != nullptr ? root().constants()->size() : 0;

  o_ << "// Inputs: from --input name=file (raw bytes), else keel-run's deterministic pattern.\n"
     << "static const ParamInfo kParams[] = {\n";
  for (uint32_t i = 0; i < params->size(); ++i) {
    const fb::TensorSig* s = params->Get(i);
    o_ << "    {" << Lit(Str(s->name())) << ", " << static_cast<int>(s->dtype()) << ", "
       << U64(ByteSize(Shape(s->shape()), s->dtype())) << ", " << (s->device() == fb::DeviceKind::cpu ? "true" : "false")
       << "},\n";
  }
  o_ << "    {nullptr, 0, 0, true}};\n"
     << "static void ReadInputs(const Options& o) { ReadInputsInto(o, kParams, " << params->size() << ", g_input); }\n\n"
     << "// Outputs: checksums as keel-run prints them, and <output-dir>/<name>.bin (keel-run's file names).\n"
     << "static const ResultInfo kResults[] = {\n";
  for (uint32_t j = 0; j < results->size(); ++j) {
    const fb::TensorSig* s = results->Get(j);
    o_ << "    {" << Lit(Str(s->name())) << ", " << Lit(ShapeText(Shape(s->shape()))) << ", "
       << static_cast<int>(s->dtype()) << ", " << U64(ByteSize(Shape(s->shape()), s->dtype())) << ", "
       << (s->device() == fb::DeviceKind::cpu ? "true" : "false") << "},\n";
  }
  o_ << "    {nullptr, nullptr, 0, 0, true}};\n"
     << "static void WriteOutputs(const Options& o) { WriteOutputsFrom(o, kResults, " << results->size()
     << ", g_output); }\n\n";

  // Cleanup: what the VM's destructors release.
  o_ << "static void Cleanup() {\n  CUDA_CHECK(cudaStreamSynchronize(g_stream));\n"
     << "  for (auto& d : g_live_dynamic) {\n    if (d.second) DeviceFree(d.first);\n    else std::free(d.first);\n  }\n";
  const auto* kernels = root().kernels();
  for (size_t i = 0; i < plans_.size(); ++i) {
    const KernelPlan& p = plans_[i];
    if (p.kind == fb::KernelKind::cuda_generated) continue;
    const std::string k = "k" + std::to_string(i);
    if (p.op == lo::kCublasGemm) {
      o_ << "  cublasLtMatmulPreferenceDestroy(" << k << ".pref);\n";
      for (const char* l : {"a", "b", "c", "d"}) o_ << "  cublasLtMatrixLayoutDestroy(" << k << "." << l << ");\n";
      o_ << "  cublasLtMatmulDescDestroy(" << k << ".desc);\n";
    } else if (p.op == lo::kCudnnConv2d) {
      o_ << "  cudnnDestroyTensorDescriptor(" << k << ".x);\n  cudnnDestroyTensorDescriptor(" << k << ".y);\n"
         << "  cudnnDestroyTensorDescriptor(" << k << ".b);\n  cudnnDestroyFilterDescriptor(" << k << ".w);\n"
         << "  cudnnDestroyConvolutionDescriptor(" << k << ".conv);\n"
         << "  if (" << k << ".act) cudnnDestroyActivationDescriptor(" << k << ".act);\n"
         << "  if (" << k << ".zero_bias) DeviceFree(" << k << ".zero_bias);\n";
    } else {
      o_ << "  cudnnDestroyTensorDescriptor(" << k << ".x);\n  cudnnDestroyTensorDescriptor(" << k << ".y);\n"
         << "  cudnnDestroyPoolingDescriptor(" << k << ".p);\n";
    }
  }
  (void)kernels;
  o_ << "  if (g_cudnn) cudnnDestroy(g_cudnn);\n  if (g_lt) cublasLtDestroy(g_lt);\n"
     << "  if (g_workspace) CUDA_CHECK(cudaFree(g_workspace));\n"
     << "  if (g_module) CU_CHECK(cuModuleUnload(g_module));\n";
  for (size_t i = 0; i < na; ++i) {
    const fb::Arena* a = plan->arenas()->Get(static_cast<uint32_t>(i));
    if (a->device() == fb::DeviceKind::cpu) {
      if (a->size() > 0) o_ << "  CUDA_CHECK(cudaHostUnregister(g_arena[" << i << "]));\n";
      o_ << "  std::free(g_arena[" << i << "]);\n";
    } else {
      o_ << "  DeviceFree(g_arena[" << i << "]);\n";
    }
  }
  for (uint32_t i = 0; i < params->size(); ++i) {
    const fb::TensorSig* s = params->Get(i);
    if (s->device() == fb::DeviceKind::cpu) {
      if (ByteSize(Shape(s->shape()), s->dtype()) > 0) o_ << "  CUDA_CHECK(cudaHostUnregister(g_input[" << i << "]));\n";
      o_ << "  std::free(g_input[" << i << "]);\n";
    } else {
      o_ << "  DeviceFree(g_input[" << i << "]);\n";
    }
  }
  for (size_t i = 0; i < nc; ++i) {
    if (root().constants()->Get(static_cast<uint32_t>(i))->device() != fb::DeviceKind::cpu) {
      o_ << "  DeviceFree(g_const[" << i << "]);\n";
    }
  }
  o_ << "  CUDA_CHECK(cudaStreamDestroy(g_stream));\n}\n\n";

  o_ << "int main(int argc, char** argv) {\n"
     << "  const Options o = ParseArgs(argc, argv, " << Lit(opt_.keel_path) << ", " << Lit(opt_.library_path) << ");\n"
     << "  const MappedFile keel = MapFile(o.keel);\n"
     << "  CheckExecutable(keel);\n"
     << (needs_library_ ? "  OpenLibrary(o.library, kLibraryId);\n" : "  // No generated kernels: no kernel library is needed.\n")
     << "  InitDevice();\n  g_count = &g_lib;\n  ResolveKernels();\n  g_count = &g_load;\n  AllocateArenas();\n"
     << "  UploadConstants(keel);\n  AllocateInputs();\n  PinHostBlocks();\n  ReadInputs(o);\n\n"
     << "  g_count = &g_run;\n  Run();\n  // Device-to-host copies into host outputs are asynchronous: wait before reading them.\n"
     << "  CUDA_CHECK(cudaStreamSynchronize(g_stream));\n  g_count = &g_load;\n"
     << "  WriteOutputs(o);\n"
     << "  std::printf(\"cudaMalloc at load (arenas, constants, inputs): %\" PRIu64 \" calls, %\" PRIu64 \" bytes\\n\",\n"
     << "              g_load.mallocs, g_load.bytes);\n"
     << "  std::printf(\"cudaMalloc at load (library workspace, zero biases): %\" PRIu64 \" calls, %\" PRIu64 \" bytes\\n\",\n"
     << "              g_lib.mallocs, g_lib.bytes);\n"
     << "  std::printf(\"cudaMalloc during the run: %\" PRIu64 \" calls, %\" PRIu64 \" bytes; cudaFree during the run: %\" "
        "PRIu64 \" calls\\n\",\n              g_run.mallocs, g_run.bytes, g_run.frees);\n"
     << "  Cleanup();\n  return 0;\n}\n";
}

Result<std::string> Emitter::Emit() {
  KEEL_RETURN_IF_ERROR(Check());
  const fb::MemoryPlan* plan = root().memory_plan();
  const std::string strategy = plan != nullptr ? Str(plan->strategy()) : std::string();
  const std::string id = Str(root().kernel_library_id());
  o_ << "// Generated by keelc --emit=cuda-host" << (opt_.source_name.empty() ? "" : " from " + Com(opt_.source_name))
     << ": a standalone host program\n"
     << "// making, in order, the calls the Keel VM makes for " << Com(opt_.keel_path) << " (memory plan \""
     << Com(strategy) << "\",\n"
     << "// " << (main_fn().instructions() ? main_fn().instructions()->size() : 0) << " instructions, "
     << (root().kernels() ? root().kernels()->size() : 0) << " kernels). Producer: " << Com(Str(root().producer()))
     << ".\n//\n"
     << "// Build: nvcc -std=c++17 THIS.cu -o host -lcublasLt -lcudnn -lcuda -ldl\n"
     << "// Run:   ./host [--keel model.keel] [--library model.keel.so] [--input NAME=FILE ...]\n"
     << "//               [--output-dir DIR] [--trace] [--allow-tf32]\n"
     << "// It runs eagerly, like keel-run --no-cuda-graph (keel-run's CUDA graph replays these same calls).\n"
     << "// With --trace it prints keel-run --trace's line per instruction, less times and addresses.\n"
     << CudaHostPrelude() << "\n"
     << "// ================= model-specific part =================\n\n"
     << "[[maybe_unused]] static const char kLibraryId[] = " << Lit(id) << ";\n\n"
     << "// The executable must be the one this program was generated from.\n"
     << "static void CheckExecutable(const MappedFile& keel) {\n"
     << "  if (keel.size < " << U64(root().data_segment_offset() + root().data_segment_size())
     << " || std::memcmp(keel.data + 8, \"KEEL\", 4) != 0) Die(\"not the executable this program was generated from\");\n"
     << "}\n\n";
  KEEL_RETURN_IF_ERROR(EmitKernels());
  EmitLoad();
  KEEL_RETURN_IF_ERROR(EmitRun());
  EmitOutputsAndMain();
  return o_.str();
}

}  // namespace

Result<std::string> EmitCudaHostSource(std::span<const uint8_t> keel_file, const CudaHostOptions& options) {
  KEEL_ASSIGN_OR_RETURN(const ser::ExecutableView view, ser::ReadExecutable(keel_file));
  return Emitter(view, options).Emit();
}

Status WriteCudaHostProgram(const CudaHostOptions& options, const std::string& out_path) {
  std::ifstream in(options.keel_path, std::ios::binary);
  if (!in) return IoError("cannot read " + options.keel_path);
  // A vector of 8-byte words keeps the image aligned as ReadExecutable needs.
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<uint64_t> words((bytes.size() + 7) / 8);
  if (!bytes.empty()) std::memcpy(words.data(), bytes.data(), bytes.size());
  const std::span<const uint8_t> file(reinterpret_cast<const uint8_t*>(words.data()), bytes.size());
  Result<std::string> source = EmitCudaHostSource(file, options);
  if (!source.ok()) return source.status().WithContext(options.keel_path);
  const std::string tmp = out_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(source->data(), static_cast<std::streamsize>(source->size()));
    if (!out) return IoError("cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, out_path, ec);
  if (ec) return IoError("cannot rename " + tmp + " to " + out_path + ": " + ec.message());
  return Status::Ok();
}

}  // namespace keel::driver
