// tests/compiler/codegen_cuda/nvptx_emitter_test.cc — the NVPTX back end on the
// build machine (no GPU needed): every op kind lowers, maps onto the grid as
// intended, emits PTX that ptxas accepts for sm_90 (the real check: a wrong
// PTX fails here), and the kernel library is deterministic and exports the
// ABI symbols with the embedded cubin and PTX.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "compiler/codegen/gpu_mapping.h"
#include "compiler/codegen/llvm_nvptx_emitter.h"
#include "keel/kernel_abi.h"
#include "tests/compiler/codegen/codegen_test_util.h"

namespace keel::codegen::testing {
namespace {

using ir::Attributes;

bool HavePtxas() { return access(NvptxTargetOptions().ptxas.c_str(), X_OK) == 0; }

LowerOptions CudaLowering() { return LowerOptionsForCuda(); }

// A zoo of single-op and fused kernels covering every lowering family.
struct Zoo {
  GraphBuilder b;
  std::vector<std::pair<std::string, ir::Node*>> nodes;  // label, node

  void Add(const std::string& label, ir::Node* n) {
    ASSERT_NE(n, nullptr) << label;
    nodes.push_back({label, n});
  }

  Zoo() {
    ir::Value* x = b.Input("x", {4, 64, 96});
    ir::Value* y = b.Input("y", {1, 1, 96});
    ir::Value* i = b.Input("i", {4, 64, 96}, ir::DType::kI32);
    ir::Value* img = b.Input("img", {2, 16, 14, 14});
    ir::Value* w = b.ConstF32("w", {8, 16, 3, 3}, std::vector<float>(8 * 16 * 9, 0.5f));
    ir::Value* dw = b.ConstF32("dw", {16, 1, 3, 3}, std::vector<float>(16 * 9, 0.25f));
    ir::Value* a = b.Input("a", {3, 32, 40});
    ir::Value* bm = b.Input("bm", {3, 40, 24});
    ir::Value* g = b.Input("g", {32, 48});
    ir::Value* gw = b.Input("gw", {24, 48});
    ir::Value* idx = b.ConstI64("idx", {3}, {5, 0, 2});
    ir::Value* scale = b.ConstF32("scale", {96}, std::vector<float>(96, 1.5f));
    ir::Value* bias = b.ConstF32("bias", {96}, std::vector<float>(96, 0.1f));
    ir::Value* two = b.ConstF32("two", {}, {2.0f});

    Add("add_broadcast", b.Op("Add", {x, y}));
    Add("relu", b.Op("Relu", {x}));
    Add("math", b.Op("Erf", {b.Op("Tanh", {b.Op("Exp", {x})->output(0)})->output(0)}));
    Add("pow", b.Op("Pow", {x, two}));
    Add("sigmoid", b.Op("Sigmoid", {x}));
    Add("sqrt", b.Op("Sqrt", {b.Op("Relu", {x})->output(0)}));
    Add("div_neg", b.Op("Div", {b.Op("Neg", {x})->output(0), y}));
    Add("cast_i32", b.Op("Cast", {i}, [] { Attributes at; at.Set("to", std::string("f32")); return at; }()));
    Add("clip", b.Op("Clip", {x, b.ConstF32("lo", {}, {0.0f}), b.ConstF32("hi", {}, {6.0f})}));
    Add("transpose", b.Op("Transpose", {x}, [] { Attributes at; at.Set("perm", std::vector<int64_t>{2, 0, 1}); return at; }()));
    Add("concat", b.Op("Concat", {x, x}, [] { Attributes at; at.Set("axis", int64_t{1}); return at; }()));
    Add("gather", b.Op("Gather", {x, idx}, [] { Attributes at; at.Set("axis", int64_t{1}); return at; }()));
    Add("gemm", b.Op("Gemm", {g, gw}, [] { Attributes at; at.Set("transB", int64_t{1}); return at; }()));
    Add("matmul_batched", b.Op("MatMul", {a, bm}));
    Add("conv", b.Op("Conv", {img, w}, [] {
          Attributes at; at.Set("pads", std::vector<int64_t>{1, 1, 1, 1}); at.Set("kernel_shape", std::vector<int64_t>{3, 3});
          return at; }()));
    Add("conv_depthwise", b.Op("Conv", {img, dw}, [] {
          Attributes at; at.Set("group", int64_t{16}); at.Set("kernel_shape", std::vector<int64_t>{3, 3});
          return at; }()));
    ir::Value* dw7 = b.ConstF32("dw7", {16, 1, 7, 7}, std::vector<float>(16 * 49, 0.125f));
    Add("conv_depthwise_7x7", b.Op("Conv", {img, dw7}, [] {  // borders and a partial run of columns
          Attributes at; at.Set("group", int64_t{16}); at.Set("pads", std::vector<int64_t>{3, 3, 3, 3});
          return at; }()));
    Attributes pool;
    pool.Set("kernel_shape", std::vector<int64_t>{3, 3});
    pool.Set("strides", std::vector<int64_t>{2, 2});
    Add("maxpool", b.Op("MaxPool", {img}, pool));
    Add("avgpool", b.Op("AveragePool", {img}, pool));
    Attributes pool_nhwc = pool;
    pool_nhwc.Set("keel.channels_last", int64_t{1});
    Add("avgpool_nhwc", b.Op("AveragePool", {b.Input("img_nhwc", {2, 14, 14, 16})}, pool_nhwc));
    Add("global_avgpool", b.Op("GlobalAveragePool", {img}));
    Add("softmax", b.Op("Softmax", {x}, [] { Attributes at; at.Set("axis", int64_t{-1}); return at; }()));
    Add("softmax_middle", b.Op("Softmax", {x}, [] { Attributes at; at.Set("axis", int64_t{1}); return at; }()));
    Add("layernorm", b.Op("LayerNormalization", {x, scale, bias}, [] { Attributes at; at.Set("axis", int64_t{-1}); return at; }()));
    Add("reduce_mean", b.Op("ReduceMean", {x}, [] { Attributes at; at.Set("axes", std::vector<int64_t>{-1}); return at; }()));
    Add("reduce_mean_all", b.Op("ReduceMean", {x}, [] { Attributes at; at.Set("keepdims", int64_t{0}); return at; }()));
    Add("reduce_mean_middle", b.Op("ReduceMean", {x}, [] { Attributes at; at.Set("axes", std::vector<int64_t>{1}); return at; }()));
    ir::Node* fused = MakeFused(b.graph(), {img, w, bias}, [](GraphBuilder& fb, const std::vector<ir::Value*>& in) {
      Attributes at;
      at.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
      at.Set("kernel_shape", std::vector<int64_t>{3, 3});
      ir::Value* c = fb.Op("Conv", {in[0], in[1]}, at)->output(0);
      return std::vector<ir::Value*>{fb.Op("Relu", {c})->output(0)};
    });
    Add("fused_conv_relu", fused);
  }
};

std::vector<KernelSpec> LowerZoo(Zoo& zoo) {
  std::vector<KernelSpec> specs;
  int64_t index = 0;
  for (auto& [label, node] : zoo.nodes) {
    Result<KernelSpec> spec = LowerNodeToKernel(*node, index++, CudaLowering());
    EXPECT_TRUE(spec.ok()) << label << ": " << spec.status().ToString();
    if (spec.ok()) specs.push_back(std::move(spec).value());
  }
  return specs;
}

std::string LabelOf(const Zoo& zoo, size_t i) { return zoo.nodes[i].first; }

TEST(GpuMapping, PicksTheIntendedMappingPerOpFamily) {
  Zoo zoo;
  std::vector<KernelSpec> specs = LowerZoo(zoo);
  ASSERT_EQ(specs.size(), zoo.nodes.size());
  std::map<std::string, GpuPhaseKind> want = {
      {"add_broadcast", GpuPhaseKind::kFlat},           {"transpose", GpuPhaseKind::kFlat},
      {"softmax", GpuPhaseKind::kBlockPerRow},          {"layernorm", GpuPhaseKind::kBlockPerRow},
      {"reduce_mean", GpuPhaseKind::kBlockPerRow},      {"reduce_mean_all", GpuPhaseKind::kBlockPerRow},
      {"global_avgpool", GpuPhaseKind::kBlockPerRow},
      // Pools are lowered per output row (vector chunks + scalar borders, for the
      // CPU): one thread per row on the GPU. Slow for big pools, which is why the
      // CUDA back end sends every pool cuDNN can do to cudnn.pool2d.
      {"maxpool", GpuPhaseKind::kThreadPerIter},
      // Channels-last pools: one output pixel per (b, oh, ow), channels innermost, coalesced.
      {"avgpool_nhwc", GpuPhaseKind::kFlat},
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    Result<GpuMapping> m = MapKernelToGpu(*specs[i].kernel);
    ASSERT_TRUE(m.ok()) << LabelOf(zoo, i) << ": " << m.status().ToString();
    ASSERT_FALSE(m->phases.empty());
    EXPECT_GE(m->launch.grid, 1u);
    EXPECT_GE(m->launch.block, 32u) << LabelOf(zoo, i);
    EXPECT_LE(m->launch.block, 1024u);
    EXPECT_LE(m->launch.grid, 132u * 64u);
    auto it = want.find(LabelOf(zoo, i));
    if (it != want.end()) {
      EXPECT_EQ(GpuPhaseKindName(m->phases[0].kind), std::string(GpuPhaseKindName(it->second)))
          << LabelOf(zoo, i) << ": " << m->Describe();
    }
  }
}

TEST(GpuMapping, ElementwiseUsesFourWideItemsAndAGridCappedForTheH200) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1024, 4096});
  ir::Node* n = b.Op("Relu", {x});
  ASSERT_NE(n, nullptr);
  Result<KernelSpec> spec = LowerNodeToKernel(*n, 0, CudaLowering());
  ASSERT_TRUE(spec.ok());
  Result<GpuMapping> m = MapKernelToGpu(*spec->kernel);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->phases.size(), 1u);
  EXPECT_EQ(m->phases[0].kind, GpuPhaseKind::kFlat);
  EXPECT_EQ(m->phases[0].vector_width, 4);
  EXPECT_EQ(m->launch.block, 256u);
  EXPECT_EQ(m->launch.grid, 132u * 8u);  // 1M items: capped, grid-stride
  // Small tensors get just enough blocks.
  ir::Node* small = b.Op("Relu", {b.Input("s", {3, 100})});
  Result<KernelSpec> s2 = LowerNodeToKernel(*small, 1, CudaLowering());
  ASSERT_TRUE(s2.ok());
  Result<GpuMapping> m2 = MapKernelToGpu(*s2->kernel);
  ASSERT_TRUE(m2.ok());
  EXPECT_EQ(m2->launch.grid, 2u) << m2->Describe();  // 300 items / 256
}

