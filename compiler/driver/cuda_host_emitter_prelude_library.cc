// compiler/driver/cuda_host_emitter_prelude_library.cc — the library-kernel part
// of the fixed text of every keelc --emit=cuda-host program (see
// cuda_host_emitter.h): how the VM's cuBLASLt and cuDNN kernels are planned and
// launched, the tuning file they read, and the launch modes of kernels.
//
// It mirrors, call for call, vm/cuda/cublas_kernels.cc (CublasGemm::Plan/Tune/
// Launch), vm/cuda/cudnn_kernels.cc (CudnnConv::Plan/Choose/Launch, the
// fused-or-conv+epilogue modes; CudnnPool), vm/cuda/autotune.h (the tuning file's
// format, read-only here) and vm/cuda/cuda_device.cc (programmatic dependent
// launch of generated and runtime kernels, KEEL_CUDA_PDL). The program never
// times anything: a choice comes from --tuning-file when the file records it for
// this GPU and library versions, else from the libraries' heuristics, exactly as
// the VM chooses with KEEL_CUDA_AUTOTUNE=0. Keep it in step with vm/cuda/: the
// program must make the VM's calls with the VM's arguments, or its outputs stop
// being bit-identical. It follows the VM's runtime kernels' source
// (keel_bias_act_f32[x4], embedded before it), which it launches as the VM does.
namespace keel::driver::cuda_host {

const char* CudaHostLibraryPrelude() {
  return R"KEELPRELUDE(
// ================= library kernels (vm/cuda/cublas_kernels.cc, cudnn_kernels.cc) =================

// ---- launch modes (vm/cuda/cuda_device.cc) ----
[[maybe_unused]] static bool g_pdl_env = true;        // KEEL_CUDA_PDL != "0"
[[maybe_unused]] static bool g_pdl_generated = false;  // generated kernels launched as programmatic dependents

// ProgrammaticLaunchAvailable: the switch, an sm_90+ GPU (cuLaunchKernelEx is linked in).
[[maybe_unused]] static bool ProgrammaticLaunchAvailable() { return g_pdl_env && g_cc >= 90; }

// UseProgrammaticLaunch: the library's generated kernels wait for their predecessor
// (it exports keel_cuda_grid_dependency = 1) and the launch is available.
[[maybe_unused]] static void InitLaunchModes() {
  const char* v = std::getenv("KEEL_CUDA_PDL");
  g_pdl_env = v == nullptr || std::strcmp(v, "0") != 0;
  const auto* flag =
      g_library != nullptr ? static_cast<const uint32_t*>(dlsym(g_library, "keel_cuda_grid_dependency")) : nullptr;
  g_pdl_generated = ProgrammaticLaunchAvailable() && flag != nullptr && *flag == 1;
}
[[maybe_unused]] static const char* GeneratedLaunchSuffix() { return g_pdl_generated ? " programmatic" : ""; }

// GeneratedKernel::Launch.
[[maybe_unused]] static void LaunchGenerated(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                             unsigned by, unsigned bz, unsigned shared, void** params) {
  if (g_pdl_generated) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = gx;
    cfg.gridDimY = gy;
    cfg.gridDimZ = gz;
    cfg.blockDimX = bx;
    cfg.blockDimY = by;
    cfg.blockDimZ = bz;
    cfg.sharedMemBytes = shared;
    cfg.hStream = reinterpret_cast<CUstream>(g_stream);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    CU_CHECK(cuLaunchKernelEx(&cfg, fn, params, nullptr));
  } else {
    CU_CHECK(cuLaunchKernel(fn, gx, gy, gz, bx, by, bz, shared, reinterpret_cast<CUstream>(g_stream), params, nullptr));
  }
}

// The VM's runtime kernels (their source is above): CudaDevice::RuntimeFunction. The VM
// launches them as programmatic dependents only when its sm_90 cubin loaded (code built
// for compute_90+, which waits with griddepcontrol.wait); here: when the code that runs
// was built for compute_90+ (build with -gencode arch=compute_90,code=sm_90
// -gencode arch=compute_80,code=compute_80, the VM's embedding).
[[maybe_unused]] static CUfunction g_epi = nullptr, g_epi4 = nullptr;
[[maybe_unused]] static bool g_runtime_waits = false;
[[maybe_unused]] static void RuntimeKernels() {
  if (g_epi != nullptr) return;
  cudaFunction_t f = nullptr;
  CUDA_CHECK(cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(&keel_bias_act_f32)));
  g_epi = reinterpret_cast<CUfunction>(f);
  CUDA_CHECK(cudaGetFuncBySymbol(&f, reinterpret_cast<const void*>(&keel_bias_act_f32x4)));
  g_epi4 = reinterpret_cast<CUfunction>(f);
  cudaFuncAttributes a{};
  CUDA_CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(&keel_bias_act_f32)));
  g_runtime_waits = a.ptxVersion >= 90;
}

