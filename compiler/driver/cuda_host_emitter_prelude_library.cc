// compiler/driver/cuda_host_emitter_prelude_library.cc — the library-kernel
// glue of every keelc --emit=cuda-host program (see cuda_host_emitter.h): how
// the program plans and launches the VM's cuBLASLt and cuDNN kernels with the
// VM's own calls, the tuning file it reads, and the launch modes of kernels.
//
// The calls themselves are not restated here: vm/cuda/library_calls.h,
// library_calls_cublaslt.h, library_calls_engine_choice.h, library_calls_tuning.h, library_calls_cudnn.h,
// library_calls_cudnn_engine.h, library_calls_attention.h and library_calls_cudnn_attention.h, which the VM compiles,
// are pasted verbatim before this text (cuda_host_emitter_embed.cmake), and
// this glue calls them as vm/cuda/cublas_kernels.cc (CublasGemm), cudnn_kernels.cc
// (CudnnConv with its backend-API engines, CudnnPool), attention_kernel.cc
// (KeelAttention, with cuDNN's fused attention engines) and cuda_device.cc (programmatic dependent launch,
// KEEL_CUDA_PDL) do, less what the program never does: time candidates. A
// choice comes from --tuning-file when the file records it for this GPU and
// library versions (vm/cuda/autotune.h's format, read-only here), else from the
// libraries' heuristics, exactly as the VM chooses with KEEL_CUDA_AUTOTUNE=0;
// a convolution's cuDNN engine likewise (the entry names the configuration; no
// verdict: the legacy call, KEEL_CUDNN_ENGINES=force: the heuristics' first
// engine). KEEL_CUDNN_ENGINES and KEEL_CUDNN_ENGINES_ALL/RTC are read as keel-run
// reads them (apps/common/vm_env.h).
// What remains VM-shaped here (the orchestration: handles, workspace, zero
// biases, trace names, tuning look-ups) must stay in step with those classes.
namespace keel::driver::cuda_host {

const char* CudaHostLibraryPrelude() {
  return R"KEELPRELUDE(
// ================= library kernels: glue around the shared calls above =================
namespace cl = keel::cuda_lib;

// A failed shared call (cl::CallStatus): its name and the library's error string.
#define LIB_CHECK(expr) CheckLibraryCall((expr), __FILE__, __LINE__)
[[maybe_unused]] static void CheckLibraryCall(const cl::CallStatus& c, const char* file, int line) {
  if (c.ok()) return;
  const char* what = "?";
  if (c.library == cl::CallStatus::kCublas) what = cublasLtGetStatusString(static_cast<cublasStatus_t>(c.code));
  if (c.library == cl::CallStatus::kCudnn) what = cudnnGetErrorString(static_cast<cudnnStatus_t>(c.code));
  if (c.library == cl::CallStatus::kCuda) cuGetErrorString(static_cast<CUresult>(c.code), &what);
  std::fflush(stdout);
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, c.call, what ? what : "?");
  std::exit(1);
}

// ---- the library workspace (CudaDevice::ReserveWorkspace / ReservePrivateWorkspace) ----
[[maybe_unused]] static cl::WorkspaceLayout g_workspace_layout;
[[maybe_unused]] static void GrowWorkspace() {
  const uint64_t bytes = g_workspace_layout.Bytes();
  if (bytes <= g_workspace_bytes) return;
  if (g_workspace != nullptr) {
    CUDA_CHECK(cudaStreamSynchronize(g_stream));
    CUDA_CHECK(cudaFree(g_workspace));
    g_count->frees += 1;
    g_workspace = nullptr;
    g_workspace_bytes = 0;
  }
  CUDA_CHECK(cudaMalloc(&g_workspace, bytes));
  g_count->mallocs += 1;
  g_count->bytes += bytes;
  g_workspace_bytes = bytes;
}
[[maybe_unused]] static void ReserveWorkspace(uint64_t bytes) {
  g_workspace_layout.ReserveShared(bytes);
  GrowWorkspace();
}
[[maybe_unused]] static uint64_t ReservePrivateWorkspace(uint64_t bytes) {
  const uint64_t offset = g_workspace_layout.ReservePrivate(bytes);
  GrowWorkspace();
  return offset;
}
[[maybe_unused]] static void* PrivateWorkspace(uint64_t offset) {
  return static_cast<char*>(g_workspace) + g_workspace_layout.PrivateStart() + offset;
}

// ---- launch modes (vm/cuda/cuda_device.cc) ----
[[maybe_unused]] static bool g_pdl_env = true;        // KEEL_CUDA_PDL != "0"
[[maybe_unused]] static bool g_pdl_generated = false;  // generated kernels launched as programmatic dependents

// The program links cuLaunchKernelEx: available on sm_90+ with the switch on.
[[maybe_unused]] static bool ProgrammaticLaunchAvailable() {
  return cl::ProgrammaticLaunchAvailable(g_pdl_env, g_cc, true);
}

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
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
    cl::ProgrammaticLaunch pl(grid, block, shared, reinterpret_cast<CUstream>(g_stream));
    CU_CHECK(cuLaunchKernelEx(&pl.cfg, fn, params, nullptr));
  } else {
    CU_CHECK(cuLaunchKernel(fn, gx, gy, gz, bx, by, bz, shared, reinterpret_cast<CUstream>(g_stream), params, nullptr));
  }
}

