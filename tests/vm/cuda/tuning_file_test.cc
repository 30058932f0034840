// tests/vm/cuda/tuning_file_test.cc — the CUDA tuning file (vm/cuda/autotune.h,
// VmOptions::tuning_file): the text parser and writer, cuDNN engine verdicts
// included (vm/cuda/library_calls_engine_choice.h; no GPU needed: runs in CI),
// and on a GPU two VMs created with the same file: the first times and writes
// it, the second times nothing and makes the same choices (an engine too).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/vm/cuda/cuda_test_programs.h"
#include "vm/cuda/autotune.h"
#include "vm/cuda/library_calls_engine_choice.h"

namespace keel::cudatest {
namespace {

using ser::AttrDesc;
using vm_internal::ParseTuning;
using vm_internal::TuningTable;

std::string HexAlgo(uint64_t seed) {
  std::string s;
  for (size_t w = 0; w < vm_internal::kGemmAlgoWords; ++w) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(seed * 0x9e3779b97f4a7c15ull + w));
    s += buf;
  }
  return s;
}

// A scratch folder removed with the object.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("keel_tuning_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// ---- parser and writer (CPU) ------------------------------------------------------

TEST(TuningFile, RoundTripKeepsEveryEntry) {
  const std::string conv = vm_internal::ConvProblemKey({1, 3, 8, 8}, {4, 3, 3, 3}, {1, 4, 6, 6}, {0, 0, 0, 0}, {1, 1},
                                                       {1, 1}, 1, true, false, 1, false);
  const std::string gemm =
      vm_internal::GemmProblemKey(1, 1000, 512, 1, 0, 1, 512, 512000, "row", true, false, "", 1.0, 1.0, false);
  TuningTable t;
  t[vm_internal::TuningKey(90, "cudnn", 91400, conv)] = {1, 0, 4096};
  t[vm_internal::TuningKey(80, "cudnn", 90100, conv)] = {7, 1, 0};  // another GPU: kept as is
  std::vector<int64_t> g = {33554432};
  for (size_t w = 0; w < vm_internal::kGemmAlgoWords; ++w) g.push_back(static_cast<int64_t>(0x8000000000000001ull + w));
  t[vm_internal::TuningKey(90, "cublasLt", 130100, gemm)] = g;
  const std::string conv_t = vm_internal::ConvProblemKey({1, 4, 6, 6}, {4, 3, 3, 3}, {1, 3, 8, 8}, {0, 0, 0, 0}, {1, 1},
                                                         {1, 1}, 1, true, false, 0, false, DataType::kF16, true, true);
  t[vm_internal::TuningKey(90, "cudnn", 91400, conv_t)] = {1, 1, 256};
  const std::string text = vm_internal::FormatTuning(t);
  Result<TuningTable> back = ParseTuning(text, "t.txt");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, t);
  EXPECT_EQ(vm_internal::FormatTuning(*back), text);  // deterministic text
  // Human-readable choices.
  EXPECT_NE(text.find("algo=IMPLICIT_PRECOMP_GEMM mode=fused workspace=4096"), std::string::npos) << text;
  EXPECT_NE(text.find("algo=WINOGRAD_NONFUSED mode=conv+epilogue workspace=0"), std::string::npos) << text;
  EXPECT_NE(text.find("sm90-cublasLt130100 gemm|"), std::string::npos) << text;
  // A transposed convolution names cuDNN's data-gradient algorithms.
  EXPECT_NE(text.find("sm90-cudnn91400 conv_transpose|[1,4,6,6][4,3,3,3][1,3,8,8][0,0,0,0][1,1][1,1]|g1|b1|r0|a0|nhwc|"
                      "f16|tf320 algo=ALGO_1 mode=conv+epilogue workspace=256"),
            std::string::npos)
      << text;
}

TEST(TuningFile, CommentsBlankLinesAndCrlfAreAccepted) {
  const std::string text = "# a comment\n\n   \nsm90-cudnn91400 conv|[1] algo=GEMM mode=fused workspace=12\r\n"
                           "sm90-cublasLt130100 gemm|x workspace=0 algo=" + HexAlgo(3) + "\n";
  Result<TuningTable> t = ParseTuning(text, "t.txt");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ(t->at("sm90-cudnn91400 conv|[1]"), (std::vector<int64_t>{2, 0, 12}));
  EXPECT_EQ(t->at("sm90-cublasLt130100 gemm|x").size(), 1 + vm_internal::kGemmAlgoWords);
}