// CudaDevice::LaunchRuntimeKernel.
[[maybe_unused]] static CUresult LaunchRuntimeKernel(CUfunction fn, unsigned grid, unsigned block, void** params) {
  const CUstream s = reinterpret_cast<CUstream>(g_stream);
  if (!g_runtime_waits || !ProgrammaticLaunchAvailable()) {
    return cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, s, params, nullptr);
  }
  CUlaunchAttribute attr{};
  attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attr.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig cfg{};
  cfg.gridDimX = grid;
  cfg.gridDimY = cfg.gridDimZ = 1;
  cfg.blockDimX = block;
  cfg.blockDimY = cfg.blockDimZ = 1;
  cfg.hStream = s;
  cfg.attrs = &attr;
  cfg.numAttrs = 1;
  return cuLaunchKernelEx(&cfg, fn, params, nullptr);
}

// ---- the tuning file (vm/cuda/autotune.h), read-only ----
// "<device> <problem>" -> conv {algo, mode, workspace} | gemm {workspace, 8 words of the algorithm}.
[[maybe_unused]] static std::map<std::string, std::vector<int64_t>> g_tuning;
[[maybe_unused]] static std::string g_cudnn_tag, g_lt_tag;  // "sm90-cudnn91400 ", "sm90-cublasLt130100 "
[[maybe_unused]] static bool g_tuning_given = false;
[[maybe_unused]] static uint64_t g_tuning_lookups = 0, g_tuning_found = 0;

