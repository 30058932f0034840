// tests/serialization/executable_mutation_test.cc — ReadExecutable on damaged files never crashes.
//
// From a valid executable with constants, thousands of copies are damaged
// (random byte flips concentrated on the FlatBuffer part, random truncations,
// both) with a fixed seed. ReadExecutable must return — success or an error —
// and, when it succeeds, every part of the view the VM would touch must be
// readable. Built a second time with AddressSanitizer + UBSan
// (keel_serialization_mutation_asan_test) so out-of-bounds reads fail the test.
#include <cstdint>
#include <random>

#include "gtest/gtest.h"
#include "serialization/executable_reader.h"
#include "tests/serialization/sample_executables.h"

namespace keel::ser {
namespace {

// Touches everything a loader would read; returns a checksum so the reads are not optimized out.
uint64_t Walk(const ExecutableView& v) {
  uint64_t sum = v.root->data_segment_size();
  const fb::Executable* e = v.root;
  if (e->constants()) {
    for (uint32_t i = 0; i < e->constants()->size(); ++i) {
      for (uint8_t b : v.ConstantBytes(i)) sum += b;
    }
  }
  if (e->kernels()) {
    for (const fb::Kernel* k : *e->kernels()) {
      sum += k->name()->size();
      if (k->args()) {
        for (const fb::KernelArg* a : *k->args()) sum += a->shape() ? a->shape()->size() : 0;
      }
    }
  }
  for (const fb::Function* f : *e->functions()) {
    for (const fb::Instruction* inst : *f->instructions()) {
      sum += static_cast<uint8_t>(inst->op_type());
      if (const auto* x = inst->op_as_Invoke()) {
        for (uint32_t a : *x->args()) sum += a;
      }
      if (const auto* x = inst->op_as_AllocTensor()) sum += x->offset();
    }
  }
  return sum;
}

TEST(ExecutableMutation, RandomDamageNeverCrashes) {
  const std::vector<uint8_t> original = samples::SampleFile();
  ASSERT_FALSE(original.empty());
  auto base = ReadExecutable(original);
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  const size_t fb_end = static_cast<size_t>(base->root->data_segment_offset());

  std::mt19937_64 rng(0x6b65656c);  // fixed seed: failures reproduce
  constexpr int kIterations = 5000;
  int accepted = 0, rejected = 0;
  uint64_t checksum = 0;
  for (int it = 0; it < kIterations; ++it) {
    std::vector<uint8_t> file = original;
    const int mode = static_cast<int>(rng() % 3);  // 0: flips, 1: truncate, 2: both
    if (mode != 1) {
      const int flips = 1 + static_cast<int>(rng() % 4);
      for (int k = 0; k < flips; ++k) {
        // 7 of 8 flips in the FlatBuffer part, where the structure lives.
        const size_t range = (rng() % 8 != 0) ? fb_end : file.size();
        const size_t pos = static_cast<size_t>(rng() % range);
        file[pos] ^= static_cast<uint8_t>(1u << (rng() % 8));
        if (rng() % 4 == 0) file[pos] = static_cast<uint8_t>(rng());
      }
    }
    if (mode != 0) {
      // A fresh exact-size allocation, so sanitizers see reads past the end.
      const size_t len = static_cast<size_t>(rng() % (file.size() + 1));
      file = std::vector<uint8_t>(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(len));
    }
    auto r = ReadExecutable(file);
    if (r.ok()) {
      ++accepted;
      checksum += Walk(*r);
    } else {
      ++rejected;
      EXPECT_FALSE(r.status().message().empty());
      EXPECT_NE(r.status().code(), StatusCode::kInternal) << r.status().ToString();
    }
  }
  // Most damage must be detected; some flips land in unused bytes or data and are harmless.
  EXPECT_GT(rejected, kIterations / 2) << "accepted " << accepted;
  EXPECT_EQ(accepted + rejected, kIterations);
  RecordProperty("accepted", accepted);
  RecordProperty("rejected", rejected);
  RecordProperty("checksum", std::to_string(checksum));
}

}  // namespace
}  // namespace keel::ser
