// tests/serialization/executable_writer_test.cc — writer → reader round trips.
//
// Every section and every instruction kind written by ExecutableWriter is read
// back through ReadExecutable and compared with the inputs; output is
// deterministic; the file layout matches executable.fbs (size prefix, 64-byte
// aligned data segment and constants).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "gtest/gtest.h"
#include "serialization/executable_reader.h"
#include "serialization/executable_writer.h"
#include "tests/serialization/sample_executables.h"

namespace keel::ser {
namespace {

using samples::ConstantBytes;
using samples::MakeSampleSpec;
using samples::SampleFile;
using samples::SampleSpec;
using samples::WriteSample;

std::vector<int64_t> Vec(const flatbuffers::Vector<int64_t>* v) {
  return v ? std::vector<int64_t>(v->begin(), v->end()) : std::vector<int64_t>{};
}
std::vector<uint32_t> Vec(const flatbuffers::Vector<uint32_t>* v) {
  return v ? std::vector<uint32_t>(v->begin(), v->end()) : std::vector<uint32_t>{};
}
std::string S(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

TEST(ExecutableWriter, RoundTripsEverySection) {
  const SampleSpec spec = MakeSampleSpec();
  std::vector<uint8_t> file = SampleFile();
  auto r = ReadExecutable(file);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const ExecutableView& v = *r;
  const fb::Executable* e = v.root;

  EXPECT_EQ(v.version_major, kFormatVersionMajor);
  EXPECT_EQ(v.version_minor, kFormatVersionMinor);
  EXPECT_EQ(S(e->producer()), spec.producer);
  EXPECT_EQ(S(e->kernel_library_id()), spec.kernel_library_id);

  ASSERT_EQ(e->targets()->size(), 2u);
  EXPECT_EQ(FromFb(e->targets()->Get(0)->device()), DeviceKind::kCpu);
  EXPECT_EQ(S(e->targets()->Get(0)->arch()), "x86-64");
  EXPECT_EQ(S(e->targets()->Get(0)->features()), "+avx2,+fma");
  EXPECT_EQ(FromFb(e->targets()->Get(1)->device()), DeviceKind::kCuda);
  EXPECT_EQ(S(e->targets()->Get(1)->arch()), "sm_90");

  // Kernels.
  ASSERT_EQ(e->kernels()->size(), spec.kernels.size());
  for (size_t i = 0; i < spec.kernels.size(); ++i) {
    const KernelDesc& want = spec.kernels[i];
    const fb::Kernel* k = e->kernels()->Get(static_cast<uint32_t>(i));
    EXPECT_EQ(S(k->name()), want.name);
    EXPECT_EQ(FromFb(k->kind()), want.kind);
    EXPECT_EQ(FromFb(k->device()), want.device);
    EXPECT_EQ(S(k->library_op()), want.library_op);
    EXPECT_EQ(k->workspace_bytes(), want.workspace_bytes);
    ASSERT_EQ(k->args()->size(), want.args.size());
    for (size_t a = 0; a < want.args.size(); ++a) {
      const fb::KernelArg* arg = k->args()->Get(static_cast<uint32_t>(a));
      EXPECT_EQ(FromFb(arg->dtype()), want.args[a].dtype);
      EXPECT_EQ(FromFb(arg->access()), want.args[a].access);
      EXPECT_EQ(Vec(arg->shape()), want.args[a].shape);
    }
    // Attributes: same set, sorted by key; LookupByKey works.
    std::map<std::string, const AttrDesc*> by_key;
    for (const auto& a : want.attrs) by_key[a.key] = &a;
    ASSERT_EQ(k->attrs()->size(), by_key.size());
    uint32_t idx = 0;
    for (const auto& [key, a] : by_key) {
      const fb::Attr* got = k->attrs()->Get(idx++);
      EXPECT_EQ(S(got->key()), key);
      EXPECT_EQ(got->ints() ? std::vector<int64_t>(got->ints()->begin(), got->ints()->end())
                            : std::vector<int64_t>{},
                a->ints);
      EXPECT_EQ(got->floats() ? std::vector<double>(got->floats()->begin(), got->floats()->end())
                              : std::vector<double>{},
                a->floats);
      EXPECT_EQ(S(got->str()), a->str);
      EXPECT_EQ(k->attrs()->LookupByKey(key.c_str()), got);
    }
    if (want.launch) {
      ASSERT_NE(k->launch(), nullptr);
      EXPECT_EQ(Vec(k->launch()->grid()), std::vector<uint32_t>(want.launch->grid.begin(), want.launch->grid.end()));
      EXPECT_EQ(Vec(k->launch()->block()),
                std::vector<uint32_t>(want.launch->block.begin(), want.launch->block.end()));
      EXPECT_EQ(k->launch()->shared_bytes(), want.launch->shared_bytes);
    } else {
      EXPECT_EQ(k->launch(), nullptr);
    }
  }

  // Constants: metadata, bytes, 64-byte alignment inside the data segment and the file.
  ASSERT_EQ(e->constants()->size(), spec.constants.size());
  EXPECT_EQ(e->data_segment_offset() % 64, 0u);
  EXPECT_EQ(v.data_segment.data(), file.data() + e->data_segment_offset());
  for (size_t i = 0; i < spec.constants.size(); ++i) {
    const auto& want = spec.constants[i];
    const fb::Constant* c = e->constants()->Get(static_cast<uint32_t>(i));
    EXPECT_EQ(S(c->name()), want.name);
    EXPECT_EQ(FromFb(c->dtype()), want.dtype);
    EXPECT_EQ(FromFb(c->device()), want.device);
    EXPECT_EQ(Vec(c->shape()), want.shape);
    EXPECT_EQ(c->size(), want.bytes.size());
    EXPECT_EQ(c->offset() % 64, 0u);
    auto bytes = v.ConstantBytes(static_cast<uint32_t>(i));
    EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()), want.bytes);
  }
  EXPECT_TRUE(v.ConstantBytes(static_cast<uint32_t>(spec.constants.size())).empty());