[[maybe_unused]] static void LoadTuning(const std::string& path) {
  g_cudnn_tag = "sm" + std::to_string(g_cc) + "-cudnn" + std::to_string(cudnnGetVersion()) + " ";
  g_lt_tag = "sm" + std::to_string(g_cc) + "-cublasLt" + std::to_string(cublasLtGetVersion()) + " ";
  if (path.empty()) return;
  g_tuning_given = true;
  const std::vector<uint8_t> bytes = ReadWholeFile(path);
  const std::string text(bytes.begin(), bytes.end());
  static const char* const kAlgos[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                       "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  size_t pos = 0, line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto bad = [&](const std::string& what) {
      Die("tuning file " + path + " line " + std::to_string(line_no) + ": " + what);
    };
    std::vector<std::string> tok;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
      size_t j = i;
      while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
      if (j > i) tok.push_back(line.substr(i, j - i));
      i = j;
    }
    if (tok.empty() || tok[0][0] == '#') continue;
    if (tok.size() < 3) bad("expected \"<device> <problem> <choice...>\"");
    const bool conv = tok[1].rfind("conv|", 0) == 0, gemm = tok[1].rfind("gemm|", 0) == 0;
    if (!conv && !gemm) bad("unknown problem " + tok[1]);
    std::map<std::string, std::string> fields;
    for (size_t i = 2; i < tok.size(); ++i) {
      const size_t eq = tok[i].find('=');
      if (eq == std::string::npos || eq == 0) bad("expected name=value, got " + tok[i]);
      if (!fields.emplace(tok[i].substr(0, eq), tok[i].substr(eq + 1)).second) bad("a field appears twice");
    }
    for (const auto& f : fields) {
      if (f.first != "workspace" && f.first != "algo" && !(conv && f.first == "mode")) bad("unknown field " + f.first);
    }
    const std::string ws_text = fields["workspace"], algo = fields["algo"];
    if (ws_text.empty() || ws_text.size() > 19 || ws_text.find_first_not_of("0123456789") != std::string::npos) {
      bad("workspace must be a byte count");
    }
    std::vector<int64_t> value;
    if (conv) {
      int64_t a = -1;
      for (int64_t i = 0; i < 8; ++i) {
        if (algo == kAlgos[i]) a = i;
      }
      if (a < 0) bad("unknown cuDNN algorithm \"" + algo + "\"");
      const std::string mode = fields["mode"];
      if (mode != "fused" && mode != "conv+epilogue") bad("mode must be fused or conv+epilogue");
      value = {a, mode == "fused" ? 0 : 1, static_cast<int64_t>(std::stoull(ws_text))};
    } else {
      value.push_back(static_cast<int64_t>(std::stoull(ws_text)));
      if (algo.size() != 128 || algo.find_first_not_of("0123456789abcdef") != std::string::npos) {
        bad("algo must be 128 lowercase hex digits");
      }
      for (size_t w = 0; w < 8; ++w) value.push_back(static_cast<int64_t>(std::stoull(algo.substr(16 * w, 16), nullptr, 16)));
    }
    if (!g_tuning.emplace(tok[0] + " " + tok[1], value).second) bad("a second entry for the same problem");
  }
}

// CudaDevice::FindTuning for one library kernel's problem.
[[maybe_unused]] static const std::vector<int64_t>* FindTuning(const std::string& key) {
  ++g_tuning_lookups;
  auto it = g_tuning.find(key);
  if (it == g_tuning.end()) return nullptr;
  ++g_tuning_found;
  return &it->second;
}
[[maybe_unused]] static const char* Tf32Suffix() { return g_allow_tf32 ? "|tf321" : "|tf320"; }

// ---- cublas.gemm ----
struct GemmKernel {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulAlgo_t algo16{}, algo4{};
  bool has16 = false;
  uint64_t ws16 = 0, ws4 = 0;
  float alpha = 1.f, beta = 0.f;
  std::string call16, call4;
};
static_assert(sizeof(cublasLtMatmulAlgo_t) == 64, "tuning entries hold 8 words");

// CublasGemm::Heuristics: up to `count` algorithms for operands aligned to `alignment` bytes.
[[maybe_unused]] static std::vector<cublasLtMatmulHeuristicResult_t> GemmHeuristics(GemmKernel& g, uint32_t alignment,
                                                                                   int count) {
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(g.pref, attr, &alignment, sizeof alignment));
  }
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(count));
  int returned = 0;
  const cublasStatus_t s =
      cublasLtMatmulAlgoGetHeuristic(g_lt, g.desc, g.a, g.b, g.c, g.d, g.pref, count, results.data(), &returned);
  if (s != CUBLAS_STATUS_SUCCESS && s != CUBLAS_STATUS_NOT_SUPPORTED) CUBLAS_CHECK(s);
  std::vector<cublasLtMatmulHeuristicResult_t> out;
  if (s != CUBLAS_STATUS_SUCCESS) return out;
  for (int i = 0; i < returned; ++i) {
    if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS) out.push_back(results[static_cast<size_t>(i)]);
  }
  return out;
}

[[maybe_unused]] static std::string GemmDescribe(const cublasLtMatmulAlgo_t& a, uint64_t ws) {
  int id = -1, tile = -1;
  size_t written = 0;
  (void)cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written);
  (void)cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written);
  return "cublasLtMatmul algo=" + std::to_string(id) + " tile=" + std::to_string(tile) +
         " workspace=" + std::to_string(ws);
}

