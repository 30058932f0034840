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


// The element type of a library kernel's data (its first argument; the VM
// checks the others match) as the program's cl::ElementType, from the shared
// table's names (vm/cuda/library_calls.h: f32, f16, bf16). Other types were
// refused by Emitter::Check.
ser::DType ArgDType(const fb::Kernel& k, size_t arg) {
  return k.args() != nullptr && k.args()->size() > arg ? ser::FromFb(k.args()->Get(arg)->dtype()) : ser::DType::kF32;
}

Result<std::string> LibraryElementType(const fb::Kernel& k, const std::string& name, size_t arg = 0) {
  const ser::DType t = ArgDType(k, arg);
  if (t == ser::DType::kF32) return std::string("cl::ElementType::kF32");
  if (t == ser::DType::kF16) return std::string("cl::ElementType::kF16");
  if (t == ser::DType::kBF16) return std::string("cl::ElementType::kBF16");
  return Unsupported("kernel " + name + " (" + Str(k.library_op()) + ") takes " + ser::DTypeName(t) + " tensors");
}

// vm/cuda/autotune.h DTypeSegment: "" for f32 (the keys from before half support), else "|<dtype>".
// A gemm's Y in f32 from half A and B adds "|to_f32" (GemmProblemKey's out_dtype).
std::string DTypeKeySegment(const fb::Kernel& k, int out_arg = -1) {
  const ser::DType t = ArgDType(k, 0);
  if (t == ser::DType::kF32) return std::string();
  const ser::DType out = out_arg < 0 ? t : ArgDType(k, static_cast<size_t>(out_arg));
  return std::string("|") + ser::DTypeName(t) + (out != t ? std::string("|to_") + ser::DTypeName(out) : "");
}

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
                       : IsCudnnConv(op)                          ? "ConvKernel"
                       : op == lo::kCudnnPool2d                   ? "PoolKernel"
                       : op == lo::kKeelAttention                 ? "AttentionKernel"
                       : op == lo::kKeelConv2d                    ? "KeelConvKernel"
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
    } else if (IsCudnnConv(p.op) || p.op == lo::kKeelConv2d) {
      KEEL_RETURN_IF_ERROR(EmitConv(i, k, p));
    } else if (p.op == lo::kKeelAttention) {
      KEEL_RETURN_IF_ERROR(EmitAttention(i, k, p));
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
  KEEL_ASSIGN_OR_RETURN(const int64_t has_res, at.Int(lo::attr::kHasResidual, 0));
  KEEL_ASSIGN_OR_RETURN(const std::string bias_mode, at.Text(lo::attr::kBiasBroadcast, lo::value::kBiasRow));
  KEEL_ASSIGN_OR_RETURN(const double alpha, at.Float(lo::attr::kAlpha, 1.0));
  KEEL_ASSIGN_OR_RETURN(const double beta, at.Float(lo::attr::kBeta, 1.0));
  KEEL_ASSIGN_OR_RETURN(const std::string epi, at.Text(lo::attr::kEpilogue, ""));
  if (m < 1 || n < 1 || kk < 1 || batch < 1 || batch > INT32_MAX) {
    return InvalidExecutable("kernel " + p.name + " (cublas.gemm): bad m/n/k/batch");
  }
  p.has_bias = has_bias != 0;
  p.full_bias = p.has_bias && bias_mode == lo::value::kBiasFull;
  p.has_residual = has_res != 0;
  if (p.full_bias && p.has_residual) {
    return InvalidExecutable("kernel " + p.name + " (cublas.gemm): a residual cannot go with a full bias");
  }
  const lo::EpilogueArgs gemm_order = lo::EpilogueArgOrder(p.has_bias, p.has_residual);
  p.bias_arg = gemm_order.bias;
  p.res_arg = gemm_order.residual;
  p.y_arg = gemm_order.y;
  if (NumArgs(k) != static_cast<size_t>(gemm_order.count()) + (k.workspace_bytes() > 0 ? 1 : 0)) {
    return InvalidExecutable("kernel " + p.name + " (cublas.gemm): wrong argument count");
  }
  if (!epi.empty() && epi != lo::value::kEpilogueRelu && epi != lo::value::kEpilogueGeluTanh) {
    return InvalidExecutable("kernel " + p.name + " (cublas.gemm): unknown epilogue " + epi);
  }
  const char* activation = epi == lo::value::kEpilogueRelu       ? "cl::GemmActivation::kRelu"
                           : epi == lo::value::kEpilogueGeluTanh ? "cl::GemmActivation::kGeluTanh"
                                                                 : "cl::GemmActivation::kNone";
  KEEL_ASSIGN_OR_RETURN(const std::string type, LibraryElementType(k, p.name));
  KEEL_ASSIGN_OR_RETURN(const std::string out_type, LibraryElementType(k, p.name, static_cast<size_t>(p.y_arg)));
  // vm/cuda/autotune.h GemmProblemKey less "|tf32<0|1>" (the program adds it: --allow-tf32).
  const std::string problem = "gemm|" + std::to_string(m) + "," + std::to_string(n) + "," + std::to_string(kk) + "," +
                              std::to_string(batch) + "," + std::to_string(ta) + std::to_string(tb) + "," +
                              std::to_string(sa) + "," + std::to_string(sb) + "|" + bias_mode +
                              std::to_string(p.has_bias ? 1 : 0) + (p.has_residual ? "+res" : "") + "|" + epi +
                              "|" + std::to_string(alpha) + "," +
                              std::to_string(beta) + DTypeKeySegment(k, p.y_arg);
  ++tuned_problems_;
  KEEL_ASSIGN_OR_RETURN(const std::string alpha_lit, FloatLit(alpha, true));
  KEEL_ASSIGN_OR_RETURN(const std::string beta_lit, FloatLit(p.full_bias ? beta : p.has_residual ? 1.0 : 0.0, true));

  // The descriptors are vm/cuda/library_calls_cublaslt.h's (CreateGemmDescriptors):
  // only the problem is written here.
  o_ << "  // kernel " << i << ": " << Com(p.name) << " (cublas.gemm) m=" << m << " n=" << n << " k=" << kk
     << " batch=" << batch << " trans_a=" << ta << " trans_b=" << tb << " bias=" << (p.has_bias ? bias_mode : "none")
     << (p.has_residual ? " +residual" : "") << " epilogue=\"" << Com(epi) << "\"\n"
     << "  {\n    GemmKernel& g = k" << i << ";\n    LtHandle();\n    cl::GemmProblem p;\n"
     << "    p.m = " << m << ";\n    p.n = " << n << ";\n    p.k = " << kk << ";\n    p.batch = " << batch << ";\n"
     << "    p.trans_a = " << (ta ? "true" : "false") << ";\n    p.trans_b = " << (tb ? "true" : "false") << ";\n"
     << "    p.stride_a = " << sa << ";\n    p.stride_b = " << sb << ";\n"
     << "    p.has_bias = g.has_bias = " << (p.has_bias ? "true" : "false") << ";\n"
     << "    p.full_bias = g.full_bias = " << (p.full_bias ? "true" : "false") << ";\n"
     << "    p.has_residual = g.has_residual = " << (p.has_residual ? "true" : "false") << ";\n"
     << "    p.activation = " << activation << ";\n    p.type = " << type << ";\n    p.out_type = " << out_type << ";\n"
     << "    p.allow_tf32 = g_allow_tf32;\n"
     << "    g.alpha = " << alpha_lit << ";\n    g.beta = " << beta_lit << ";\n"
     << "    GemmPlanKernel(g, p, " << Lit(p.name) << ", " << Lit(problem) << ");\n  }\n";
  return Status::Ok();
}

