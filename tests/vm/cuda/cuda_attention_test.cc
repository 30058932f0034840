// tests/vm/cuda/cuda_attention_test.cc — the "keel.attention" library kernel
// (serialization/library_ops.h; vm/cuda/attention_kernel.cuh) in f16 and bf16
// against a double-precision reference fed the same rounded inputs: heads read
// in place from one [S, B, 3E] projection (PyTorch's layout, 16-byte loads),
// odd sizes on the element-wise load path (query and key counts not multiples
// of the 64-row tiles, widths not multiples of 16), K stored transposed, a
// broadcast mask with large negative entries, head width 128, a single query;
// each with and without CUDA graphs. Load-time validation: views outside their
// arguments and widths above the limit are refused. Skips without a GPU,
// except the launch plan's divisions, which are checked on the host.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/vm/cuda/cuda_test_programs.h"
#include "vm/cuda/library_calls_attention.h"

namespace keel::cudatest {
namespace {

using ser::AttrDesc;

struct View {
  int64_t offset = 0;
  std::vector<int64_t> batch;  // one stride per digit
  int64_t row = 0, col = 0;
  std::vector<int64_t> Encode() const {
    std::vector<int64_t> v{offset};
    v.insert(v.end(), batch.begin(), batch.end());
    v.push_back(row);
    v.push_back(col);
    return v;
  }
  int64_t At(const std::vector<int64_t>& digits, int64_t r, int64_t c) const {
    int64_t o = offset + r * row + c * col;
    for (size_t t = 0; t < digits.size(); ++t) o += digits[t] * batch[t];
    return o;
  }
};

struct Case {
  const char* name;
  std::vector<int64_t> radix;
  int64_t sq, sk, d, dv;
  float scale;
  // Tensor sizes in elements: Q, K, V (0: the same tensor as Q), mask (0: none), Y.
  int64_t q_elems, k_elems, v_elems, mask_elems, y_elems;
  View q, k, v, mask, y;
  // With VmOptions::cudnn_engines kForce the attention must run as cuDNN's
  // fused engine (library_calls_cudnn_attention.h); else either may run.
  bool cudnn = false;
};

// PyTorch's MultiheadAttention layout: [S, B, 3E] projection, Y [S, B*H*D].
Case TorchHeads(const char* name, int64_t S, int64_t B, int64_t H, int64_t D) {
  const int64_t E = H * D;
  Case c{name, {B, H}, S, S, D, D, 1.f / std::sqrt(static_cast<float>(D)), S * B * 3 * E, 0, 0, 0, S * B * E,
         {}, {}, {}, {}, {}};
  c.q = {0, {3 * E, D}, B * 3 * E, 1};
  c.k = {E, {3 * E, D}, B * 3 * E, 1};
  c.v = {2 * E, {3 * E, D}, B * 3 * E, 1};
  c.y = {0, {E, D}, B * E, 1};
  c.cudnn = true;
  return c;
}

// Dense [batch, rows, cols] operands; K transposed ([batch, d, sk]) when asked;
// mask [sq, sk] shared by every batch entry when asked.
Case Dense(const char* name, int64_t batch, int64_t sq, int64_t sk, int64_t d, int64_t dv, bool k_transposed,
           bool mask) {
  Case c{name, {batch}, sq, sk, d, dv, 0.3f, batch * sq * d, batch * sk * d, batch * sk * dv, mask ? sq * sk : 0,
         batch * sq * dv, {}, {}, {}, {}, {}};
  c.q = {0, {sq * d}, d, 1};
  c.k = k_transposed ? View{0, {sk * d}, 1, sk} : View{0, {sk * d}, d, 1};
  c.v = {0, {sk * dv}, dv, 1};
  if (mask) c.mask = {0, {0}, sk, 1};
  c.y = {0, {sq * dv}, dv, 1};
  return c;
}

std::vector<Case> Cases() {
  std::vector<Case> cs;
  cs.push_back(TorchHeads("torch_heads", 37, 2, 3, 64));
  // Key warps per query tile (AttentionPlan): 4 and 2 for BERT-base's heads at batch 1 and 8, 1 for
  // a large batch (four query tiles per block, the last block's partly past the queries).
  cs.push_back(TorchHeads("bert_base_batch1", 128, 1, 12, 64));
  cs.push_back(TorchHeads("bert_base_batch8", 128, 8, 12, 64));
  // ViT-B/16's 197 tokens: 13 query tiles, the last block's last tiles wholly past the queries (no
  // math, they only copy), the last step 5 keys; one key warp (the batch of 4) and two (the batch of 2,
  // whose blocks of two tiles merge through shared memory).
  cs.push_back(TorchHeads("vit_batch4", 197, 4, 12, 64));
  cs.push_back(TorchHeads("vit_batch2_two_key_warps", 197, 2, 12, 64));
  cs.push_back(Dense("one_key_warp", 260, 70, 80, 32, 24, false, true));
  // A negative scale: the maximum does not commute with it, so the scores are scaled in place.
  Case negative = Dense("negative_scale", 5, 33, 90, 64, 64, false, false);
  negative.scale = -0.3f;
  cs.push_back(negative);
  cs.push_back(Dense("width72_masked", 3, 40, 70, 72, 72, false, true));
  cs.push_back(Dense("odd_scalar_loads", 3, 70, 130, 36, 20, false, false));
  cs.push_back(Dense("k_transposed_mask_width128", 2, 65, 200, 128, 128, true, true));
  Case one = Dense("single_query", 1, 1, 5, 16, 16, false, false);
  one.radix.clear();
  for (View* v : {&one.q, &one.k, &one.v, &one.y}) v->batch.clear();
  cs.push_back(one);
  return cs;
}

std::vector<int64_t> Digits(const std::vector<int64_t>& radix, int64_t b) {
  std::vector<int64_t> d(radix.size());
  for (size_t t = radix.size(); t-- > 0;) {
    d[t] = b % radix[t];
    b /= radix[t];
  }
  return d;
}

std::vector<float> Reference(const Case& c, const std::vector<float>& q, const std::vector<float>& k,
                             const std::vector<float>& v, const std::vector<float>& mask) {
  std::vector<float> y(static_cast<size_t>(c.y_elems), 0.f);
  int64_t batch = 1;
  for (int64_t r : c.radix) batch *= r;
  for (int64_t b = 0; b < batch; ++b) {
    const std::vector<int64_t> dg = Digits(c.radix, b);
    for (int64_t i = 0; i < c.sq; ++i) {
      std::vector<double> s(static_cast<size_t>(c.sk));
      double mx = -INFINITY;
      for (int64_t j = 0; j < c.sk; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < c.d; ++e) dot += double(q[size_t(c.q.At(dg, i, e))]) * k[size_t(c.k.At(dg, j, e))];
        s[size_t(j)] = c.scale * dot + (mask.empty() ? 0.0 : mask[size_t(c.mask.At(dg, i, j))]);
        mx = std::max(mx, s[size_t(j)]);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - mx));
      for (int64_t e = 0; e < c.dv; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < c.sk; ++j) acc += s[size_t(j)] * v[size_t(c.v.At(dg, j, e))];
        y[size_t(c.y.At(dg, i, e))] = static_cast<float>(acc / sum);
      }
    }
  }
  return y;
}