// The end of CublasGemm::Plan: the 16-byte-aligned algorithm (CublasGemm::Tune: the tuning
// file's, else the heuristics' first of 8), the 4-byte-aligned one (heuristics), the
// workspace, the trace names. `problem` is GemmProblemKey less its TF32 suffix.
[[maybe_unused]] static void GemmChooseAlgorithms(GemmKernel& g, const char* name, const std::string& problem) {
  const uint64_t max_ws = 32ull << 20;  // kMaxGemmWorkspace
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&g.pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(g.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws,
                                                    sizeof max_ws));
  if (const std::vector<int64_t>* t = FindTuning(g_lt_tag + problem + Tf32Suffix()); t != nullptr) {
    if (t->size() == 9) {
      g.ws16 = static_cast<uint64_t>((*t)[0]);
      std::memcpy(&g.algo16, t->data() + 1, sizeof g.algo16);
      g.has16 = true;
    }
  } else {
    const std::vector<cublasLtMatmulHeuristicResult_t> cands = GemmHeuristics(g, 16, 8);
    if (!cands.empty()) {
      g.algo16 = cands[0].algo;
      g.ws16 = cands[0].workspaceSize;
      g.has16 = true;
    }
  }
  const std::vector<cublasLtMatmulHeuristicResult_t> four = GemmHeuristics(g, 4, 1);
  if (four.empty()) Die(std::string("kernel ") + name + ": cuBLASLt has no algorithm");
  g.algo4 = four[0].algo;
  g.ws4 = four[0].workspaceSize;
  ReserveWorkspace(g.ws16 > g.ws4 ? g.ws16 : g.ws4);
  g.call16 = g.has16 ? GemmDescribe(g.algo16, g.ws16) : std::string();
  g.call4 = GemmDescribe(g.algo4, g.ws4) + " (4-byte aligned)";
}

[[maybe_unused]] static void GemmLayout(cublasLtMatrixLayout_t* l, uint64_t rows, uint64_t cols, int64_t ld,
                                        int32_t batch, int64_t stride) {
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(l, CUDA_R_32F, rows, cols, ld));
  if (batch > 1) {
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                  sizeof stride));
  }
}

// ---- cudnn.conv2d ----
struct ConvKernel {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, b = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;  // relu, clipped relu or identity (fused call)
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  uint64_t ws = 0;
  int mode = 1;  // 0: fused call, 1: conv + keel_bias_act (ConvMode)
  bool has_bias = false, has_residual = false;
  int act_kind = 0;  // 0 none, 1 relu, 2 clip (runtime_kernels.cu numbering)
  double clip_max = 0;
  long long y_elems = 0, channels = 0, hw = 0;
  uint64_t zero_bias_bytes = 0;
  void* zero_bias = nullptr;
  std::string call_fused, call_conv;
};

[[maybe_unused]] static const char* ConvAlgoName(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
  }
}