// The VM's runtime kernels (their source is above): CudaDevice::RuntimeFunction, the
// epilogue of each element type fetched at its first convolution, as the VM resolves
// them by name. The VM launches them as programmatic dependents only when its sm_90
// cubin loaded (code built for compute_90+, which waits with griddepcontrol.wait);
// here: when the code that runs was built for compute_90+ (build with -gencode
// arch=compute_90,code=sm_90 -gencode arch=compute_80,code=compute_80, the VM's embedding).
[[maybe_unused]] static cl::BiasActKernels g_epilogue[3];  // by cl::ElementType
[[maybe_unused]] static bool g_runtime_waits = false, g_runtime_checked = false;
[[maybe_unused]] static CUfunction RuntimeFunction(const void* symbol) {
  cudaFunction_t f = nullptr;
  CUDA_CHECK(cudaGetFuncBySymbol(&f, symbol));
  return reinterpret_cast<CUfunction>(f);
}
[[maybe_unused]] static const cl::BiasActKernels& RuntimeKernels(cl::ElementType t) {
  cl::BiasActKernels& k = g_epilogue[static_cast<int>(t)];
  if (k.scalar != nullptr) return k;
  switch (t) {
    case cl::ElementType::kF32:
      k.scalar = RuntimeFunction(reinterpret_cast<const void*>(&keel_bias_act_f32));
      k.vec4 = RuntimeFunction(reinterpret_cast<const void*>(&keel_bias_act_f32x4));
      break;
    case cl::ElementType::kF16: k.scalar = RuntimeFunction(reinterpret_cast<const void*>(&keel_bias_act_f16)); break;
    case cl::ElementType::kBF16: k.scalar = RuntimeFunction(reinterpret_cast<const void*>(&keel_bias_act_bf16)); break;
  }
  if (!g_runtime_checked) {  // one module: every runtime kernel was built for the same code
    cudaFuncAttributes a{};
    CUDA_CHECK(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(&keel_bias_act_f32)));
    g_runtime_waits = a.ptxVersion >= 90;
    g_runtime_checked = true;
  }
  return k;
}