struct BadLine {
  const char* name;
  std::string line;
  const char* why;  // part of the message
};
void PrintTo(const BadLine& b, std::ostream* os) { *os << b.name; }

class MalformedTuningFile : public ::testing::TestWithParam<BadLine> {};

TEST_P(MalformedTuningFile, IsInvalidArgumentNamingTheLine) {
  const std::string text = "# header\nsm90-cudnn91400 conv|[2] algo=GEMM mode=fused workspace=0\n" + GetParam().line + "\n";
  Result<TuningTable> t = ParseTuning(text, "/tmp/x.tuning");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("tuning file /tmp/x.tuning line 3:"), std::string::npos) << t.status().ToString();
  EXPECT_NE(t.status().message().find(GetParam().why), std::string::npos) << t.status().ToString();
}

INSTANTIATE_TEST_SUITE_P(
    Lines, MalformedTuningFile,
    ::testing::Values(
        BadLine{"too_few_tokens", "sm90-cudnn91400 conv|[1]", "expected"},
        BadLine{"unknown_kind", "sm90-cudnn91400 pool|[1] algo=GEMM mode=fused workspace=0", "unknown problem"},
        BadLine{"not_a_field", "sm90-cudnn91400 conv|[1] GEMM", "name=value"},
        BadLine{"unknown_field", "sm90-cudnn91400 conv|[1] algo=GEMM mode=fused workspace=0 speed=3", "unknown field"},
        BadLine{"missing_field", "sm90-cudnn91400 conv|[1] algo=GEMM workspace=0", "missing field mode"},
        BadLine{"twice", "sm90-cudnn91400 conv|[1] algo=GEMM algo=FFT mode=fused workspace=0", "twice"},
        BadLine{"bad_workspace", "sm90-cudnn91400 conv|[1] algo=GEMM mode=fused workspace=-4", "workspace"},
        BadLine{"bad_algo_name", "sm90-cudnn91400 conv|[1] algo=FASTEST mode=fused workspace=0", "algorithm"},
        BadLine{"bad_mode", "sm90-cudnn91400 conv|[1] algo=GEMM mode=both workspace=0", "mode"},
        BadLine{"transposed_fused", "sm90-cudnn91400 conv_transpose|[1] algo=ALGO_0 mode=fused workspace=0", "mode"},
        BadLine{"transposed_forward_algo", "sm90-cudnn91400 conv_transpose|[1] algo=GEMM mode=conv+epilogue workspace=0",
                "algorithm"},
        BadLine{"short_hex", "sm90-cublasLt130100 gemm|x workspace=0 algo=00ff", "hex"},
        BadLine{"upper_hex", "sm90-cublasLt130100 gemm|x workspace=0 algo=" + std::string(128, 'F'), "hex"},
        BadLine{"duplicate", "sm90-cudnn91400 conv|[2] algo=FFT mode=fused workspace=0", "second entry"},
        // The engine verdict (vm/cuda/library_calls_engine_choice.h).
        BadLine{"engine_not_index", "sm90-cudnn91400 conv|[1] algo=GEMM mode=fused workspace=0 engine=fast knobs=none",
                "engine must be legacy or"},
        BadLine{"engine_without_knobs", "sm90-cudnn91400 conv|[1] algo=GEMM mode=fused workspace=0 engine=12",
                "missing field knobs="},
        BadLine{"knobs_without_engine", "sm90-cudnn91400 conv|[1] algo=GEMM mode=fused workspace=0 knobs=none",
                "missing field engine="},
        BadLine{"legacy_with_knobs", "sm90-cudnn91400 conv|[1] algo=GEMM mode=fused workspace=0 engine=legacy knobs=none",
                "knobs= with engine=legacy"},
        BadLine{"bad_knob", "sm90-cudnn91400 conv|[1] algo=GEMM mode=fused workspace=0 engine=3 knobs=1:2,x", "knobs must"},
        BadLine{"unsorted_knobs", "sm90-cudnn91400 conv|[1] algo=GEMM mode=fused workspace=0 engine=3 knobs=5:0,2:1",
                "increasing"},
        BadLine{"transposed_engine",
                "sm90-cudnn91400 conv_transpose|[1] algo=ALGO_1 mode=conv+epilogue workspace=0 engine=legacy",
                "unknown field"},
        BadLine{"gemm_engine", "sm90-cublasLt130100 gemm|x workspace=0 algo=" + std::string(128, 'f') + " engine=legacy",
                "unknown field"},
        // An attention's verdict (Keel's kernel or a fused attention engine).
        BadLine{"attention_without_engine", "sm90-cudnn91400 attention|x workspace=0", "missing field engine="},
        BadLine{"attention_legacy", "sm90-cudnn91400 attention|x workspace=0 engine=legacy", "engine must be keel or"},
        BadLine{"attention_keel_with_knobs", "sm90-cudnn91400 attention|x workspace=0 engine=keel knobs=none",
                "knobs= with engine=keel"},
        BadLine{"attention_algo", "sm90-cudnn91400 attention|x workspace=0 engine=keel algo=GEMM", "unknown field"}),
    [](const ::testing::TestParamInfo<BadLine>& i) { return std::string(i.param.name); });