// Comma-separated values, for the int arrays of the N-d descriptor calls.
static std::string List(const std::vector<int64_t>& v) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r;
}

// The library attribute "layout": true for "nhwc" (serialization/library_ops.h).
Result<bool> ChannelsLast(const Attrs& at, const std::string& name, const char* op) {
  KEEL_ASSIGN_OR_RETURN(const std::string layout, at.Text(lo::attr::kLayout, lo::value::kLayoutNchw));
  if (layout != lo::value::kLayoutNchw && layout != lo::value::kLayoutNhwc) {
    return InvalidExecutable("kernel " + name + " (" + op + "): unknown layout " + layout);
  }
  return layout == lo::value::kLayoutNhwc;
}

Status Emitter::EmitConv(size_t i, const fb::Kernel& k, KernelPlan& p) {
  const bool transposed = p.op == lo::kCudnnConvTranspose;
  const std::string what = " (" + p.op + ")";
  // The spatial rank comes from X (1, 2 or 3): the attributes' lengths follow it.
  const std::vector<int64_t> x_shape = ArgShape(k, 0);
  const size_t spatial = common::ConvSpatialDims(x_shape.size());
  if (spatial == 0) {
    return InvalidExecutable("kernel " + p.name + what + ": X must have 1 to 3 spatial dims (rank 3 to 5), got " +
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
  KEEL_ASSIGN_OR_RETURN(const bool nhwc, ChannelsLast(at, p.name, p.op.c_str()));
  if (nhwc && spatial < 2) {
    return Unsupported("kernel " + p.name + what + ": layout nhwc needs 2 or 3 spatial dims");
  }
  const bool clip = act == lo::value::kActivationClip;
  if (!act.empty() && act != lo::value::kActivationRelu && !clip) {
    return InvalidExecutable("kernel " + p.name + what + ": unknown activation " + act);
  }
  p.has_bias = has_bias != 0;
  p.has_residual = has_res != 0;
  const lo::EpilogueArgs order = lo::EpilogueArgOrder(p.has_bias, p.has_residual);
  p.bias_arg = order.bias;
  p.res_arg = order.residual;
  p.y_arg = order.y;
  if (NumArgs(k) != static_cast<size_t>(order.count()) + (k.workspace_bytes() > 0 ? 1 : 0)) {
    return InvalidExecutable("kernel " + p.name + what + ": wrong argument count");
  }
  const std::vector<int64_t> xs = x_shape, ws = ArgShape(k, 1), ys = ArgShape(k, static_cast<size_t>(p.y_arg));
  // The VM's own check and cuDNN view (common/conv_geometry.h, on channels-first
  // shapes; transposed: the forward convolution's, X and Y exchanged): 1-D lifted to 2-D.
  auto first = [nhwc](const std::vector<int64_t>& s) { return nhwc ? common::ChannelsFirstShape(s) : s; };
  Result<common::CudnnConvGeometry> geometry =
      (transposed ? common::MakeCudnnConvTransposeGeometry : common::MakeCudnnConvGeometry)(
          first(xs), first(ws), first(ys), pads, strides, dil, group);
  if (!geometry.ok()) return geometry.status().WithContext("kernel " + p.name + what);
  const common::CudnnConvGeometry& g = *geometry;
  const int act_kind = act == lo::value::kActivationRelu ? 1 : clip ? 2 : 0;
  KEEL_ASSIGN_OR_RETURN(const std::string type, LibraryElementType(k, p.name));
  KEEL_ASSIGN_OR_RETURN(const std::string clip_lit, FloatLit(clip_max, false));
  if (p.op == lo::kKeelConv2d) return EmitKeelConv(i, g, act_kind, clip_lit, type, nhwc, p);
  // vm/cuda/autotune.h ConvProblemKey less "|tf32<0|1>" (the program adds it: --allow-tf32).
  const std::string problem = std::string(transposed ? "conv_transpose|" : "conv|") + ShapeText(xs) +
                              ShapeText(ws) + ShapeText(ys) + ShapeText(pads) + ShapeText(strides) + ShapeText(dil) +
                              "|g" + std::to_string(group) + "|b" + std::to_string(p.has_bias ? 1 : 0) + "|r" + std::to_string(p.has_residual ? 1 : 0) +
                              "|a" + std::to_string(act_kind) + (nhwc ? "|nhwc" : "") + DTypeKeySegment(k);
  ++tuned_problems_;
  o_ << "  // kernel " << i << ": " << Com(p.name) << " (" << p.op << ", " << spatial << "-D) X" << ShapeText(xs)
     << " W" << ShapeText(ws) << " Y" << ShapeText(ys) << " pads " << ShapeText(pads) << " strides "
     << ShapeText(strides) << " dilations " << ShapeText(dil) << " group " << group
     << (p.has_bias ? " +bias" : "") << (p.has_residual ? " +residual" : "") << " activation \"" << Com(act)
     << "\"\n";
  if (spatial == 1) o_ << "  // cuDNN convolves 2-D and 3-D problems: this 1-D one runs with a unit height.\n";
  // The descriptors are vm/cuda/library_calls_cudnn.h's (CreateConvDescriptors) over
  // the VM's cuDNN view of the problem (common/conv_geometry.h): only the view is written here.
  o_ << "  {\n    ConvKernel& c = k" << i << ";\n    CudnnHandle();\n"
     << "    c.p.x = {" << List(g.x) << "};\n"
     << "    c.p.w = {" << List(g.w) << "};\n"
     << "    c.p.y = {" << List(g.y) << "};\n"
     << "    c.p.pads = {" << List(g.pads) << "};\n"
     << "    c.p.strides = {" << List(g.strides) << "};\n"
     << "    c.p.dilations = {" << List(g.dilations) << "};\n"
     << "    c.p.group = " << group << ";\n"
     << "    c.p.has_bias = " << (p.has_bias ? "true" : "false") << ";\n"
     << "    c.p.has_residual = " << (p.has_residual ? "true" : "false") << ";\n"
     << "    c.p.activation = " << act_kind << ";  // " << (act.empty() ? "none" : Com(act)) << "\n"
     << "    c.p.clip_max = " << clip_lit << ";\n"
     << "    c.p.type = " << type << ";\n"
     << "    c.p.allow_tf32 = g_allow_tf32;\n"
     << (nhwc ? "    c.p.nhwc = true;  // layout nhwc: X, residual, Y channels-last, W KRSC\n" : "")
     << (transposed ? "    c.p.transposed = true;  // the data gradient of this forward convolution\n" : "")
     << "    ConvPlanKernel(c, " << Lit(p.name) << ", " << Lit(problem) << ");\n  }\n";
  return Status::Ok();
}

// keel.conv2d: cudnn.conv2d's attributes, checked by EmitConv, as the VM's
// KeelConv::Plan fills the kernel's argument block (library_calls_conv.h).
Status Emitter::EmitKeelConv(size_t i, const common::CudnnConvGeometry& g, int act_kind, const std::string& clip_lit,
                             const std::string& type, bool nhwc, KernelPlan& p) {
  if (!nhwc || g.spatial != 2 || g.group != 1) {
    return Unsupported("kernel " + p.name + " (keel.conv2d): takes 2-D layout nhwc convolutions of group 1 only");
  }
  o_ << "  // kernel " << i << ": " << Com(p.name) << " (keel.conv2d) X" << ShapeText(g.x) << " W" << ShapeText(g.w)
     << " Y" << ShapeText(g.y) << " (channels-first views)" << (p.has_bias ? " +bias" : "")
     << (p.has_residual ? " +residual" : "") << " activation " << act_kind << "\n"
     << "  {\n    KeelConvKernel& c = k" << i << ";\n"
     << "    c.args.n = " << g.x[0] << ";\n    c.args.c = " << g.x[1] << ";\n    c.args.h = " << g.x[2]
     << ";\n    c.args.w_in = " << g.x[3] << ";\n    c.args.k = " << g.y[1] << ";\n    c.args.oh = " << g.y[2]
     << ";\n    c.args.ow = " << g.y[3] << ";\n    c.args.r = " << g.w[2] << ";\n    c.args.s = " << g.w[3]
     << ";\n    c.args.sh = " << g.strides[0] << ";\n    c.args.sw = " << g.strides[1] << ";\n    c.args.ph = "
     << g.pads[0] << ";\n    c.args.pw = " << g.pads[1] << ";\n    c.args.dh = " << g.dilations[0]
     << ";\n    c.args.dw = " << g.dilations[1] << ";\n    c.args.act = " << act_kind
     << ";\n    c.args.clip_max = " << clip_lit << ";\n"
     << "    KeelConvPlanKernel(c, " << type << ", " << Lit(p.name) << ");\n  }\n";
  return Status::Ok();
}

Status Emitter::EmitPool(size_t i, const fb::Kernel& k, KernelPlan& p) {
  Attrs at(k);
  KEEL_ASSIGN_OR_RETURN(const std::string mode, at.Text(lo::attr::kMode, nullptr));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> kernel, at.Ints(lo::attr::kKernel, 2, {}));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> pads, at.Ints(lo::attr::kPads, 4, {0, 0, 0, 0}));
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> strides, at.Ints(lo::attr::kStrides, 2, {1, 1}));
  KEEL_ASSIGN_OR_RETURN(const bool nhwc, ChannelsLast(at, p.name, "cudnn.pool2d"));
  const char* m = mode == lo::value::kPoolMax               ? "CUDNN_POOLING_MAX"
                  : mode == lo::value::kPoolAvg             ? "CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING"
                  : mode == lo::value::kPoolAvgExcludePad ? "CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING"
                                                            : nullptr;
  if (m == nullptr) return InvalidExecutable("kernel " + p.name + " (cudnn.pool2d): unknown mode " + mode);
  const std::vector<int64_t> xs = ArgShape(k, 0), ys = ArgShape(k, 1);
  if (NumArgs(k) != 2 || xs.size() != 4 || ys.size() != 4) {
    return InvalidExecutable("kernel " + p.name + " (cudnn.pool2d): expected X, Y in NCHW");
  }
  if (pads[0] != pads[2] || pads[1] != pads[3]) {
    return Unsupported("kernel " + p.name + " (cudnn.pool2d): asymmetric pads " + ShapeText(pads));
  }
  KEEL_ASSIGN_OR_RETURN(const std::string type, LibraryElementType(k, p.name));
  o_ << "  // kernel " << i << ": " << Com(p.name) << " (cudnn.pool2d) " << Com(mode) << " X" << ShapeText(xs)
     << " Y" << ShapeText(ys) << " kernel " << ShapeText(kernel) << " pads " << ShapeText(pads) << " strides "
     << ShapeText(strides) << "\n"
     << "  {\n    PoolKernel& p = k" << i << ";\n    CudnnHandle();\n"
     << "    const int x[4] = {" << List(nhwc ? common::ChannelsFirstShape(xs) : xs) << "}, y[4] = {"
     << List(nhwc ? common::ChannelsFirstShape(ys) : ys) << "};  // channels-first dims\n"
     << "    const int window[2] = {" << List(kernel) << "}, pads[2] = {" << pads[0] << ", " << pads[1]
     << "}, strides[2] = {" << List(strides) << "};\n"
     << "    int out[4] = {0, 0, 0, 0};\n"
     << "    LIB_CHECK(cl::CreatePoolDescriptors(x, y, " << m << ", window, pads, strides, " << type << ", "
     << (nhwc ? "true" : "false") << ", &p.d, out));\n"
     << "    if (out[0] != y[0] || out[1] != y[1] || out[2] != y[2] || out[3] != y[3]) Die(\"kernel \" " << Lit(p.name)
     << " \": Y does not match the pooling\");\n"
     << "    p.call = " << Lit("cudnnPoolingForward mode=" + mode + (nhwc ? " layout=nhwc" : "")) << ";\n  }\n";
  return Status::Ok();
}

