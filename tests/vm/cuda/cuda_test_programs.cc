// tests/vm/cuda/cuda_test_programs.cc — see cuda_test_programs.h.
#include "tests/vm/cuda/cuda_test_programs.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>

#include "apps/common/vm_env.h"

namespace keel::cudatest {

bool GpuAvailable(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    *why = std::string("no GPU: cudaGetDeviceCount failed: ") + cudaGetErrorString(e);
    return false;
  }
  if (count == 0) {
    *why = "no GPU: cudaGetDeviceCount returned 0";
    return false;
  }
  return true;
}

std::string LibraryPath(const char* build_path) {
  const char* dir = std::getenv("KEEL_CUDA_TEST_LIB_DIR");
  std::string p = build_path;
  if (dir == nullptr || *dir == '\0') return p;
  const size_t slash = p.rfind('/');
  return std::string(dir) + "/" + (slash == std::string::npos ? p : p.substr(slash + 1));
}

namespace {

uint64_t Count(const std::vector<int64_t>& s) {
  uint64_t n = 1;
  for (int64_t d : s) n *= static_cast<uint64_t>(d);
  return n;
}
int64_t Elements(const std::vector<int64_t>& s) { return static_cast<int64_t>(Count(s)); }
uint64_t Align256(uint64_t v) { return (v + 255) / 256 * 256; }

std::vector<ser::KernelArgDesc> Args(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<ser::KernelArgDesc> args;
  for (size_t i = 0; i < shapes.size(); ++i) {
    ser::KernelArgDesc a;
    a.shape = shapes[i];
    a.access = i + 1 == shapes.size() ? ser::ArgAccess::kWrite : ser::ArgAccess::kRead;
    args.push_back(a);
  }
  return args;
}

}  // namespace

ser::KernelDesc GeneratedKernel(std::string name, std::vector<std::vector<int64_t>> arg_shapes, uint32_t grid,
                                uint32_t block) {
  ser::KernelDesc d;
  d.name = std::move(name);
  d.kind = ser::KernelKind::kCudaGenerated;
  d.device = ser::DeviceKind::kCuda;
  d.args = Args(arg_shapes);
  ser::LaunchDesc l;
  l.grid = {grid, 1, 1};
  l.block = {block, 1, 1};
  d.launch = l;
  return d;
}

ser::KernelDesc LibraryKernel(std::string name, std::string op, std::vector<std::vector<int64_t>> arg_shapes,
                              std::vector<ser::AttrDesc> attrs) {
  ser::KernelDesc d;
  d.name = std::move(name);
  d.kind = ser::KernelKind::kLibrary;
  d.device = ser::DeviceKind::kCuda;
  d.library_op = std::move(op);
  d.args = Args(arg_shapes);
  d.attrs = std::move(attrs);
  return d;
}

ProgramSpec InDType(ProgramSpec p, ser::DType t) {
  p.dtype = t;
  for (ser::KernelDesc& k : p.kernels)
    for (ser::KernelArgDesc& a : k.args) a.dtype = t;
  return p;
}

std::vector<uint8_t> EncodeAs(const std::vector<float>& v, DataType t) {
  if (t == DataType::kF32) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  // Other types appear only in tests of refused kernels: zeros of the right size.
  if (t != DataType::kF16 && t != DataType::kBF16) return std::vector<uint8_t>(v.size() * DataTypeSize(t), 0);
  std::vector<uint8_t> b(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t bits = 0;
    if (t == DataType::kF16) {
      const __half h = __float2half_rn(v[i]);
      std::memcpy(&bits, &h, 2);
    } else {
      const __nv_bfloat16 h = __float2bfloat16_rn(v[i]);
      std::memcpy(&bits, &h, 2);
    }
    std::memcpy(b.data() + 2 * i, &bits, 2);
  }
  return b;
}