// A forward convolution's engine verdict rides on its entry: the values after the
// legacy choice, "engine=... knobs=..." in the text; both round-trip, and an
// entry without one (engines off, older files) stays as it was.
TEST(TuningFile, EngineVerdictsRoundTrip) {
  const std::string conv = vm_internal::ConvProblemKey({1, 64, 14, 14}, {64, 8, 3, 3}, {1, 64, 14, 14}, {1, 1, 1, 1},
                                                       {1, 1}, {1, 1}, 8, true, false, 1, false, DataType::kF16, true);
  const std::string dense = vm_internal::ConvProblemKey({1, 8, 8, 8}, {8, 8, 3, 3}, {1, 8, 8, 8}, {1, 1, 1, 1}, {1, 1},
                                                        {1, 1}, 1, false, false, 0, false);
  cuda_lib::EngineId id;
  id.index = 12;
  id.knobs = {{3, 1}, {5, 0}, {17, -2}};
  TuningTable t;
  std::vector<int64_t> engine = {1, 1, 256};
  cuda_lib::SetEngineTuning(id, &engine);
  t[vm_internal::TuningKey(90, "cudnn", 91900, conv)] = engine;
  std::vector<int64_t> legacy = {1, 0, 0};
  cuda_lib::SetEngineTuning(cuda_lib::EngineId{}, &legacy);
  t[vm_internal::TuningKey(90, "cudnn", 91900, dense)] = legacy;
  cuda_lib::EngineId plain;  // no knobs
  plain.index = 0;
  std::vector<int64_t> no_knobs = {0, 1, 0};
  cuda_lib::SetEngineTuning(plain, &no_knobs);
  t[vm_internal::TuningKey(80, "cudnn", 91900, conv)] = no_knobs;
  t[vm_internal::TuningKey(89, "cudnn", 91900, conv)] = {2, 1, 0};  // no verdict
  const std::string text = vm_internal::FormatTuning(t);
  EXPECT_NE(text.find("sm90-cudnn91900 " + conv +
                      " algo=IMPLICIT_PRECOMP_GEMM mode=conv+epilogue workspace=256 engine=12 knobs=3:1,5:0,17:-2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("sm90-cudnn91900 " + dense + " algo=IMPLICIT_PRECOMP_GEMM mode=fused workspace=0 engine=legacy\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" workspace=0 engine=0 knobs=none\n"), std::string::npos) << text;
  EXPECT_NE(text.find("sm89-cudnn91900 " + conv + " algo=GEMM mode=conv+epilogue workspace=0\n"), std::string::npos)
      << text;
  Result<TuningTable> back = ParseTuning(text, "t.txt");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, t);
  EXPECT_EQ(vm_internal::FormatTuning(*back), text);
  // What the VM and the host program read back from each entry.
  auto verdict = [&](const std::string& key, bool* recorded) {
    cuda_lib::EngineId got;
    EXPECT_TRUE(cuda_lib::EngineFromTuning(back->at(key), recorded, &got)) << key;
    return got;
  };
  bool recorded = false;
  EXPECT_EQ(verdict(vm_internal::TuningKey(90, "cudnn", 91900, conv), &recorded), id);
  EXPECT_TRUE(recorded);
  EXPECT_EQ(verdict(vm_internal::TuningKey(90, "cudnn", 91900, dense), &recorded).index, -1);
  EXPECT_TRUE(recorded);
  EXPECT_EQ(verdict(vm_internal::TuningKey(80, "cudnn", 91900, conv), &recorded), plain);
  EXPECT_TRUE(recorded);
  verdict(vm_internal::TuningKey(89, "cudnn", 91900, conv), &recorded);
  EXPECT_FALSE(recorded);
  // The trace and error spelling of an identity.
  EXPECT_EQ(cuda_lib::EngineIdText(id), "engine=12 knobs=3:1,5:0,17:-2");
  EXPECT_EQ(cuda_lib::EngineIdText(cuda_lib::EngineId{}), "engine=legacy");
  // Malformed tails are refused, not misread.
  bool r = false;
  cuda_lib::EngineId x;
  EXPECT_FALSE(cuda_lib::EngineFromTuning({1, 0, 0, -2}, &r, &x));
  EXPECT_FALSE(cuda_lib::EngineFromTuning({1, 0, 0, 4, 2, 1, 1}, &r, &x));         // 2 knobs, 1 given
  EXPECT_FALSE(cuda_lib::EngineFromTuning({1, 0, 0, 4, 2, 5, 1, 3, 0}, &r, &x));   // types not increasing
  EXPECT_FALSE(cuda_lib::EngineFromTuning({1, 0}, &r, &x));
}