// The N-d descriptors of CudnnConv::Plan (rank 4 or 5; a 1-D convolution comes
// lifted to a unit height: common/conv_geometry.h). SetTensorNd: dense f32.
[[maybe_unused]] static void ConvTensor(cudnnTensorDescriptor_t d, const std::vector<int>& dims) {
  std::vector<int> stride(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) stride[i - 1] = stride[i] * dims[i];
  CUDNN_CHECK(cudnnSetTensorNdDescriptor(d, CUDNN_DATA_FLOAT, static_cast<int>(dims.size()), dims.data(),
                                         stride.data()));
}
[[maybe_unused]] static void ConvFilter(cudnnFilterDescriptor_t d, const std::vector<int>& dims) {
  CUDNN_CHECK(cudnnSetFilterNdDescriptor(d, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(dims.size()),
                                         dims.data()));
}
[[maybe_unused]] static void ConvDescriptor(cudnnConvolutionDescriptor_t d, const std::vector<int>& pads,
                                            const std::vector<int>& strides, const std::vector<int>& dilations) {
  CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(d, static_cast<int>(pads.size()), pads.data(), strides.data(),
                                              dilations.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
}
// Y's shape must be cuDNN's output shape.
[[maybe_unused]] static void ConvCheckOutput(const ConvKernel& c, const std::vector<int>& y, const char* name) {
  std::vector<int> out(y.size(), 0);
  CUDNN_CHECK(cudnnGetConvolutionNdForwardOutputDim(c.conv, c.x, c.w, static_cast<int>(out.size()), out.data()));
  if (out != y) Die(std::string("kernel ") + name + ": Y does not match the convolution");
}

// CudnnConv::FusedAllowed: relu (any algorithm), or identity with bias/residual
// (IMPLICIT_PRECOMP_GEMM only); clipped ReLU never.
[[maybe_unused]] static bool ConvFusedAllowed(const ConvKernel& c, cudnnConvolutionFwdAlgo_t algo) {
  if (c.act_kind == 1) return true;
  return c.act_kind == 0 && (c.has_bias || c.has_residual) && algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
}

// CudnnConv::Choose: the tuning file's choice, else the heuristics' first candidate
// (KEEL_CUDA_AUTOTUNE=0): candidates in cudnnGetConvolutionForwardAlgorithm_v7 order,
// FMA or default math unless TF32, workspace <= 256 MiB, each algorithm once, the
// fused call first where allowed.
[[maybe_unused]] static void ConvChoose(ConvKernel& c, const char* name, const std::string& problem) {
  if (const std::vector<int64_t>* t = FindTuning(g_cudnn_tag + problem + Tf32Suffix()); t != nullptr && t->size() == 3) {
    c.algo = static_cast<cudnnConvolutionFwdAlgo_t>((*t)[0]);
    c.mode = static_cast<int>((*t)[1]);
    c.ws = static_cast<uint64_t>((*t)[2]);
    return;
  }
  int max_algos = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(g_cudnn, &max_algos));
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<size_t>(max_algos > 1 ? max_algos : 1));
  int got = 0;
  CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(g_cudnn, c.x, c.w, c.conv, c.y, static_cast<int>(perf.size()),
                                                     &got, perf.data()));
  for (int i = 0; i < got; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
    if (!g_allow_tf32 && perf[i].mathType != CUDNN_FMA_MATH && perf[i].mathType != CUDNN_DEFAULT_MATH) continue;
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(g_cudnn, c.x, c.w, c.conv, c.y, perf[i].algo, &bytes) !=
        CUDNN_STATUS_SUCCESS) {
      continue;
    }
    if (bytes > (size_t{256} << 20)) continue;  // kMaxConvWorkspace
    c.algo = perf[i].algo;
    c.mode = ConvFusedAllowed(c, perf[i].algo) ? 0 : 1;
    c.ws = bytes;
    return;
  }
  Die(std::string("kernel ") + name + ": cuDNN offers no algorithm");
}

// The end of CudnnConv::Plan, after the descriptors: the activation descriptor, zeros
// for the fused call's bias, the choice, the workspace, the trace names.
[[maybe_unused]] static void ConvFinishPlan(ConvKernel& c, const char* name, const std::string& problem) {
  CUDNN_CHECK(cudnnCreateActivationDescriptor(&c.act));
  CUDNN_CHECK(cudnnSetActivationDescriptor(c.act,
                                           c.act_kind == 1   ? CUDNN_ACTIVATION_RELU
                                           : c.act_kind == 2 ? CUDNN_ACTIVATION_CLIPPED_RELU
                                                             : CUDNN_ACTIVATION_IDENTITY,
                                           CUDNN_PROPAGATE_NAN, c.act_kind == 2 ? c.clip_max : 0.0));
  if (!c.has_bias) {
    // The fused call always adds a bias: give it zeros. CudaDevice::Allocate: traced as set-up.
    MallocCount* saved = g_count;
    g_count = &g_load;
    c.zero_bias = DeviceMalloc(c.zero_bias_bytes, 256);
    g_count = saved;
    TraceSetup((std::string("kernel ") + name).c_str(),
               " allocate cudaMalloc " + std::to_string(c.zero_bias_bytes) + " bytes");
    CUDA_CHECK(cudaMemsetAsync(c.zero_bias, 0, c.zero_bias_bytes, g_stream));
    CUDA_CHECK(cudaStreamSynchronize(g_stream));
  }
  ConvChoose(c, name, problem);
  ReserveWorkspace(c.ws);
  const std::string algo = std::string(" algo=") + ConvAlgoName(c.algo) + " workspace=" + std::to_string(c.ws);
  c.call_fused = "cudnnConvolutionBiasActivationForward" + algo;
  c.call_conv = "cudnnConvolutionForward" + algo + (c.has_bias || c.has_residual || c.act_kind ? " + keel_bias_act" : "");
}