TEST(NvptxEmitter, EveryOpKindGivesPtxThatPtxasAccepts) {
  Zoo zoo;
  std::vector<KernelSpec> specs = LowerZoo(zoo);
  NvptxTargetOptions options;
  Result<std::string> ptx = EmitNvptxPtx(specs, options);
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_NE(ptx->find(".target sm_90"), std::string::npos);
  for (const KernelSpec& s : specs) EXPECT_NE(ptx->find(".entry " + s.name + "("), std::string::npos) << s.name;
  EXPECT_NE(ptx->find("shfl.sync.bfly"), std::string::npos) << "row reductions use warp shuffles";
  EXPECT_NE(ptx->find("bar.sync"), std::string::npos);
  EXPECT_EQ(ptx->find("__nv_"), std::string::npos) << "libdevice calls must be linked and inlined";
  EXPECT_EQ(ptx->find(".extern .func"), std::string::npos) << "no unresolved device functions";
  if (!HavePtxas()) GTEST_SKIP() << "ptxas not installed: PTX checked textually only";
  Result<std::vector<uint8_t>> cubin = AssemblePtx(*ptx, options);
  ASSERT_TRUE(cubin.ok()) << cubin.status().ToString();
  ASSERT_GE(cubin->size(), 4u);
  EXPECT_EQ(std::memcmp(cubin->data(), "\x7f" "ELF", 4), 0);
}