std::vector<float> DecodeFrom(const uint8_t* bytes, size_t count, DataType t) {
  std::vector<float> v(count);
  if (t == DataType::kF32) {
    std::memcpy(v.data(), bytes, count * 4);
    return v;
  }
  if (t != DataType::kF16 && t != DataType::kBF16) return v;  // zeros (see EncodeAs)
  for (size_t i = 0; i < count; ++i) {
    if (t == DataType::kF16) {
      __half h;
      std::memcpy(&h, bytes + 2 * i, 2);
      v[i] = __half2float(h);
    } else {
      __nv_bfloat16 h;
      std::memcpy(&h, bytes + 2 * i, 2);
      v[i] = __bfloat162float(h);
    }
  }
  return v;
}

std::vector<float> RoundedTo(const std::vector<float>& v, DataType t) {
  return DecodeFrom(EncodeAs(v, t).data(), v.size(), t);
}

Result<std::vector<uint8_t>> BuildProgram(const ProgramSpec& spec) {
  using ser::DeviceKind;
  using ser::DType;
  ser::ExecutableWriter w;
  w.AddTarget(DeviceKind::kCuda, "sm_90");
  for (const ser::KernelDesc& k : spec.kernels) w.AddKernel(k);
  if (!spec.library_id.empty()) w.SetKernelLibraryId(spec.library_id);
  const size_t nt = spec.tensors.size();
  std::vector<uint32_t> const_index(nt, 0), slot(nt, 0), host_slot(nt, 0);
  ser::MemoryPlanDesc plan;
  plan.strategy = "test";
  uint64_t dev_off = 0, host_off = 0;
  std::vector<ser::TensorSigDesc> params, results;
  for (size_t t = 0; t < nt; ++t) {
    const TensorSpec& ts = spec.tensors[t];
    const ser::DType dt = spec.DTypeOf(t);
    const uint64_t bytes = Count(ts.shape) * ser::DTypeSize(dt);
    if (ts.role == Role::kConst) {
      std::vector<float> values(Count(ts.shape), 0.f);
      std::copy_n(ts.data.begin(), std::min(values.size(), ts.data.size()), values.begin());
      const_index[t] = w.AddConstant("c" + std::to_string(t), dt, ts.shape, DeviceKind::kCuda, EncodeAs(values, dt));
      continue;
    }
    slot[t] = static_cast<uint32_t>(plan.storages.size());
    plan.storages.push_back({bytes, 256, DeviceKind::kCuda, 0, dev_off});
    dev_off = Align256(dev_off + bytes);
    if (ts.role == Role::kInput) {
      params.push_back({"in" + std::to_string(params.size()), ts.shape, dt, DeviceKind::kCpu});
    }
    if (ts.role == Role::kOutput) {
      host_slot[t] = static_cast<uint32_t>(plan.storages.size());
      plan.storages.push_back({bytes, 64, DeviceKind::kCpu, 1, host_off});
      host_off = Align256(host_off + bytes);
      results.push_back({"out" + std::to_string(results.size()), ts.shape, dt, DeviceKind::kCpu});
    }
  }
  plan.arenas.push_back({DeviceKind::kCuda, spec.device_arena_override ? spec.device_arena_override : dev_off, 256});
  plan.arenas.push_back({DeviceKind::kCpu, std::max<uint64_t>(host_off, 64), 64});
  w.SetMemoryPlan(plan);

  auto& f = w.AddFunction("main", params, results, 0);
  uint32_t next = static_cast<uint32_t>(params.size());
  std::vector<uint32_t> reg(nt, 0);
  for (size_t t = 0; t < nt; ++t) {
    const TensorSpec& ts = spec.tensors[t];
    if (ts.role == Role::kConst) {
      reg[t] = next++;
      f.LoadConst(reg[t], const_index[t]);
    } else {
      const uint32_t s = next++;
      reg[t] = next++;
      f.AllocStorage(s, slot[t]).AllocTensor(reg[t], s, 0, ts.shape, spec.DTypeOf(t));
    }
  }
  uint32_t param = 0;
  for (size_t t = 0; t < nt; ++t) {
    if (spec.tensors[t].role != Role::kInput) continue;
    f.Copy(reg[t], param, "upload in" + std::to_string(param));
    ++param;
  }
  for (const OpSpec& op : spec.ops) {
    std::vector<uint32_t> args;
    for (uint32_t t : op.tensors) args.push_back(reg[t]);
    f.Invoke(op.kernel, args, op.debug_name);
  }
  std::vector<uint32_t> ret;
  for (size_t t = 0; t < nt; ++t) {
    if (spec.tensors[t].role != Role::kOutput) continue;
    const uint32_t s = next++;
    const uint32_t v = next++;
    f.AllocStorage(s, host_slot[t])
        .AllocTensor(v, s, 0, spec.tensors[t].shape, spec.DTypeOf(t))
        .Copy(v, reg[t], "download");
    ret.push_back(v);
  }
  f.Ret(ret);
  f.SetNumRegisters(next);
  return w.Finish();
}