// CudnnConv::Fused.
[[maybe_unused]] static cudnnStatus_t ConvFused(ConvKernel& c, const void* x, const void* w, const void* bias,
                                                const void* res, void* y) {
  const float one = 1.f, alpha2 = res ? 1.f : 0.f;
  return cudnnConvolutionBiasActivationForward(g_cudnn, &one, c.x, x, c.w, w, c.conv, c.algo, g_workspace, c.ws,
                                               &alpha2, c.y, res ? res : y, c.b, bias ? bias : c.zero_bias, c.act,
                                               c.y, y);
}

// CudnnConv::ConvThenEpilogue: the convolution, then keel_bias_act in place on Y.
[[maybe_unused]] static void ConvThenEpilogue(ConvKernel& c, const void* x, const void* w, const void* bias,
                                              const void* res, void* y) {
  const float one = 1.f;
  float beta = 0.f;
  if (res == y) {  // residual already in Y (same register): accumulate into it
    beta = 1.f;
    res = nullptr;
  }
  CUDNN_CHECK(cudnnConvolutionForward(g_cudnn, &one, c.x, x, c.w, w, c.conv, c.algo, g_workspace, c.ws, &beta, c.y, y));
  if (!bias && !res && c.act_kind == 0) return;
  const bool vec = c.hw % 4 == 0 && ((reinterpret_cast<uintptr_t>(y) | reinterpret_cast<uintptr_t>(res)) & 15u) == 0;
  long long total = vec ? c.y_elems / 4 : c.y_elems;
  long long hw = vec ? c.hw / 4 : c.hw;
  int channels = static_cast<int>(c.channels);
  int act = c.act_kind;
  float clip = static_cast<float>(c.clip_max);
  void* yp = y;
  const void* bp = bias;
  const void* rp = res;
  void* params[] = {&yp, &bp, &rp, &total, &hw, &channels, &act, &clip};
  long long blocks = (total + 255) / 256;
  if (blocks > static_cast<long long>(g_num_sms) * 8) blocks = static_cast<long long>(g_num_sms) * 8;
  if (blocks < 1) blocks = 1;
  CU_CHECK(LaunchRuntimeKernel(vec ? g_epi4 : g_epi, static_cast<unsigned>(blocks), 256, params));
}

// CudnnConv::Launch: the chosen mode (a fused call cuDNN refuses falls back to the
// sequence for good); returns the call's trace name.
[[maybe_unused]] static const std::string& ConvRun(ConvKernel& c, const void* x, const void* w, const void* bias,
                                                  const void* res, void* y) {
  if (c.mode == 0) {
    const cudnnStatus_t s = ConvFused(c, x, w, bias, res, y);
    if (s == CUDNN_STATUS_SUCCESS) return c.call_fused;
    if (s != CUDNN_STATUS_NOT_SUPPORTED) CUDNN_CHECK(s);
    c.mode = 1;
  }
  ConvThenEpilogue(c, x, w, bias, res, y);
  return c.call_conv;
}

// ---- cudnn.pool2d ----
struct PoolKernel {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnPoolingDescriptor_t p = nullptr;
  std::string call;
};
)KEELPRELUDE";
}

}  // namespace keel::driver::cuda_host