// vm/cuda/attention_kernel.cc KeelAttention::Plan: the argument block from the
// attributes (the VM checked the views against the arguments when it loaded
// this executable; the program runs only the executable it came from).
Status Emitter::EmitAttention(size_t i, const fb::Kernel& k, KernelPlan& p) {
  Attrs at(k);
  const fb::Attr* batch_attr = at.Find(lo::attr::kBatch);
  const std::vector<int64_t> radix = batch_attr && batch_attr->ints()
                                         ? std::vector<int64_t>(batch_attr->ints()->begin(), batch_attr->ints()->end())
                                         : std::vector<int64_t>();
  if (radix.size() > static_cast<size_t>(lo::kAttentionMaxBatchDigits)) {
    return InvalidExecutable("kernel " + p.name + " (keel.attention): too many batch digits");
  }
  KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> dims, at.Ints(lo::attr::kDims, 4, {}));
  KEEL_ASSIGN_OR_RETURN(const double scale, at.Float(lo::attr::kScale, 1.0));
  p.has_mask = at.Find(lo::attr::kMaskView) != nullptr;
  p.y_arg = p.has_mask ? 4 : 3;
  if (NumArgs(k) != static_cast<size_t>(p.y_arg + 1)) {
    return InvalidExecutable("kernel " + p.name + " (keel.attention): wrong argument count");
  }
  KEEL_ASSIGN_OR_RETURN(const std::string type, LibraryElementType(k, p.name));
  KEEL_ASSIGN_OR_RETURN(const std::string scale_lit, FloatLit(scale, true));
  o_ << "  // kernel " << i << ": " << Com(p.name) << " (keel.attention) batch " << ShapeText(radix) << " dims "
     << ShapeText(dims) << (p.has_mask ? " +mask" : "") << "\n"
     << "  {\n    AttentionKernel& a = k" << i << ";\n"
     << "    a.args.digits = " << radix.size() << ";\n";
  for (size_t t = 0; t < radix.size(); ++t) o_ << "    a.args.radix[" << t << "] = " << radix[t] << ";\n";
  o_ << "    a.args.sq = " << dims[0] << ";\n    a.args.sk = " << dims[1] << ";\n    a.args.d = " << dims[2]
     << ";\n    a.args.dv = " << dims[3] << ";\n    a.args.scale = " << scale_lit << ";\n";
  const std::pair<const char*, const char*> views[] = {{lo::attr::kQView, "qv"}, {lo::attr::kKView, "kv"},
                                                       {lo::attr::kVView, "vv"}, {lo::attr::kYView, "yv"},
                                                       {lo::attr::kMaskView, "mv"}};
  for (const auto& [key, field] : views) {
    if (at.Find(key) == nullptr && std::string(key) == lo::attr::kMaskView) continue;
    KEEL_ASSIGN_OR_RETURN(const std::vector<int64_t> v, at.Ints(key, radix.size() + 3, {}));
    o_ << "    a.args." << field << ".offset = " << v[0] << ";\n";
    for (size_t t = 0; t < radix.size(); ++t) o_ << "    a.args." << field << ".batch[" << t << "] = " << v[1 + t] << ";\n";
    o_ << "    a.args." << field << ".row = " << v[radix.size() + 1] << ";\n    a.args." << field
       << ".col = " << v[radix.size() + 2] << ";\n";
  }
  if (p.has_mask) {
    const bool f32 = ser::FromFb(k.args()->Get(3)->dtype()) == ser::DType::kF32;
    o_ << "    a.args.mask_f32 = " << (f32 ? 1 : 0) << ";\n";
  }
  o_ << "    AttentionPlanKernel(a, " << type << ", " << (p.has_mask ? "true" : "false") << ", " << Lit(p.name)
     << ");\n  }\n";
  return Status::Ok();
}

}  // namespace keel::driver::cuda_host