  // Memory plan.
  const fb::MemoryPlan* p = e->memory_plan();
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(S(p->strategy()), spec.plan.strategy);
  EXPECT_EQ(p->lower_bound_peak_live(), spec.plan.lower_bound_peak_live);
  EXPECT_EQ(p->lower_bound_positional_max(), spec.plan.lower_bound_positional_max);
  ASSERT_EQ(p->arenas()->size(), spec.plan.arenas.size());
  for (size_t i = 0; i < spec.plan.arenas.size(); ++i) {
    const fb::Arena* a = p->arenas()->Get(static_cast<uint32_t>(i));
    EXPECT_EQ(FromFb(a->device()), spec.plan.arenas[i].device);
    EXPECT_EQ(a->size(), spec.plan.arenas[i].size);
    EXPECT_EQ(a->alignment(), spec.plan.arenas[i].alignment);
  }
  ASSERT_EQ(p->storages()->size(), spec.plan.storages.size());
  for (size_t i = 0; i < spec.plan.storages.size(); ++i) {
    const fb::PlannedStorage* s = p->storages()->Get(static_cast<uint32_t>(i));
    const auto& want = spec.plan.storages[i];
    EXPECT_EQ(s->size(), want.size);
    EXPECT_EQ(s->alignment(), want.alignment);
    EXPECT_EQ(FromFb(s->device()), want.device);
    EXPECT_EQ(s->arena(), want.arena);
    EXPECT_EQ(s->offset(), want.offset);
  }
}

TEST(ExecutableWriter, RoundTripsEveryInstructionKind) {
  ExecutableWriter w;
  WriteSample(MakeSampleSpec(), w);
  auto bytes = w.Finish();
  ASSERT_TRUE(bytes.ok());
  auto r = ReadExecutable(*bytes);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const fb::Executable* e = r->root;
  ASSERT_EQ(e->functions()->size(), 2u);
  EXPECT_EQ(r->main(), e->functions()->Get(0));

  // The instruction sequence written by WriteSample (sample_executables.cc).
  for (uint32_t fi = 0; fi < e->functions()->size(); ++fi) {
    const fb::Function* f = e->functions()->Get(fi);
    EXPECT_EQ(S(f->name()), fi == 0 ? "main" : "helper");
  }

  const fb::Function* main = e->functions()->Get(0);
  EXPECT_EQ(main->num_registers(), 8u);
  ASSERT_EQ(main->params()->size(), 1u);
  EXPECT_EQ(S(main->params()->Get(0)->name()), "x");
  EXPECT_EQ(Vec(main->params()->Get(0)->shape()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(FromFb(main->params()->Get(0)->dtype()), DType::kF32);
  ASSERT_EQ(main->results()->size(), 1u);
  EXPECT_EQ(S(main->results()->Get(0)->name()), "y");

  const auto* in = main->instructions();
  ASSERT_EQ(in->size(), 12u);
  std::vector<fb::Op> want_ops = {fb::Op::AllocStorage, fb::Op::AllocTensor, fb::Op::LoadConst, fb::Op::Invoke,
                                  fb::Op::AllocStorage, fb::Op::AllocTensor, fb::Op::Copy,      fb::Op::AllocStorage,
                                  fb::Op::AllocTensor,  fb::Op::Copy,        fb::Op::FreeStorage, fb::Op::Ret};
  for (uint32_t i = 0; i < in->size(); ++i) EXPECT_EQ(in->Get(i)->op_type(), want_ops[i]) << "instruction " << i;

  const auto* as = in->Get(0)->op_as_AllocStorage();
  EXPECT_EQ(as->dst(), 1u);
  EXPECT_EQ(as->plan_slot(), 0u);
  EXPECT_EQ(S(in->Get(0)->debug_name()), "storage0");
  const auto* at = in->Get(8)->op_as_AllocTensor();
  EXPECT_EQ(at->dst(), 7u);
  EXPECT_EQ(at->storage(), 6u);
  EXPECT_EQ(at->offset(), 32u);
  EXPECT_EQ(Vec(at->shape()), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(FromFb(at->dtype()), DType::kF32);
  EXPECT_EQ(in->Get(8)->debug_name(), nullptr);  // empty debug names are not written
  const auto* lc = in->Get(2)->op_as_LoadConst();
  EXPECT_EQ(lc->dst(), 3u);
  EXPECT_EQ(lc->const_index(), 0u);
  const auto* inv = in->Get(3)->op_as_Invoke();
  EXPECT_EQ(inv->kernel(), 0u);
  EXPECT_EQ(Vec(inv->args()), (std::vector<uint32_t>{0, 3, 2}));
  EXPECT_EQ(S(in->Get(3)->debug_name()), "Add_1");
  const auto* cp = in->Get(6)->op_as_Copy();
  EXPECT_EQ(cp->dst(), 5u);
  EXPECT_EQ(cp->src(), 2u);
  const auto* fr = in->Get(10)->op_as_FreeStorage();
  EXPECT_EQ(fr->reg(), 4u);
  const auto* ret = in->Get(11)->op_as_Ret();
  EXPECT_EQ(Vec(ret->regs()), (std::vector<uint32_t>{7}));

  const fb::Function* helper = e->functions()->Get(1);
  EXPECT_EQ(helper->num_registers(), 1u);  // SetNumRegisters after the body
  EXPECT_EQ(helper->params()->size(), 0u);
}

TEST(ExecutableWriter, IsDeterministic) {
  const std::vector<uint8_t> a = SampleFile();
  const std::vector<uint8_t> b = SampleFile();
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  // Finish() twice on the same writer gives the same bytes too.
  ExecutableWriter w;
  WriteSample(MakeSampleSpec(), w);
  auto x = w.Finish();
  auto y = w.Finish();
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_EQ(*x, *y);
  EXPECT_EQ(*x, a);
}

TEST(ExecutableWriter, FileLayoutMatchesSchema) {
  const std::vector<uint8_t> file = SampleFile();
  ASSERT_GE(file.size(), 12u);
  uint32_t prefix = 0;
  std::memcpy(&prefix, file.data(), 4);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(file.data() + 8), 4), "KEEL");
  auto r = ReadExecutable(file);
  ASSERT_TRUE(r.ok());
  const uint64_t fb_end = 4 + uint64_t{prefix};
  const uint64_t want_offset = (fb_end + 63) / 64 * 64;
  EXPECT_EQ(r->root->data_segment_offset(), want_offset);
  EXPECT_EQ(file.size(), r->root->data_segment_offset() + r->root->data_segment_size());
  for (uint64_t i = fb_end; i < want_offset; ++i) EXPECT_EQ(file[i], 0) << "padding byte " << i;
}

TEST(ExecutableWriter, ConstantRefAndCopyGiveSameFile) {
  const SampleSpec spec = MakeSampleSpec();
  ExecutableWriter by_copy, by_ref;
  WriteSample(spec, by_copy);
  WriteSample(spec, by_ref, ConstantBytes::kReferenced);  // same calls, constants by reference
  auto a = by_copy.Finish();
  auto b = by_ref.Finish();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(ExecutableWriter, WriteFileIsReadableAndReplacesAtomically) {
  const std::string path = ::testing::TempDir() + "/keel_writer_test.keel";
  ExecutableWriter w;
  WriteSample(MakeSampleSpec(), w);
  ASSERT_TRUE(w.WriteFile(path).ok());
  ASSERT_TRUE(w.WriteFile(path).ok());  // overwriting an existing file works
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(got, SampleFile());
  EXPECT_TRUE(ReadExecutable(got).ok());
  std::remove(path.c_str());

  Status bad = w.WriteFile("/nonexistent-dir-keel/x.keel");
  EXPECT_EQ(bad.code(), StatusCode::kIoError);
  EXPECT_NE(bad.message().find("/nonexistent-dir-keel/x.keel"), std::string::npos) << bad.message();
}

TEST(ExecutableWriter, LargeConstantOffsetRoundTripsAndIsRejectedAgainstSmallFile) {
  ExecutableWriter w;
  samples::MinimalBase(w);
  const uint64_t big = (uint64_t{1} << 32) + 64 * 3;  // beyond 2^32, 64-byte aligned
  const uint32_t idx = w.AddRawConstant({"far", DType::kF32, {4}, DeviceKind::kCpu, big, 16});
  w.AddFunction("main", {}, {}, 1).LoadConst(0, idx).Ret({});
  auto file = w.Finish();
  ASSERT_TRUE(file.ok());
  // The FlatBuffer itself is valid and holds the 64-bit value exactly.
  uint32_t prefix = 0;
  std::memcpy(&prefix, file->data(), 4);
  flatbuffers::Verifier verifier(file->data(), 4 + size_t{prefix});
  ASSERT_TRUE(fb::VerifySizePrefixedExecutableBuffer(verifier));
  const fb::Executable* e = fb::GetSizePrefixedExecutable(file->data());
  EXPECT_EQ(e->constants()->Get(idx)->offset(), big);
  EXPECT_EQ(e->constants()->Get(idx)->size(), 16u);
  samples::ExpectReadError(*file, StatusCode::kInvalidExecutable, "outside the data segment");
}

}  // namespace
}  // namespace keel::ser