// An attention's entry: its workspace, then the verdict ("engine=keel" for
// Keel's own kernel, else the fused attention engine's identity); both round-trip.
TEST(TuningFile, AttentionVerdictsRoundTrip) {
  const size_t lead = cuda_lib::kAttentionTuningLeadValues;
  cuda_lib::EngineId id;
  id.index = 2;
  id.knobs = {{24, 7}};
  TuningTable t;
  std::vector<int64_t> engine = {256};
  cuda_lib::SetEngineTuning(id, &engine, lead);
  t["sm90-cudnn91400 attention|f16|32,12,197,197,64,64|a"] = engine;
  std::vector<int64_t> own = {0};
  cuda_lib::SetEngineTuning(cuda_lib::EngineId{}, &own, lead);
  t["sm90-cudnn91400 attention|f16|1,12,128,128,64,64|b"] = own;
  const std::string text = vm_internal::FormatTuning(t);
  EXPECT_NE(text.find("attention|f16|32,12,197,197,64,64|a workspace=256 engine=2 knobs=24:7\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("attention|f16|1,12,128,128,64,64|b workspace=0 engine=keel\n"), std::string::npos) << text;
  Result<TuningTable> back = ParseTuning(text, "t.txt");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, t);
  bool recorded = false;
  cuda_lib::EngineId got;
  ASSERT_TRUE(cuda_lib::EngineFromTuning(back->at("sm90-cudnn91400 attention|f16|32,12,197,197,64,64|a"), &recorded,
                                         &got, lead));
  EXPECT_TRUE(recorded);
  EXPECT_EQ(got, id);
  ASSERT_TRUE(cuda_lib::EngineFromTuning(back->at("sm90-cudnn91400 attention|f16|1,12,128,128,64,64|b"), &recorded,
                                         &got, lead));
  EXPECT_TRUE(recorded);
  EXPECT_EQ(got.index, -1);
}

TEST(TuningFile, KeysSeparateEveryChoiceInput) {
  auto conv = [](bool tf32, int act, int64_t group) {
    return vm_internal::ConvProblemKey({1, 8, 8, 8}, {8, 8 / group, 3, 3}, {1, 8, 6, 6}, {0, 0, 0, 0}, {1, 1}, {1, 1},
                                       group, false, false, act, tf32);
  };
  EXPECT_NE(conv(false, 0, 1), conv(true, 0, 1));
  EXPECT_NE(conv(false, 0, 1), conv(false, 1, 1));
  EXPECT_NE(conv(false, 0, 1), conv(false, 0, 2));
  auto gemm = [](double alpha, const std::string& epi, int64_t tb) {
    return vm_internal::GemmProblemKey(4, 8, 16, 1, 0, tb, 64, 128, "row", false, false, epi, alpha, 1.0, false);
  };
  EXPECT_NE(gemm(1.0, "", 0), gemm(0.5, "", 0));
  EXPECT_NE(gemm(1.0, "", 0), gemm(1.0, "relu", 0));
  EXPECT_NE(gemm(1.0, "", 0), gemm(1.0, "", 1));
  // Keys are single tokens of a line.
  for (const std::string& k : {conv(true, 2, 8), gemm(0.125, "gelu_tanh", 1)}) {
    EXPECT_EQ(k.find_first_of(" \t\n"), std::string::npos) << k;
  }
  // 1-D, 2-D and 3-D problems: every dim is part of the key, and a 3-D key parses
  // and round-trips like a 2-D one.
  const std::string conv3 = vm_internal::ConvProblemKey({1, 3, 8, 16, 16}, {8, 3, 3, 3, 3}, {1, 8, 8, 16, 16},
                                                        {1, 1, 1, 1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, false, false, 0, false);
  const std::string conv3_deeper = vm_internal::ConvProblemKey(
      {1, 3, 9, 16, 16}, {8, 3, 3, 3, 3}, {1, 8, 9, 16, 16}, {1, 1, 1, 1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1, false, false, 0,
      false);
  const std::string conv1 = vm_internal::ConvProblemKey({1, 3, 16}, {8, 3, 3}, {1, 8, 16}, {1, 1}, {1}, {1}, 1, false,
                                                        false, 0, false);
  EXPECT_NE(conv3, conv3_deeper);
  EXPECT_NE(conv1, conv(false, 0, 1));
  for (const std::string& k : {conv3, conv1}) {
    const std::string line = "sm90-cudnn91400 " + k + " algo=IMPLICIT_GEMM mode=conv+epilogue workspace=0\n";
    auto t = ParseTuning(line, "t");
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    ASSERT_EQ(t->size(), 1u);
    EXPECT_EQ(t->begin()->first, "sm90-cudnn91400 " + k);
    EXPECT_NE(vm_internal::FormatTuning(*t).find(line), std::string::npos);
  }
  EXPECT_NE(vm_internal::TuningKey(90, "cudnn", 91400, "p"), vm_internal::TuningKey(89, "cudnn", 91400, "p"));
  EXPECT_NE(vm_internal::TuningKey(90, "cudnn", 91400, "p"), vm_internal::TuningKey(90, "cudnn", 91900, "p"));
}

// The element type is part of every key (library kernels run f32, f16 or bf16):
// an f32 problem and the same problem in half never share an entry. f32 keys
// are exactly the ones written before half support (older tuning files keep
// serving f32), half keys name the type before the TF32 segment, which stays
// last (the CUDA host-program emitter appends it), and both parse and round-trip.
TEST(TuningFile, KeysSeparateElementTypes) {
  auto conv = [](DataType t) {
    return vm_internal::ConvProblemKey({1, 8, 8, 8}, {8, 8, 3, 3}, {1, 8, 6, 6}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1, true,
                                       false, 1, false, t);
  };
  auto gemm = [](DataType t) {
    return vm_internal::GemmProblemKey(4, 8, 16, 1, 0, 1, 64, 128, "row", true, false, "relu", 1.0, 1.0, false, t);
  };
  EXPECT_EQ(conv(DataType::kF32), "conv|[1,8,8,8][8,8,3,3][1,8,6,6][0,0,0,0][1,1][1,1]|g1|b1|r0|a1|tf320");
  EXPECT_EQ(gemm(DataType::kF32), "gemm|4,8,16,1,01,64,128|row1|relu|1.000000,1.000000|tf320");
  EXPECT_EQ(conv(DataType::kF16), "conv|[1,8,8,8][8,8,3,3][1,8,6,6][0,0,0,0][1,1][1,1]|g1|b1|r0|a1|f16|tf320");
  EXPECT_EQ(gemm(DataType::kBF16), "gemm|4,8,16,1,01,64,128|row1|relu|1.000000,1.000000|bf16|tf320");
  EXPECT_NE(conv(DataType::kF16), conv(DataType::kBF16));
  EXPECT_NE(gemm(DataType::kF16), gemm(DataType::kBF16));
  TuningTable t;
  std::vector<int64_t> g = {0};
  for (size_t w = 0; w < vm_internal::kGemmAlgoWords; ++w) g.push_back(static_cast<int64_t>(w + 1));
  for (DataType dt : {DataType::kF32, DataType::kF16, DataType::kBF16}) {
    t[vm_internal::TuningKey(90, "cudnn", 91400, conv(dt))] = {1, 0, 64};
    t[vm_internal::TuningKey(90, "cublasLt", 130100, gemm(dt))] = g;
  }
  Result<TuningTable> back = ParseTuning(vm_internal::FormatTuning(t), "t.txt");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, t);
  EXPECT_EQ(back->size(), 6u);
}

TEST(TuningFile, WriteIsAtomicAndReadBack) {
  TempDir dir;
  const std::string path = (dir.path / "tuning.txt").string();
  Result<TuningTable> missing = vm_internal::ReadTuningFile(path);
  ASSERT_TRUE(missing.ok()) << missing.status().ToString();
  EXPECT_TRUE(missing->empty());
  TuningTable t;
  t["sm90-cudnn91400 conv|[5]"] = {3, 1, 77};
  ASSERT_TRUE(vm_internal::WriteTuningFile(path, t).ok());
  Result<TuningTable> back = vm_internal::ReadTuningFile(path);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, t);
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path)) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);  // no temporary left behind
  const Status s = vm_internal::WriteTuningFile((dir.path / "no" / "such" / "dir.txt").string(), t);
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.ToString();
}