std::vector<AttrDesc> Attrs(const Case& c) {
  std::vector<AttrDesc> a = {AttrDesc::Ints("batch", c.radix), AttrDesc::Ints("dims", {c.sq, c.sk, c.d, c.dv}),
                             AttrDesc::Floats("scale", {c.scale}),  AttrDesc::Ints("q_view", c.q.Encode()),
                             AttrDesc::Ints("k_view", c.k.Encode()), AttrDesc::Ints("v_view", c.v.Encode()),
                             AttrDesc::Ints("y_view", c.y.Encode())};
  if (c.mask_elems) a.push_back(AttrDesc::Ints("mask_view", c.mask.Encode()));
  return a;
}

// The program: inputs Q[, K, V][, mask], output Y; the kernel's arguments in order.
ProgramSpec Program(const Case& c, std::vector<AttrDesc> attrs, DataType t) {
  ProgramSpec p;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<uint32_t> args;
  auto input = [&](int64_t n) {
    p.tensors.push_back({{n}, Role::kInput, {}});
    return static_cast<uint32_t>(p.tensors.size() - 1);
  };
  const uint32_t q = input(c.q_elems);
  const uint32_t k = c.k_elems ? input(c.k_elems) : q;
  const uint32_t v = c.v_elems ? input(c.v_elems) : q;
  args = {q, k, v};
  if (c.mask_elems) args.push_back(input(c.mask_elems));
  p.tensors.push_back({{c.y_elems}, Role::kOutput, {}});
  args.push_back(static_cast<uint32_t>(p.tensors.size() - 1));
  for (uint32_t a : args) shapes.push_back(p.tensors[a].shape);
  p.kernels.push_back(LibraryKernel("attention", "keel.attention", shapes, std::move(attrs)));
  p.ops = {{0, args, "attention"}};
  return InDType(std::move(p), t);
}