RunResult RunOnce(const std::vector<uint8_t>& bytes, const std::string& library,
                  const std::vector<std::vector<float>>& inputs, const VmOptions& options) {
  RunResult r;
  LoadOptions lo;
  lo.library_path = library;
  auto exe = Executable::LoadMemory(bytes, lo);
  if (!exe.ok()) {
    r.status = exe.status();
    return r;
  }
  // The GPU scripts steer the tests as they steer keel-run (KEEL_CUDNN_ENGINES=force, ...).
  VmOptions o = options;
  tools::ApplyEnvironmentOverrides(o);
  auto vm = VirtualMachine::Create(*exe, o);
  if (!vm.ok()) {
    r.status = vm.status();
    return r;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& info = (*exe)->input(i);
    const std::vector<uint8_t> in = EncodeAs(inputs[i], info.dtype);
    r.status = (*vm)->SetInput(i, in.data(), in.size(), info.shape, info.dtype);
    if (!r.status.ok()) return r;
  }
  r.status = (*vm)->Run();
  if (!r.status.ok()) return r;
  for (size_t j = 0; j < (*exe)->num_outputs(); ++j) {
    const TensorInfo& info = (*exe)->output(j);
    std::vector<uint8_t> out(info.byte_size);
    r.status = (*vm)->CopyOutputToHost(j, out.data(), out.size());
    if (!r.status.ok()) return r;
    r.outputs.push_back(DecodeFrom(out.data(), info.byte_size / DataTypeSize(info.dtype), info.dtype));
  }
  return r;
}