// CudaDevice::LaunchRuntimeKernel (with `shared` bytes of dynamic shared memory).
[[maybe_unused]] static CUresult LaunchRuntimeKernelShared(CUfunction fn, unsigned grid, unsigned block,
                                                           void** params, unsigned shared) {
  const CUstream s = reinterpret_cast<CUstream>(g_stream);
  if (!g_runtime_waits || !ProgrammaticLaunchAvailable()) {
    return cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, shared, s, params, nullptr);
  }
  const unsigned grid3[3] = {grid, 1, 1}, block3[3] = {block, 1, 1};
  cl::ProgrammaticLaunch pl(grid3, block3, shared, s);
  return cuLaunchKernelEx(&pl.cfg, fn, params, nullptr);
}
// The epilogues' form (vm/cuda/library_calls_cudnn.h takes it as a callable).
[[maybe_unused]] static CUresult LaunchRuntimeKernel(CUfunction fn, unsigned grid, unsigned block, void** params) {
  return LaunchRuntimeKernelShared(fn, grid, block, params, 0);
}

// ---- the tuning file (vm/cuda/autotune.h), read-only ----
// "<device> <problem>" -> conv, conv_transpose {algo, mode, workspace[, engine verdict]} | gemm {workspace, 8 words
// of the algorithm}.
[[maybe_unused]] static cl::TuningEntries g_tuning;
[[maybe_unused]] static std::string g_cudnn_tag, g_lt_tag;  // "sm90-cudnn91400 ", "sm90-cublasLt130100 "
[[maybe_unused]] static bool g_tuning_given = false;
[[maybe_unused]] static uint64_t g_tuning_lookups = 0, g_tuning_found = 0;
// Attentions that look their verdict up (the graph form cuDNN's fused engines take,
// which only the shared call decides): library problems beside the emitter's count.
[[maybe_unused]] static uint64_t g_tuning_attentions = 0;