TEST(NvptxEmitter, ElementwiseLoadsAreVectorizedAndMathComesFromLibdevice) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {512, 1024});
  ir::Value* y = b.Input("y", {512, 1024});
  ir::Node* n = MakeFused(b.graph(), {x, y}, [](GraphBuilder& fb, const std::vector<ir::Value*>& in) {
    ir::Value* s = fb.Op("Add", {in[0], in[1]})->output(0);
    return std::vector<ir::Value*>{fb.Op("Exp", {s})->output(0)};
  });
  Result<KernelSpec> spec = LowerNodeToKernel(*n, 0, CudaLowering());
  ASSERT_TRUE(spec.ok());
  Result<std::string> ptx = EmitNvptxPtx({*spec}, NvptxTargetOptions());
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_NE(ptx->find(".v4.f32"), std::string::npos) << "128-bit loads/stores expected";
  EXPECT_NE(ptx->find("ex2.approx"), std::string::npos) << "libdevice expf inlined";
  Result<std::string> ir = EmitNvptxModuleIR({*spec}, NvptxTargetOptions(), false);
  ASSERT_TRUE(ir.ok());
  EXPECT_NE(ir->find("!\"kernel\""), std::string::npos);
  EXPECT_NE(ir->find("nvvm-reflect-ftz"), std::string::npos);
}