class Attention : public ::testing::TestWithParam<std::tuple<DataType, Case>> {};

TEST_P(Attention, MatchesReference) {
  KEEL_SKIP_WITHOUT_GPU();
  const DataType t = std::get<0>(GetParam());
  const Case& c = std::get<1>(GetParam());
  std::vector<std::vector<float>> inputs;
  inputs.push_back(RoundedTo(Random(size_t(c.q_elems), 31), t));
  if (c.k_elems) inputs.push_back(RoundedTo(Random(size_t(c.k_elems), 32), t));
  if (c.v_elems) inputs.push_back(RoundedTo(Random(size_t(c.v_elems), 33), t));
  std::vector<float> mask;
  if (c.mask_elems) {
    mask = RoundedTo(Random(size_t(c.mask_elems), 34, -2.f, 2.f), t);
    for (size_t i = 0; i < mask.size(); i += 7) mask[i] = -10000.f;  // masked-out keys
    mask = RoundedTo(mask, t);
    inputs.push_back(mask);
  }
  const std::vector<float>& q = inputs[0];
  const std::vector<float>& k = c.k_elems ? inputs[1] : q;
  const std::vector<float>& v = c.v_elems ? inputs[c.k_elems ? 2 : 1] : q;
  const std::vector<float> want = Reference(c, q, k, v, mask);
  // Keel's kernel (engines off), then cuDNN's engine where it takes the problem (forced).
  for (VmOptions::CudnnEngines engines : {VmOptions::CudnnEngines::kOff, VmOptions::CudnnEngines::kForce}) {
    const bool force = engines == VmOptions::CudnnEngines::kForce;
    SCOPED_TRACE(force ? "cuDNN engines forced" : "Keel's kernel");
    VmOptions o;
    o.cudnn_engines = engines;
    std::vector<std::string> calls;
    ExpectMatchesWithAndWithoutGraphs(Program(c, Attrs(c), t), inputs, want, t == DataType::kF16 ? 3e-3 : 2e-2, o,
                                      &calls);
    bool engine = false;
    for (const std::string& call : calls) engine = engine || call.rfind("cudnnBackendExecute", 0) == 0;
    // KEEL_CUDNN_ENGINES in the environment overrides the option (RunOnce, as keel-run).
    const bool steered = std::getenv("KEEL_CUDNN_ENGINES") != nullptr;
#ifdef KEEL_HAVE_CUDNN
    if (force && c.cudnn && !steered) {
      EXPECT_TRUE(engine) << "no cudnnBackendExecute among " << calls.size() << " launches";
    }
#endif
    if (!force && !steered) {
      EXPECT_FALSE(engine);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Attention,
                         ::testing::Combine(::testing::Values(DataType::kF16, DataType::kBF16),
                                            ::testing::ValuesIn(Cases())),
                         [](const auto& i) {
                           return std::string(DataTypeName(std::get<0>(i.param))) + "_" + std::get<1>(i.param).name;
                         });

// Two attentions of one problem (the second reads the first's output as its
// queries): with cuDNN's engines forced both run the engine, and the second
// takes the first's finalized plan instead of building (and compiling) its own.
TEST(AttentionEngines, KernelsOfOneProblemShareOnePlan) {
  KEEL_SKIP_WITHOUT_GPU();
#ifndef KEEL_HAVE_CUDNN
  GTEST_SKIP() << "built without cuDNN";
#else
  if (std::getenv("KEEL_CUDNN_ENGINES") != nullptr) GTEST_SKIP() << "KEEL_CUDNN_ENGINES steers the engines";
  const DataType t = DataType::kF16;
  const Case c = Dense("chain", 3, 40, 40, 64, 64, false, false);
  ProgramSpec p = Program(c, Attrs(c), t);  // Q, K, V -> Y (tensors 0..3)
  p.tensors[3].role = Role::kTemp;
  p.tensors.push_back({{c.y_elems}, Role::kOutput, {}});
  p.kernels.push_back(p.kernels[0]);  // a second kernel of the same problem
  p.kernels[1].name = "attention2";
  p.ops.push_back({1, {3, 1, 2, 4}, "attention2"});
  const std::vector<float> q = RoundedTo(Random(size_t(c.q_elems), 41), t);
  const std::vector<float> k = RoundedTo(Random(size_t(c.k_elems), 42), t);
  const std::vector<float> v = RoundedTo(Random(size_t(c.v_elems), 43), t);
  const std::vector<float> y1 = RoundedTo(Reference(c, q, k, v, {}), t);
  const std::vector<float> want = Reference(c, y1, k, v, {});
  VmOptions o;
  o.cudnn_engines = VmOptions::CudnnEngines::kForce;
  o.cuda_autotune_log = true;
  std::vector<std::string> calls;
  ::testing::internal::CaptureStderr();
  ExpectMatchesWithAndWithoutGraphs(p, {q, k, v}, want, 3e-3, o, &calls);
  const std::string log = ::testing::internal::GetCapturedStderr();
  int engine_calls = 0;
  for (const std::string& call : calls) engine_calls += call.rfind("cudnnBackendExecute", 0) == 0 ? 1 : 0;
  EXPECT_GE(engine_calls, 2) << "both attentions run cuDNN's engine";
  EXPECT_NE(log.find("attention2: shares an earlier kernel's plan"), std::string::npos) << log;
#endif
}

TEST(AttentionLoad, RefusesBadViewsAndWidths) {
  KEEL_SKIP_WITHOUT_GPU();
  const Case c = Dense("d", 2, 8, 8, 16, 16, false, false);
  auto expect_refused = [&](Case bad, const char* what) {
    SCOPED_TRACE(what);
    ProgramSpec p = Program(bad, Attrs(bad), DataType::kF16);
    Status s = CreateOneKernelVm(p.kernels[0], p);
    EXPECT_EQ(s.code(), StatusCode::kInvalidExecutable) << s.ToString();
  };
  Case past_end = c;
  past_end.k.row = 17;
  expect_refused(past_end, "K reads past its argument");
  Case negative = c;
  negative.v.offset = -1;
  expect_refused(negative, "V starts before its argument");
  Case wide = Dense("w", 1, 4, 4, 136, 8, false, false);
  expect_refused(wide, "head width 136");
  Case f32 = c;
  ProgramSpec p = Program(f32, Attrs(f32), DataType::kF32);
  EXPECT_EQ(CreateOneKernelVm(p.kernels[0], p).code(), StatusCode::kUnsupported);
}

// The kernel splits its block index by the multipliers AttentionPlan sets
// (no integer division on the GPU): exact for every divisor and block index
// below 2^31, here at the edges of each power of two and at random.
TEST(AttentionPlan, BlockIndexDivisionsAreExact) {
  std::vector<unsigned> divisors = {1, 2, 3, 5, 7, 12, 96, 1000, 65535, 65537, 0x7fffffffu};
  for (unsigned l = 1; l < 31; ++l) {
    for (long long d : {(1ll << l) - 1, 1ll << l, (1ll << l) + 1}) divisors.push_back(static_cast<unsigned>(d));
  }
  uint64_t seed = 88172645463325252ull;
  auto next = [&] { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return seed; };
  for (unsigned d : divisors) {
    const cuda_lib::AttentionDivisor v = cuda_lib::MakeAttentionDivisor(d);
    std::vector<unsigned> ns = {0, 1, d - 1, d, d + 1, 0x7fffffffu, 0x7ffffffeu};
    for (int i = 0; i < 200; ++i) ns.push_back(static_cast<unsigned>(next() & 0x7fffffffu));
    for (unsigned n : ns) {
      if (n > 0x7fffffffu) continue;
      ASSERT_EQ(cuda_lib::AttentionDivide(n, v), n / d) << n << " / " << d;
    }
  }
  cuda_lib::AttentionArgs a;
  a.digits = 2;
  a.radix[0] = 8;
  a.radix[1] = 12;
  a.sq = a.sk = 128;
  a.d = a.dv = 64;
  const cuda_lib::AttentionLaunch l = cuda_lib::AttentionPlan(&a);
  EXPECT_EQ(a.radix_divisor[0].d, 8u);
  EXPECT_EQ(a.radix_divisor[1].d, 12u);
  EXPECT_EQ(l.blocks, 96u * a.query_blocks.d);
}

}  // namespace
}  // namespace keel::cudatest