void ExpectMatchesWithAndWithoutGraphs(const ProgramSpec& p, const std::vector<std::vector<float>>& inputs,
                                       const std::vector<float>& want, double tolerance, const VmOptions& base,
                                       std::vector<std::string>* calls) {
  auto bytes = BuildProgram(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  for (bool graph : {true, false}) {
    SCOPED_TRACE(graph ? "cuda graph" : "no graph");
    CallRecorder rec;
    VmOptions o = base;
    o.device = "cuda";
    o.cuda_graph = graph;
    if (!graph && calls != nullptr) o.trace = &rec;
    RunResult r = RunOnce(*bytes, "", inputs, o);
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_EQ(r.outputs.size(), 1u);
    EXPECT_LE(RelL2(r.outputs[0], want), tolerance);
    if (!graph && calls != nullptr) *calls = rec.calls;
  }
}

std::vector<float> Random(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

double RelL2(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

std::vector<float> ReferenceGemm(const GemmRef& g, const std::vector<float>& a, const std::vector<float>& b,
                                 const std::vector<float>& bias, const std::vector<float>& residual) {
  const int64_t sa = g.stride_a >= 0 ? g.stride_a : g.m * g.k;
  const int64_t sb = g.stride_b >= 0 ? g.stride_b : g.k * g.n;
  std::vector<float> y(static_cast<size_t>(g.batch * g.m * g.n));
  for (int64_t bt = 0; bt < g.batch; ++bt) {
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          const double av = g.trans_a ? a[bt * sa + p * g.m + i] : a[bt * sa + i * g.k + p];
          const double bv = g.trans_b ? b[bt * sb + j * g.k + p] : b[bt * sb + p * g.n + j];
          acc += av * bv;
        }
        double v = g.alpha * acc;
        if (g.bias == 1) v += bias[j];
        if (g.bias == 2) v += g.beta * bias[i * g.n + j];
        if (g.residual) v += residual[(bt * g.m + i) * g.n + j];
        if (g.epilogue == "relu") v = std::max(v, 0.0);
        if (g.epilogue == "gelu_tanh") v = 0.5 * v * (1 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
        y[(bt * g.m + i) * g.n + j] = static_cast<float>(v);
      }
    }
  }
  return y;
}

std::vector<int64_t> ConvNdRef::out() const {
  std::vector<int64_t> o;
  for (size_t i = 0; i < in.size(); ++i) {
    if (transposed) {
      const int64_t extra = output_padding.empty() ? 0 : output_padding[i];
      o.push_back(strides[i] * (in[i] - 1) + extra + dilations[i] * (kernel[i] - 1) + 1 - 2 * pads[i]);
    } else {
      o.push_back((in[i] + 2 * pads[i] - dilations[i] * (kernel[i] - 1) - 1) / strides[i] + 1);
    }
  }
  return o;
}

ConvNdRef ToNd(const ConvRef& c) {
  ConvNdRef r;
  r.n = c.n;
  r.c = c.c;
  r.k = c.k;
  r.group = c.group;
  r.in = {c.h, c.w};
  r.kernel = {c.r, c.s};
  r.pads = {c.pad_h, c.pad_w};
  r.strides = {c.stride_h, c.stride_w};
  r.dilations = {c.dil_h, c.dil_w};
  r.activation = c.activation;
  r.clip_max = c.clip_max;
  return r;
}

std::vector<float> ReferenceConv(const ConvRef& c, const std::vector<float>& x, const std::vector<float>& w,
                                 const std::vector<float>* bias, const std::vector<float>* residual) {
  return ReferenceConvNd(ToNd(c), x, w, bias, residual);
}

namespace {
// Row-major odometer: the next index of `dims` (false after the last one).
bool Next(std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  for (size_t i = idx.size(); i-- > 0;) {
    if (++idx[i] < dims[i]) return true;
    idx[i] = 0;
  }
  return false;
}
}  // namespace

std::vector<float> ReferenceConvNd(const ConvNdRef& c, const std::vector<float>& x, const std::vector<float>& w,
                                   const std::vector<float>* bias, const std::vector<float>* residual) {
  const std::vector<int64_t> out = c.out();
  const size_t sp = c.in.size();
  const int64_t cg = c.c / c.group, kg = c.k / c.group;
  // Transposed: output o gathers input i and tap r where o = i * stride - pad + r * dilation.
  auto input_index = [&](size_t d, int64_t o, int64_t r, int64_t* i) {
    if (!c.transposed) {
      *i = o * c.strides[d] - c.pads[d] + r * c.dilations[d];
      return *i >= 0 && *i < c.in[d];
    }
    const int64_t num = o + c.pads[d] - r * c.dilations[d];
    *i = num / c.strides[d];
    return num >= 0 && num % c.strides[d] == 0 && *i < c.in[d];
  };
  const int64_t in_vol = Elements(c.in), out_vol = Elements(out), k_vol = Elements(c.kernel);
  std::vector<float> y(static_cast<size_t>(c.n * c.k * out_vol));
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t k = 0; k < c.k; ++k) {
      const int64_t g = k / kg;
      std::vector<int64_t> o(sp, 0);
      for (int64_t oi = 0; oi < out_vol; ++oi, Next(o, out)) {
        double acc = 0;
        for (int64_t ci = 0; ci < cg; ++ci) {
          std::vector<int64_t> r(sp, 0);
          for (int64_t ri = 0; ri < k_vol; ++ri, Next(r, c.kernel)) {
            int64_t flat = 0;
            bool inside = true;
            for (size_t d = 0; d < sp && inside; ++d) {
              int64_t i = 0;
              inside = input_index(d, o[d], r[d], &i);
              flat = flat * c.in[d] + i;
            }
            if (!inside) continue;
            // W: [k, c/group, kernel...], transposed [c, k/group, kernel...].
            const int64_t w_at = c.transposed ? ((g * cg + ci) * kg + k - g * kg) * k_vol + ri : (k * cg + ci) * k_vol + ri;
            acc += static_cast<double>(x[static_cast<size_t>((n * c.c + g * cg + ci) * in_vol + flat)]) *
                   w[static_cast<size_t>(w_at)];
          }
        }
        const size_t at = static_cast<size_t>((n * c.k + k) * out_vol + oi);
        if (bias) acc += (*bias)[static_cast<size_t>(k)];
        if (residual) acc += (*residual)[at];
        if (c.activation == "relu") acc = std::max(acc, 0.0);
        if (c.activation == "clip") acc = std::min(std::max(acc, 0.0), static_cast<double>(c.clip_max));
        y[at] = static_cast<float>(acc);
      }
    }
  return y;
}