// ---- on the GPU: two VMs, one file -------------------------------------------------

// One conv (bias + relu) feeding one GEMM: both library kinds that are tuned.
Result<std::vector<uint8_t>> ConvGemmProgram() {
  const std::vector<int64_t> xs = {1, 16, 20, 20}, ws = {32, 16, 3, 3}, ys = {1, 32, 20, 20};
  ProgramSpec p;
  p.tensors = {{xs, Role::kInput, {}},
               {ws, Role::kConst, Random(32 * 16 * 9, 5)},
               {{32}, Role::kConst, Random(32, 6)},
               {ys, Role::kTemp, {}},
               {{400, 64}, Role::kConst, Random(400 * 64, 7)},
               {{1, 32, 64}, Role::kOutput, {}}};
  p.kernels.push_back(LibraryKernel("conv", "cudnn.conv2d", {xs, ws, {32}, ys},
                                    {AttrDesc::Ints("pads", {1, 1, 1, 1}), AttrDesc::Ints("has_bias", {1}),
                                     AttrDesc::Str("activation", "relu")}));
  p.kernels.push_back(LibraryKernel("gemm", "cublas.gemm", {ys, {400, 64}, {1, 32, 64}},
                                    {AttrDesc::Ints("m", {32}), AttrDesc::Ints("n", {64}), AttrDesc::Ints("k", {400})}));
  p.ops = {{0, {0, 1, 2, 3}, "conv"}, {1, {3, 4, 5}, "gemm"}};
  return BuildProgram(p);
}