// LLVM 16's NVPTX back end selects `((i >> k) & 1) * M` (InstCombine: a select
// of 0/M on one bit) as a bit-field extract whose field runs past bit 63, which
// reads zeros where the value needs the bit replicated: DepthToSpace read the
// wrong elements on the GPU. The emitter rewrites the select before codegen;
// no extract may start at bit 63.
TEST(NvptxEmitter, OneBitTimesConstantIndexArithmeticStaysCorrect) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 8, 2, 3});
  ir::Node* n = MakeFused(b.graph(), {x}, [](GraphBuilder& fb, const std::vector<ir::Value*>& in) {
    Attributes attrs;
    attrs.Set("blocksize", int64_t{2});
    attrs.Set("mode", std::string("DCR"));
    return std::vector<ir::Value*>{fb.Op("DepthToSpace", {in[0]}, attrs)->output(0)};
  });
  Result<KernelSpec> spec = LowerNodeToKernel(*n, 0, CudaLowering());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  Result<std::string> ptx = EmitNvptxPtx({*spec}, NvptxTargetOptions());
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_EQ(ptx->find(", 63, "), std::string::npos) << *ptx;
}

// LLVM 16's NVPTX back end narrows `X & 1` to a one-bit multiply it cannot select
// (a fatal error that aborted keelc): the GPU direct convolution over two channels
// (a depthwise one, channels innermost: `it % 2`) hit it in f16. The emitter
// freezes X first; the kernel compiles.
TEST(NvptxEmitter, OneBitOfAProductCompiles) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {1, 128, 128, 2}, ir::DType::kF16);
  ir::Value* w = b.Input("w", {2, 3, 3, 1}, ir::DType::kF16);
  ir::Value* bias = b.Input("bias", {2}, ir::DType::kF16);
  Attributes attrs;
  attrs.Set("keel.channels_last", int64_t{1});
  attrs.Set("group", int64_t{2});
  attrs.Set("pads", std::vector<int64_t>{1, 1, 1, 1});
  ir::Node* n = b.Op("Conv", {x, w, bias}, attrs);
  ASSERT_NE(n, nullptr);
  Result<KernelSpec> spec = LowerNodeToKernel(*n, 0, CudaLowering());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  Result<std::string> ptx = EmitNvptxPtx({*spec}, NvptxTargetOptions());
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Softmax and LayerNorm make three passes over a row (max/mean, sum/variance,
// write); with rows split evenly over the block each thread must load its
// elements of the row once (kept in registers), not once per pass.
// Each thread loads its row elements once for all passes, four contiguous f32
// at a time (one 128-bit load); a reduction across rows (stride 64) keeps one
// element per load.
TEST(NvptxEmitter, RowReductionsLoadEachRowElementOnce) {
  GraphBuilder b;
  ir::Value* x = b.Input("x", {8, 1024});  // a warp per row, 32 elements each
  ir::Node* sm = b.Op("Softmax", {x}, [] { Attributes at; at.Set("axis", int64_t{-1}); return at; }());
  Result<KernelSpec> spec = LowerNodeToKernel(*sm, 0, CudaLowering());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  Result<GpuMapping> mapping = CudaKernelMapping(*spec, NvptxTargetOptions());
  ASSERT_TRUE(mapping.ok());
  ASSERT_EQ(mapping->phases.size(), 1u);
  ASSERT_EQ(mapping->phases[0].kind, GpuPhaseKind::kBlockPerRow);
  ASSERT_EQ(mapping->phases[0].row_threads, 32);
  ASSERT_EQ(mapping->phases[0].vector_width, 4) << mapping->Describe();
  const size_t loads = 1024 / 32 / 4;
  Result<std::string> ptx = EmitNvptxPtx({*spec}, NvptxTargetOptions());
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_EQ(Count(*ptx, "ld.global"), loads) << *ptx;
  EXPECT_EQ(Count(*ptx, "ld.global.nc.v4.f32"), loads) << *ptx;
  EXPECT_EQ(Count(*ptx, "st.global.v4.f32"), loads);

  ir::Node* across = b.Op("ReduceSum", {b.Input("y", {1024, 64})}, [] {
    Attributes at;
    at.Set("axes", std::vector<int64_t>{0});
    return at;
  }());
  Result<KernelSpec> across_spec = LowerNodeToKernel(*across, 1, CudaLowering());
  ASSERT_TRUE(across_spec.ok()) << across_spec.status().ToString();
  Result<GpuMapping> across_map = CudaKernelMapping(*across_spec, NvptxTargetOptions());
  ASSERT_TRUE(across_map.ok());
  ASSERT_EQ(across_map->phases[0].kind, GpuPhaseKind::kBlockPerRow) << across_map->Describe();
  EXPECT_EQ(across_map->phases[0].vector_width, 1) << across_map->Describe();

  // A half LayerNorm over BERT-base's width: eight elements (16 bytes) a load, three a thread.
  ir::Value* h = b.Input("h", {64, 768}, ir::DType::kF16);
  ir::Value* gamma = b.Input("gamma", {768}, ir::DType::kF16);
  ir::Value* beta = b.Input("beta", {768}, ir::DType::kF16);
  ir::Node* ln = b.Op("LayerNormalization", {h, gamma, beta}, [] {
    Attributes at;
    at.Set("axis", int64_t{-1});
    return at;
  }());
  Result<KernelSpec> ln_spec = LowerNodeToKernel(*ln, 2, CudaLowering());
  ASSERT_TRUE(ln_spec.ok()) << ln_spec.status().ToString();
  Result<GpuMapping> ln_map = CudaKernelMapping(*ln_spec, NvptxTargetOptions());
  ASSERT_TRUE(ln_map.ok());
  EXPECT_EQ(ln_map->phases[0].vector_width, 8) << ln_map->Describe();
  Result<std::string> ln_ptx = EmitNvptxPtx({*ln_spec}, NvptxTargetOptions());
  ASSERT_TRUE(ln_ptx.ok()) << ln_ptx.status().ToString();
  EXPECT_EQ(Count(*ln_ptx, "ld.global.nc.v4.b32"), 9u) << *ln_ptx;  // x, gamma and beta: three each
  EXPECT_EQ(Count(*ln_ptx, "st.global.v4.b32"), 3u) << *ln_ptx;
}

// A flat kernel's item keeps at most 64 loads of one buffer, the load/store vectorizer's chunk:
// a 3x3 channels-last average pool in f16 takes 4 channels an item (36 input loads), each tap one
// 64-bit load; at 8 channels (72 loads) all but the first tap stayed 16- or 32-bit. A 2x2 window
// keeps 8 channels an item, each tap one 128-bit load.
TEST(NvptxEmitter, FlatItemsKeepTheirLoadsWithinOneVectorizerChunk) {
  for (int64_t k : {3, 2}) {
    SCOPED_TRACE("window " + std::to_string(k));
    GraphBuilder b;
    Attributes at;
    at.Set("kernel_shape", std::vector<int64_t>{k, k});
    at.Set("pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
    at.Set("count_include_pad", int64_t{1});
    at.Set("keel.channels_last", int64_t{1});
    ir::Node* pool = b.Op("AveragePool", {b.Input("x", {8, 17, 17, 256}, ir::DType::kF16)}, at);
    ASSERT_NE(pool, nullptr);
    Result<KernelSpec> spec = LowerNodeToKernel(*pool, 0, CudaLowering());
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    Result<GpuMapping> mapping = CudaKernelMapping(*spec, NvptxTargetOptions());
    ASSERT_TRUE(mapping.ok());
    ASSERT_EQ(mapping->phases[0].kind, GpuPhaseKind::kFlat) << mapping->Describe();
    EXPECT_EQ(mapping->phases[0].vector_width, k == 3 ? 4 : 8) << mapping->Describe();
    Result<std::string> ptx = EmitNvptxPtx({*spec}, NvptxTargetOptions());
    ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
    const size_t taps = static_cast<size_t>(k * k);
    EXPECT_EQ(Count(*ptx, "ld.global"), taps) << *ptx;
    EXPECT_EQ(Count(*ptx, k == 3 ? "ld.global.nc.v4.b16" : "ld.global.nc.v4.b32"), taps) << *ptx;
  }
}

// A kernel whose results are all half rounds its f32 math to 11 (8) bits
// anyway: its divisions are div.full (2 ulp of f32) and its reciprocals
// rcp.approx. f32 results keep IEEE division. bf16 results narrow with one
// cvt.rn.bf16.f32 where the target has it (sm_80+), else in integer code, and
// their loads and stores stay vectorized.
TEST(NvptxEmitter, HalfResultsDivideFastAndBf16NarrowsInOneInstruction) {
  auto ptx_of = [](ir::DType t, const char* op, const std::string& arch, std::vector<int64_t> shape = {4, 64}) {
    GraphBuilder b;
    ir::Value* x = b.Input("x", shape, t);
    ir::Value* y = b.Input("y", shape, t);
    ir::Node* n = b.Op(op, {x, y});
    Result<KernelSpec> spec = LowerNodeToKernel(*n, 0, CudaLowering());
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    if (!spec.ok()) return std::string();
    NvptxTargetOptions o;
    o.arch = arch;
    Result<std::string> ptx = EmitNvptxPtx({*spec}, o);
    EXPECT_TRUE(ptx.ok()) << ptx.status().ToString();
    return ptx.ok() ? *ptx : std::string();
  };
  const std::string f16 = ptx_of(ir::DType::kF16, "Div", "sm_90");
  EXPECT_NE(f16.find("div.full.f32"), std::string::npos) << f16;
  EXPECT_EQ(f16.find("div.rn.f32"), std::string::npos);
  const std::string f32 = ptx_of(ir::DType::kF32, "Div", "sm_90");
  EXPECT_NE(f32.find("div.rn.f32"), std::string::npos) << f32;
  EXPECT_EQ(f32.find("div.full"), std::string::npos);
  EXPECT_NE(ptx_of(ir::DType::kBF16, "Add", "sm_90").find("cvt.rn.bf16.f32"), std::string::npos);
  // The conversion is pure: where a thread takes a run of elements, the load/store
  // vectorizer still merges the accesses around it.
  const std::string runs = ptx_of(ir::DType::kBF16, "Add", "sm_90", {32, 64, 56, 56});
  EXPECT_NE(runs.find("ld.global.nc.v4.u16"), std::string::npos) << runs;
  EXPECT_EQ(runs.find("st.global.u16"), std::string::npos) << runs;
  EXPECT_EQ(ptx_of(ir::DType::kBF16, "Add", "sm_75").find("cvt.rn.bf16.f32"), std::string::npos);
  // A bf16 constant in a kernel (Pad's zeros) is its bits, folded at compile time.
  GraphBuilder b;
  Attributes at;
  at.Set("pads", std::vector<int64_t>{0, 0, 0, 5});
  at.Set("mode", std::string("constant"));
  ir::Node* pad = b.Op("Pad", {b.Input("x", {2, 3}, ir::DType::kBF16)}, at);
  Result<KernelSpec> spec = LowerNodeToKernel(*pad, 0, CudaLowering());
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  Result<std::string> ptx = EmitNvptxPtx({*spec}, NvptxTargetOptions());
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
}

// sm_90: every kernel waits for its predecessor grid before touching memory, so
// the VM may launch it as a programmatic dependent; older targets never do.
TEST(NvptxEmitter, Sm90KernelsWaitForThePreviousGrid) {
  Zoo zoo;
  std::vector<KernelSpec> specs = LowerZoo(zoo);
  ASSERT_FALSE(specs.empty());
  Result<std::string> ptx = EmitNvptxPtx(specs, NvptxTargetOptions());
  ASSERT_TRUE(ptx.ok()) << ptx.status().ToString();
  EXPECT_EQ(Count(*ptx, "griddepcontrol.wait;"), Count(*ptx, ".entry "));
  EXPECT_TRUE(NvptxGridDependency("sm_90"));
  EXPECT_TRUE(NvptxGridDependency("sm_100"));
  EXPECT_FALSE(NvptxGridDependency("sm_80"));
  NvptxTargetOptions sm80;
  sm80.arch = "sm_80";
  Result<std::string> old = EmitNvptxPtx({specs[0]}, sm80);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(Count(*old, "griddepcontrol"), 0u);
}

TEST(NvptxEmitter, RejectsBadKernelNamesAndArch) {
  Zoo zoo;
  std::vector<KernelSpec> specs = LowerZoo(zoo);
  ASSERT_GE(specs.size(), 2u);
  std::vector<KernelSpec> dup = {specs[0], specs[0]};
  EXPECT_EQ(EmitNvptxPtx(dup, NvptxTargetOptions()).status().code(), StatusCode::kInvalidArgument);
  NvptxTargetOptions bad;
  bad.arch = "gfx90a";
  EXPECT_EQ(EmitNvptxPtx({specs[0]}, bad).status().code(), StatusCode::kUnsupported);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(NvptxEmitter, LibraryIsDeterministicAndExportsTheCudaModule) {
  Zoo zoo;
  std::vector<KernelSpec> specs = LowerZoo(zoo);
  char tmpl[] = "/tmp/keel-nvptx-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, p1 = dir + "/a.keel.so", p2 = dir + "/b.keel.so";
  NvptxLibraryInfo info;
  Status s1 = EmitCudaKernelLibrary(specs, "keel-test-id", p1, NvptxTargetOptions(), &info);
  ASSERT_TRUE(s1.ok()) << s1.ToString();
  Status s2 = EmitCudaKernelLibrary(specs, "keel-test-id", p2, NvptxTargetOptions());
  ASSERT_TRUE(s2.ok()) << s2.ToString();
  std::string a = ReadAll(p1), b = ReadAll(p2);
  EXPECT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "two builds of the same kernels differ";
  EXPECT_GT(info.ptx_bytes, 0u);
  EXPECT_EQ(info.cubin_bytes > 0, HavePtxas()) << info.note;

  void* h = dlopen(p1.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << dlerror();
  auto* ver = static_cast<const uint32_t*>(dlsym(h, "keel_kernel_abi_version"));
  auto* id = static_cast<const char*>(dlsym(h, "keel_kernel_library_id"));
  auto* ptx = static_cast<const char*>(dlsym(h, "keel_cuda_ptx"));
  auto* ptx_size = static_cast<const uint64_t*>(dlsym(h, "keel_cuda_ptx_size"));
  auto* cubin = static_cast<const unsigned char*>(dlsym(h, "keel_cuda_cubin"));
  auto* cubin_size = static_cast<const uint64_t*>(dlsym(h, "keel_cuda_cubin_size"));
  ASSERT_TRUE(ver && id && ptx && ptx_size && cubin && cubin_size);
  EXPECT_EQ(*ver, KEEL_KERNEL_ABI_VERSION);
  EXPECT_STREQ(id, "keel-test-id");
  EXPECT_EQ(*ptx_size, info.ptx_bytes);
  EXPECT_EQ(std::strlen(ptx), *ptx_size) << "PTX is NUL-terminated, size excludes the NUL";
  EXPECT_NE(std::string(ptx).find(".entry " + specs[0].name), std::string::npos);
  EXPECT_EQ(*cubin_size, info.cubin_bytes);
  if (*cubin_size > 0) {
    EXPECT_EQ(std::memcmp(cubin, "\x7f" "ELF", 4), 0);
  }
  dlclose(h);
  std::remove(p1.c_str());
  std::remove(p2.c_str());
  rmdir(dir.c_str());
}

TEST(NvptxEmitter, WithoutPtxasTheLibraryCarriesPtxOnly) {
  GraphBuilder b;
  ir::Node* n = b.Op("Relu", {b.Input("x", {8, 8})});
  ASSERT_NE(n, nullptr);
  Result<KernelSpec> spec = LowerNodeToKernel(*n, 0, CudaLowering());
  ASSERT_TRUE(spec.ok());
  NvptxTargetOptions options;
  options.ptxas = "/nonexistent/ptxas";
  char tmpl[] = "/tmp/keel-nvptx-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string path = std::string(tmpl) + "/m.keel.so";
  NvptxLibraryInfo info;
  Status s = EmitCudaKernelLibrary({*spec}, "id", path, options, &info);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(info.cubin_bytes, 0u);
  EXPECT_NE(info.note.find("PTX only"), std::string::npos);
  std::remove(path.c_str());
  rmdir(tmpl);
}

}  // namespace
}  // namespace keel::codegen::testing