std::vector<float> ReferencePool(const PoolRef& pr, const std::vector<float>& x) {
  const int64_t P = pr.out_h(), Q = pr.out_w();
  std::vector<float> y(static_cast<size_t>(pr.n * pr.c * P * Q));
  for (int64_t nc = 0; nc < pr.n * pr.c; ++nc)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q) {
        double acc = pr.mode == "max" ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t count = 0;
        for (int64_t r = 0; r < pr.kh; ++r)
          for (int64_t s = 0; s < pr.kw; ++s) {
            const int64_t ih = p * pr.stride_h - pr.pad_h + r, iw = q * pr.stride_w - pr.pad_w + s;
            if (ih < 0 || ih >= pr.h || iw < 0 || iw >= pr.w) continue;
            const double v = x[(nc * pr.h + ih) * pr.w + iw];
            acc = pr.mode == "max" ? std::max(acc, v) : acc + v;
            ++count;
          }
        if (pr.mode == "avg") acc /= static_cast<double>(pr.kh * pr.kw);
        if (pr.mode == "avg_exclude_pad") acc /= static_cast<double>(count);
        y[(nc * P + p) * Q + q] = static_cast<float>(acc);
      }
  return y;
}

ConvProgram MakeConvProgram(const ConvRef& c, bool bias, bool residual, uint32_t seed) {
  return MakeConvNdProgram(ToNd(c), bias, residual, seed);
}

ConvProgram MakeConvNdProgram(const ConvNdRef& c, bool bias, bool residual, uint32_t seed, DataType dtype) {
  using ser::AttrDesc;
  std::vector<int64_t> xs = {c.n, c.c}, ys = {c.n, c.k};
  std::vector<int64_t> ws = c.transposed ? std::vector<int64_t>{c.c, c.k / c.group} : std::vector<int64_t>{c.k, c.c / c.group};
  const std::vector<int64_t> out = c.out();
  xs.insert(xs.end(), c.in.begin(), c.in.end());
  ws.insert(ws.end(), c.kernel.begin(), c.kernel.end());
  ys.insert(ys.end(), out.begin(), out.end());
  std::vector<int64_t> pads = c.pads;  // every begin, then every end (symmetric)
  pads.insert(pads.end(), c.pads.begin(), c.pads.end());
  const auto x = RoundedTo(Random(static_cast<size_t>(Elements(xs)), seed), dtype);
  const auto w = RoundedTo(Random(static_cast<size_t>(Elements(ws)), seed + 1, -0.5f, 0.5f), dtype);
  const auto b = RoundedTo(Random(static_cast<size_t>(c.k), seed + 2), dtype);
  const auto res = RoundedTo(Random(static_cast<size_t>(Elements(ys)), seed + 3), dtype);
  std::vector<AttrDesc> attrs = {AttrDesc::Ints("pads", pads), AttrDesc::Ints("strides", c.strides),
                                 AttrDesc::Ints("dilations", c.dilations), AttrDesc::Ints("group", {c.group}),
                                 AttrDesc::Str("activation", c.activation)};
  if (c.activation == "clip") {
    attrs.push_back(AttrDesc::Floats("clip_min", {0.0}));
    attrs.push_back(AttrDesc::Floats("clip_max", {c.clip_max}));
  }
  ConvProgram result;
  ProgramSpec& p = result.spec;
  p.tensors = {{xs, Role::kInput, {}}, {ws, Role::kConst, w}};
  std::vector<std::vector<int64_t>> shapes = {xs, ws};
  result.inputs = {x};
  if (bias) {
    attrs.push_back(AttrDesc::Ints("has_bias", {1}));
    p.tensors.push_back({{c.k}, Role::kConst, b});
    shapes.push_back({c.k});
  }
  if (residual) {
    attrs.push_back(AttrDesc::Ints("has_residual", {1}));
    p.tensors.push_back({ys, Role::kInput, {}});
    shapes.push_back(ys);
    result.inputs.push_back(res);
  }
  p.tensors.push_back({ys, Role::kOutput, {}});
  shapes.push_back(ys);
  p.kernels.push_back(LibraryKernel("conv", c.transposed ? "cudnn.conv_transpose" : "cudnn.conv2d", shapes, attrs));
  std::vector<uint32_t> args;
  for (uint32_t t = 0; t < p.tensors.size(); ++t) args.push_back(t);
  p.ops = {{0, args, "conv"}};
  result.want = ReferenceConvNd(c, x, w, bias ? &b : nullptr, residual ? &res : nullptr);
  if (dtype != DataType::kF32) p = InDType(std::move(p), dtype);
  return result;
}