class CallRecorder : public TraceObserver {
 public:
  void OnInstruction(const TraceEvent& e) override {
    if (e.opcode == OpCode::kInvoke) calls.emplace_back(e.op.call);
  }
  std::vector<std::string> calls;
};

// The first VM times and writes the file, the second reads it: it times nothing,
// leaves the file as it was and makes the same calls (the same bytes out). With
// `engines` kCompete the conv's entry records its engine verdict too, and the
// second VM builds that configuration from the recorded identity.
void CheckSecondVmReadsTheFile(VmOptions::CudnnEngines engines) {
  TempDir dir;
  const std::string path = (dir.path / "tuning.txt").string();
  auto bytes = ConvGemmProgram();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto exe = Executable::LoadMemory(*bytes, LoadOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const std::vector<float> x = Random(16 * 20 * 20, 8);

  auto run = [&](std::vector<std::string>* calls, std::vector<float>* out) {
    CallRecorder rec;
    VmOptions o;
    o.device = "cuda";
    o.cuda_graph = false;
    o.tuning_file = path;
    o.trace = &rec;
    o.cudnn_engines = engines;
    auto vm = VirtualMachine::Create(*exe, o);
    ASSERT_TRUE(vm.ok()) << vm.status().ToString();
    ASSERT_TRUE((*vm)->SetInput(size_t{0}, x.data(), x.size() * 4, (*exe)->input(0).shape, DataType::kF32).ok());
    ASSERT_TRUE((*vm)->Run().ok());
    out->assign(32 * 64, 0.f);
    ASSERT_TRUE((*vm)->CopyOutputToHost(0, out->data(), out->size() * 4).ok());
    *calls = rec.calls;
  };
  const uint64_t t0 = vm_internal::TimingsSoFar();
  std::vector<std::string> calls1, calls2;
  std::vector<float> out1, out2;
  run(&calls1, &out1);
  const uint64_t t1 = vm_internal::TimingsSoFar();
  ASSERT_TRUE(std::filesystem::exists(path));
  const std::string text1 = ReadAll(path);
  EXPECT_NE(text1.find(" conv|"), std::string::npos) << text1;
  EXPECT_NE(text1.find(" gemm|"), std::string::npos) << text1;
  if (engines == VmOptions::CudnnEngines::kCompete) {
    EXPECT_NE(text1.find(" engine="), std::string::npos) << text1;
  } else {
    EXPECT_EQ(text1.find(" engine="), std::string::npos) << text1;  // kAuto: this dense f32 conv holds no competition
  }
  run(&calls2, &out2);
  const uint64_t t2 = vm_internal::TimingsSoFar();
  EXPECT_GE(t1, t0);
  EXPECT_EQ(t2, t1) << "the second VM timed candidates although the file records every problem";
  EXPECT_EQ(ReadAll(path), text1) << "nothing new was tuned: the file must stay as it was";
  ASSERT_EQ(calls1.size(), 2u);
  EXPECT_EQ(calls1, calls2);  // the same algorithm, mode and workspace (or engine) for each call
  EXPECT_EQ(std::memcmp(out1.data(), out2.data(), out1.size() * 4), 0);
  std::printf("%s\n", calls1[0].c_str());
}

TEST(TuningFile, SecondVmReadsTheFileAndTimesNothing) {
  KEEL_SKIP_WITHOUT_GPU();
  CheckSecondVmReadsTheFile(VmOptions::CudnnEngines::kAuto);
}

TEST(TuningFile, SecondVmBuildsTheRecordedEngine) {
  KEEL_SKIP_WITHOUT_GPU();
  CheckSecondVmReadsTheFile(VmOptions::CudnnEngines::kCompete);
}

TEST(TuningFile, ForeignEntriesAreKeptAndMalformedFilesRefused) {
  KEEL_SKIP_WITHOUT_GPU();
  TempDir dir;
  const std::string path = (dir.path / "tuning.txt").string();
  auto bytes = ConvGemmProgram();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto exe = Executable::LoadMemory(*bytes, LoadOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  VmOptions o;
  o.device = "cuda";
  o.tuning_file = path;
  const std::string foreign = "sm10-cudnn1 conv|[1] algo=FFT mode=fused workspace=0\n";
  { std::ofstream(path) << foreign; }
  auto vm = VirtualMachine::Create(*exe, o);
  ASSERT_TRUE(vm.ok()) << vm.status().ToString();
  EXPECT_NE(ReadAll(path).find(foreign), std::string::npos);  // another GPU's entry survives a rewrite
  { std::ofstream(path) << "# ok\nsm90-cudnn1 conv|[1] algo=FFT\n"; }
  auto bad = VirtualMachine::Create(*exe, o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status().ToString();
}

}  // namespace
}  // namespace keel::cudatest