[[maybe_unused]] static void LoadTuning(const std::string& path) {
  g_cudnn_tag = "sm" + std::to_string(g_cc) + "-cudnn" + std::to_string(cudnnGetVersion()) + " ";
  g_lt_tag = "sm" + std::to_string(g_cc) + "-cublasLt" + std::to_string(cublasLtGetVersion()) + " ";
  if (path.empty()) return;
  g_tuning_given = true;
  const std::vector<uint8_t> bytes = ReadWholeFile(path);
  const std::string text(bytes.begin(), bytes.end());
  std::string error;  // the VM's parser (library_calls_tuning.h): the same lines accepted and refused
  if (!cl::ParseTuningText(text, path, &g_tuning, &error)) Die(error);
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

// ---- cublas.gemm (CublasGemm::Plan, Tune less the timing) ----
using GemmKernel = cl::GemmPlan;

// After the descriptors: the 16-byte-aligned algorithm (the tuning file's, else the
// heuristics' first of 8), the fallback, the workspace, the trace names. `problem`
// is GemmProblemKey less its TF32 suffix.
[[maybe_unused]] static void GemmPlanKernel(GemmKernel& g, const cl::GemmProblem& p, const char* name,
                                            const std::string& problem) {
  LIB_CHECK(cl::CreateGemmDescriptors(p, &g.d));
  if (const std::vector<int64_t>* t = FindTuning(g_lt_tag + problem + Tf32Suffix()); t != nullptr) {
    g.aligned16 = cl::GemmAlgorithmFromTuning(*t);
  } else {
    std::vector<cublasLtMatmulHeuristicResult_t> cands;
    LIB_CHECK(cl::GemmHeuristics(g_lt, g.d, 16, 8, &cands));
    if (!cands.empty()) g.aligned16 = cl::GemmAlgorithmOf(cands[0]);
  }
  LIB_CHECK(cl::GemmFinishPlan(g_lt, p.type, &g));
  if (!g.aligned1.found) Die(std::string("kernel ") + name + ": cuBLASLt has no algorithm");
  ReserveWorkspace(cl::GemmWorkspaceBytes(g));
}

// CublasGemm::Launch; returns the call's trace name.
[[maybe_unused]] static const std::string& GemmRun(GemmKernel& g, const void* a, const void* b, const void* bias,
                                                  const void* residual, void* y) {
  const std::string* call = nullptr;
  LIB_CHECK(cl::GemmLaunch(g_lt, g, a, b, bias, residual, y, g_workspace, g_stream, &call));
  return *call;
}

// ---- the cuDNN backend-API engines: VmOptions::cudnn_engines* from the environment ----
[[maybe_unused]] static cl::EnginePolicy g_engine_policy = cl::EnginePolicy::kAuto;
[[maybe_unused]] static cl::EngineSearch g_engine_search;

// apps/common/vm_env.h: KEEL_CUDNN_ENGINES=0|1|force|auto (unset: auto, the VM's
// default), KEEL_CUDNN_ENGINES_ALL=1, KEEL_CUDNN_ENGINES_RTC=1.
[[maybe_unused]] static void InitEngines() {
  auto is = [](const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v != nullptr && std::strcmp(v, value) == 0;
  };
  if (std::getenv("KEEL_CUDNN_ENGINES") != nullptr) {
    g_engine_policy = is("KEEL_CUDNN_ENGINES", "1")       ? cl::EnginePolicy::kCompete
                      : is("KEEL_CUDNN_ENGINES", "force") ? cl::EnginePolicy::kForce
                      : is("KEEL_CUDNN_ENGINES", "auto")  ? cl::EnginePolicy::kAuto
                                                          : cl::EnginePolicy::kOff;
  }
  g_engine_search.all = is("KEEL_CUDNN_ENGINES_ALL", "1");
  g_engine_search.rtc = is("KEEL_CUDNN_ENGINES_RTC", "1");
}

// ---- cudnn.conv2d, cudnn.conv_transpose (CudnnConv::Plan, Choose and ChooseEngine less the timing, Launch) ----
struct ConvKernel {
  cl::ConvProblem p;
  cl::ConvDescriptors d;
  cl::ConvCandidate choice;
  const cl::BiasActKernels* epilogue = nullptr;
  void* zero_bias = nullptr;
  std::string call_fused, call_conv;
  // The backend-API engine that runs instead of the legacy call (engine.plan set), if any.
  cl::EngineGraph graph;
  cl::EnginePlan engine;
  cl::EngineVariantPack pack;
  std::string call_engine;
};

[[maybe_unused]] static void DestroyConvKernel(ConvKernel& c) {
  cl::DestroyEngineVariantPack(c.pack);
  cl::DestroyEnginePlan(c.engine);
  cl::DestroyEngineGraph(c.graph);
  cl::DestroyConvDescriptors(c.d);
}

// CudnnConv::ChooseEngine less the timing, for a problem the policy considers:
// the tuning entry's verdict (the engine configuration it names, built from its
// identity, or legacy); without one the legacy call stays (the VM with
// KEEL_CUDA_AUTOTUNE=0 holds no competition), but for KEEL_CUDNN_ENGINES=force:
// the heuristics' first engine. A named configuration this cuDNN does not offer
// ends the program, naming the convolution.
[[maybe_unused]] static void ConvPlanEngine(ConvKernel& c, const char* name, const std::string& key,
                                            const std::vector<int64_t>* entry) {
  const bool force = g_engine_policy == cl::EnginePolicy::kForce;
  cl::EngineId id;
  bool recorded = false;
  if (!force && entry != nullptr && !cl::EngineFromTuning(*entry, &recorded, &id)) {
    Die(std::string("kernel ") + name + ": malformed engine verdict in the tuning entry " + key);
  }
  if (!force && (!recorded || id.index < 0)) return;
  if (!cl::BuildEngineGraph(g_cudnn, c.p, &c.graph).ok()) {
    if (!force) Die(std::string("kernel ") + name + ": cuDNN cannot build the engine graph the tuning entry " + key + " needs");
    return;  // as the VM: engines that cannot be built leave the legacy call
  }
  if (force) {
    std::vector<cl::EnginePlan> plans;
    std::string summary;
    const bool listed =
        cl::EngineCandidates(g_cudnn, c.p, c.graph, cl::kMaxConvWorkspace, g_engine_search, &plans, &summary).ok();
    for (size_t i = 0; i < plans.size(); ++i) {
      if (i == 0 && listed) c.engine = plans[0];
      else cl::DestroyEnginePlan(plans[i]);
    }
    if (c.engine.plan == nullptr) return;  // as the VM: no usable engine leaves the legacy call
  } else if (const cl::CallStatus s = cl::EnginePlanOf(g_cudnn, c.p, c.graph, id, cl::kMaxConvWorkspace, &c.engine);
             !s.ok()) {
    const char* what = s.library == cl::CallStatus::kCudnn ? cudnnGetErrorString(static_cast<cudnnStatus_t>(s.code))
                                                           : "?";
    Die(std::string("kernel ") + name + ": the tuning entry " + key + " names the cuDNN engine configuration " +
        cl::EngineIdText(id) + ", which this cuDNN (" + std::to_string(cudnnGetVersion()) +
        ") does not offer for this convolution: " + s.call + " failed: " + what);
  }
  c.call_engine = cl::EngineCallName(c.p, c.engine.id, c.engine.workspace);
}

// The descriptors, Y's check, the activation, zeros for the fused call's bias, the
// choice (the tuning file's, else the candidates' first), the workspace, the trace names.
[[maybe_unused]] static void ConvPlanKernel(ConvKernel& c, const char* name, const std::string& problem) {
  c.epilogue = &RuntimeKernels(c.p.type);
  std::vector<int> out;
  LIB_CHECK(cl::CreateConvDescriptors(c.p, &c.d, &out));
  if (out != c.p.y) Die(std::string("kernel ") + name + ": Y does not match the convolution");
  LIB_CHECK(cl::CreateConvActivation(c.p, &c.d));
  if (!c.p.has_bias && !c.p.transposed) {
    // The fused call always adds a bias: give it zeros. CudaDevice::Allocate: traced as set-up.
    const uint64_t bytes = cl::InfoOf(c.p.type).bytes * static_cast<uint64_t>(c.p.out()[1]);
    MallocCount* saved = g_count;
    g_count = &g_load;
    c.zero_bias = DeviceMalloc(bytes, 256);
    g_count = saved;
    TraceSetup((std::string("kernel ") + name).c_str(), " allocate cudaMalloc " + std::to_string(bytes) + " bytes");
    CUDA_CHECK(cudaMemsetAsync(c.zero_bias, 0, bytes, g_stream));
    CUDA_CHECK(cudaStreamSynchronize(g_stream));
  }
  const std::string key = g_cudnn_tag + problem + Tf32Suffix();
  const std::vector<int64_t>* t = FindTuning(key);
  if (t == nullptr || !cl::ConvCandidateFromTuning(c.p, *t, &c.choice)) {
    std::vector<cl::ConvCandidate> cands;
    LIB_CHECK(cl::ConvCandidates(g_cudnn, c.p, c.d, &cands));
    if (cands.empty()) Die(std::string("kernel ") + name + ": cuDNN offers no algorithm");
    c.choice = cands[0];
  }
  if (cl::EnginesConsidered(g_engine_policy, c.p)) ConvPlanEngine(c, name, key, t);
  ReserveWorkspace(std::max<uint64_t>(c.choice.workspace, c.engine.plan != nullptr ? c.engine.workspace : 0));
  c.call_fused = cl::ConvFusedCallName(c.p, c.choice);
  c.call_conv = cl::ConvEpilogueCallName(c.p, c.choice);
}

// CudnnConv::Launch: the chosen mode (a fused call cuDNN refuses falls back to the
// sequence for good); returns the call's trace name.
[[maybe_unused]] static const std::string& ConvRun(ConvKernel& c, const void* x, const void* w, const void* bias,
                                                  const void* res, void* y) {
  if (c.engine.plan != nullptr && cl::EngineUsable(x, w, res, y)) {
    CUDNN_CHECK(cl::EngineExecute(g_cudnn, c.engine.plan, &c.pack, x, w, y, g_workspace));
    LIB_CHECK(cl::BiasActivation(c.p, *c.epilogue, g_num_sms, y, bias, res, LaunchRuntimeKernel));
    return c.call_engine;
  }
  if (c.choice.mode == cl::ConvMode::kFused) {
    const cudnnStatus_t s = cl::ConvFused(g_cudnn, c.d, x, w, bias ? bias : c.zero_bias, res, y, c.choice.algo,
                                          g_workspace, c.choice.workspace);
    if (s == CUDNN_STATUS_SUCCESS) return c.call_fused;
    if (s != CUDNN_STATUS_NOT_SUPPORTED) CUDNN_CHECK(s);
    c.choice.mode = cl::ConvMode::kConvEpilogue;
  }
  LIB_CHECK(cl::ConvThenEpilogue(g_cudnn, c.p, c.d, *c.epilogue, g_num_sms, x, w, bias, res, y, c.choice, g_workspace,
                                 LaunchRuntimeKernel));
  return c.call_conv;
}

// ---- cudnn.pool2d (CudnnPool) ----
struct PoolKernel {
  cl::PoolDescriptors d;
  std::string call;
};
// ---- keel.attention: vm/cuda/attention_kernel.cc (KeelAttention) ----
struct AttentionKernel {
  cl::AttentionArgs args;  // the attributes' part; the tensors are set per launch
  CUfunction fn = nullptr;
  cl::AttentionLaunch launch;
  std::string call;
  // cuDNN's fused attention engine that runs instead of Keel's kernel (engine.plan set), if any.
  cl::AttentionGraphProblem p;
  cl::EngineGraph graph;
  cl::EnginePlan engine;
  cl::EngineVariantPack pack;
  float scale = 1.f;  // the by-value scale's host value (the pack points here)
  uint64_t workspace = 0;  // its private workspace slice (ReservePrivateWorkspace)
  std::string call_engine;
  bool borrowed = false;  // graph and engine are an earlier kernel's (g_attention_plans)
};
// Kernels of one attention problem (its tuning key) share the first one's graph
// and engine plan, as in the VM (CudaDevice::FindSharedPlan): finalizing a
// fused attention plan compiles its kernel (NVRTC), tens of milliseconds each.
// The owner outlives the borrowers: every kernel is destroyed at exit.
[[maybe_unused]] static std::map<std::string, const AttentionKernel*> g_attention_plans;

[[maybe_unused]] static void DestroyAttentionKernel(AttentionKernel& a) {
  cl::DestroyEngineVariantPack(a.pack);
  if (a.borrowed) return;
  cl::DestroyEnginePlan(a.engine);
  cl::DestroyEngineGraph(a.graph);
}

// KeelAttention::ChooseEngine less the timing: the tuning entry's verdict (the
// engine configuration it names, built from its identity, or Keel's kernel);
// without one Keel's kernel stays (the VM with KEEL_CUDA_AUTOTUNE=0 holds no
// competition), but for KEEL_CUDNN_ENGINES=force: the heuristics' first engine.
// A named configuration this cuDNN does not offer ends the program.
[[maybe_unused]] static void AttentionPlanEngine(AttentionKernel& a, cl::ElementType t, bool has_mask,
                                                 const char* name) {
  if (g_engine_policy == cl::EnginePolicy::kOff) return;
  std::string why;
  if (!cl::AttentionGraphProblemOf(a.args, t, has_mask, &a.p, &why)) return;
  const bool force = g_engine_policy == cl::EnginePolicy::kForce;
  const std::string key = g_cudnn_tag + cl::AttentionProblemKey(a.p);
  if (!force) ++g_tuning_attentions;
  const std::vector<int64_t>* entry = force ? nullptr : FindTuning(key);
  cl::EngineId id;
  bool recorded = false;
  if (entry != nullptr && !cl::EngineFromTuning(*entry, &recorded, &id, cl::kAttentionTuningLeadValues)) {
    Die(std::string("kernel ") + name + ": malformed engine verdict in the tuning entry " + key);
  }
  if (!force && (!recorded || id.index < 0)) return;
  if (auto it = g_attention_plans.find(key); it != g_attention_plans.end()) {
    a.graph = it->second->graph;
    a.engine = it->second->engine;
    a.borrowed = true;
    a.scale = a.p.scale;
    a.call_engine = it->second->call_engine;
    a.workspace = ReservePrivateWorkspace(a.engine.workspace);
    return;
  }
  if (!cl::BuildAttentionGraph(CudnnHandle(), a.p, &a.graph).ok()) {
    if (!force) Die(std::string("kernel ") + name + ": cuDNN cannot build the attention graph the tuning entry " + key + " needs");
    return;  // as the VM: no graph leaves Keel's kernel
  }
  if (force) {
    std::vector<cl::EnginePlan> plans;
    std::string summary;
    cl::EngineSearch search = g_engine_search;
    search.rtc = true;  // as the VM: cuDNN's fused attention engines compile at run time
    const bool listed =
        cl::EngineCandidates(g_cudnn, cl::AttentionNumerics(a.p), a.graph, cl::kMaxConvWorkspace, search, &plans,
                             &summary).ok();
    for (size_t i = 0; i < plans.size(); ++i) {
      if (i == 0 && listed) a.engine = plans[0];
      else cl::DestroyEnginePlan(plans[i]);
    }
    if (a.engine.plan == nullptr) return;  // as the VM: no usable engine leaves Keel's kernel
  } else if (const cl::CallStatus s = cl::EnginePlanOf(g_cudnn, cl::AttentionNumerics(a.p), a.graph, id,
                                                        cl::kMaxConvWorkspace, &a.engine);
             !s.ok()) {
    const char* what = s.library == cl::CallStatus::kCudnn ? cudnnGetErrorString(static_cast<cudnnStatus_t>(s.code))
                                                           : "?";
    Die(std::string("kernel ") + name + ": the tuning entry " + key + " names the cuDNN engine configuration " +
        cl::EngineIdText(id) + ", which this cuDNN (" + std::to_string(cudnnGetVersion()) +
        ") does not offer for this attention: " + s.call + " failed: " + what);
  }
  a.scale = a.p.scale;
  a.call_engine = cl::AttentionEngineCallName(a.engine.id, a.engine.workspace);
  a.workspace = ReservePrivateWorkspace(a.engine.workspace);
  g_attention_plans[key] = &a;
}

[[maybe_unused]] static void AttentionPlanKernel(AttentionKernel& a, cl::ElementType t, bool has_mask,
                                                 const char* kernel_name) {
  (void)RuntimeKernels(cl::ElementType::kF32);  // decides the runtime module's launch mode once
  a.launch = cl::AttentionPlan(&a.args);
  const std::string name = cl::AttentionKernelName(t, a.args.d, a.args.dv);
#define KEEL_ATTENTION_SYMBOLS(SUFFIX, DMAX, EXACT)                              \
  if (name == "keel_attention_f16_" #SUFFIX) a.fn = RuntimeFunction(reinterpret_cast<const void*>(&keel_attention_f16_##SUFFIX)); \
  if (name == "keel_attention_bf16_" #SUFFIX) a.fn = RuntimeFunction(reinterpret_cast<const void*>(&keel_attention_bf16_##SUFFIX));
  KEEL_ATTENTION_WIDTH_CLASSES(KEEL_ATTENTION_SYMBOLS)
#undef KEEL_ATTENTION_SYMBOLS
  if (a.fn == nullptr) Die("keel.attention: no runtime kernel for head widths " + std::to_string(a.args.d) + ", " +
                           std::to_string(a.args.dv));
  CU_CHECK(cuFuncSetAttribute(a.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                              static_cast<int>(a.launch.shared)));
  a.call = cl::AttentionCallName(name, a.launch);
  AttentionPlanEngine(a, t, has_mask, kernel_name);
}
[[maybe_unused]] static const std::string& AttentionRun(AttentionKernel& a, const void* q, const void* k,
                                                        const void* v, const void* mask, void* y) {
  if (a.engine.plan != nullptr) {
    CUDNN_CHECK(cl::AttentionEngineExecute(g_cudnn, a.engine.plan, &a.pack, a.p, q, k, v, mask, y, &a.scale,
                                           PrivateWorkspace(a.workspace)));
    return a.call_engine;
  }
  a.args.q = q;
  a.args.k = k;
  a.args.v = v;
  a.args.mask = mask;
  a.args.y = y;
  void* params[] = {&a.args};
  CU_CHECK(LaunchRuntimeKernelShared(a.fn, static_cast<unsigned>(a.launch.blocks), a.launch.threads, params,
                                     a.launch.shared));
  return a.call;
}

// ---- keel.conv2d: vm/cuda/conv_kernel.cc (KeelConv) ----
struct KeelConvKernel {
  cl::ConvKernelArgs args;  // the attributes' part; the tensors are set per launch
  CUfunction fn = nullptr;
  cl::ConvKernelLaunch launch;
  std::string call;
};

[[maybe_unused]] static void KeelConvPlanKernel(KeelConvKernel& c, cl::ElementType t, const char* name) {
  (void)RuntimeKernels(cl::ElementType::kF32);  // decides the runtime module's launch mode once
  c.launch = cl::ConvKernelPlan(&c.args);
  if (const char* why = cl::ConvKernelRefusal(c.args, c.launch)) Die(std::string("kernel ") + name + " (keel.conv2d): " + why);
  const std::string fn = cl::ConvKernelName(t, c.args.c, c.args.k);
#define KEEL_CONV_SYMBOL(CP, NT)                                                                                    \
  if (fn == "keel_conv_nhwc_f16_c" #CP "_n" #NT)                                                                   \
    c.fn = RuntimeFunction(reinterpret_cast<const void*>(&keel_conv_nhwc_f16_c##CP##_n##NT));                      \
  if (fn == "keel_conv_nhwc_bf16_c" #CP "_n" #NT)                                                                  \
    c.fn = RuntimeFunction(reinterpret_cast<const void*>(&keel_conv_nhwc_bf16_c##CP##_n##NT));
  KEEL_CONV_CLASSES(KEEL_CONV_SYMBOL)
#undef KEEL_CONV_SYMBOL
  if (c.fn == nullptr) Die(std::string("kernel ") + name + " (keel.conv2d): no runtime kernel " + fn);
  // The function is shared by every kernel of its class: the largest limit any may take (as the VM).
  CU_CHECK(cuFuncSetAttribute(c.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(cl::kConvMaxShared)));
  c.call = cl::ConvKernelCallName(fn, c.launch);
}
// KeelConv::Launch; returns the call's trace name.
[[maybe_unused]] static const std::string& KeelConvRun(KeelConvKernel& c, const void* x, const void* w,
                                                       const void* bias, const void* res, void* y) {
  auto address = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
  if (((address(x) | address(w)) & 15) != 0 || ((address(y) | address(res)) & 3) != 0) {
    Die("keel.conv2d: X and W must be 16-byte aligned, Y and the residual 4-byte aligned");
  }
  c.args.x = x;
  c.args.w = w;
  c.args.bias = bias;
  c.args.res = res;
  c.args.y = y;
  void* params[] = {&c.args};
  CU_CHECK(LaunchRuntimeKernelShared(c.fn, static_cast<unsigned>(c.launch.blocks), c.launch.threads, params,
                                     c.launch.shared));
  return c.call;
}

)KEELPRELUDE";
}

}  // namespace keel::driver::cuda_host