Status CreateOneKernelVm(const ser::KernelDesc& k, ProgramSpec base) {
  base.kernels = {k};
  std::vector<uint32_t> args;
  for (uint32_t t = 0; t < base.tensors.size(); ++t) args.push_back(t);
  base.ops = {{0, args, "k"}};
  auto bytes = BuildProgram(base);
  if (!bytes.ok()) return bytes.status();
  auto exe = Executable::LoadMemory(*bytes);
  if (!exe.ok()) return exe.status();
  VmOptions o;
  o.device = "cuda";
  auto vm = VirtualMachine::Create(*exe, o);
  return vm.ok() ? Status::Ok() : vm.status();
}

std::vector<int64_t> Nhwc(const std::vector<int64_t>& s) {
  std::vector<int64_t> r = {s[0]};
  r.insert(r.end(), s.begin() + 2, s.end());
  r.push_back(s[1]);
  return r;
}
std::vector<float> Nhwc(const std::vector<float>& v, const std::vector<int64_t>& s) {
  int64_t inner = 1;  // elements per (a, b): the spatial block
  for (size_t i = 2; i < s.size(); ++i) inner *= s[i];
  std::vector<float> out(v.size());
  for (int64_t a = 0; a < s[0]; ++a)
    for (int64_t b = 0; b < s[1]; ++b)
      for (int64_t i = 0; i < inner; ++i) {
        out[static_cast<size_t>((a * inner + i) * s[1] + b)] = v[static_cast<size_t>((a * s[1] + b) * inner + i)];
      }
  return out;
}

void MoveToChannelsLast(ProgramSpec& p, std::vector<std::vector<float>>& inputs, std::vector<float>& want) {
  size_t input = 0;
  auto image = [](const std::vector<int64_t>& s) { return s.size() == 4 || s.size() == 5; };
  for (TensorSpec& t : p.tensors) {
    const std::vector<int64_t> s = t.shape;
    if (image(s) && t.role == Role::kConst) t.data = Nhwc(t.data, s);
    if (image(s) && t.role == Role::kInput) inputs[input] = Nhwc(inputs[input], s);
    if (image(s) && t.role == Role::kOutput) want = Nhwc(want, s);
    if (t.role == Role::kInput) ++input;
    if (image(s)) t.shape = Nhwc(s);
  }
  for (auto& a : p.kernels[0].args)
    if (image(a.shape)) a.shape = Nhwc(a.shape);
  p.kernels[0].attrs.push_back(ser::AttrDesc::Str("layout", "nhwc"));
}

}  // namespace keel::cudatest
