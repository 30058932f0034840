// tests/compiler/memory/plan_checker_test.cc — CheckPlan accepts valid plans and
// catches deliberately broken ones (overlap, misalignment, out of bounds, bad
// indices, devices, aliasing rules).
#include <gtest/gtest.h>

#include "compiler/memory/planner.h"
#include "memory_test_util.h"

namespace keel::memory {
namespace {

using testing::T;

// Three tensors: a [0,1] 100 B, b [1,2] 50 B, c [2,3] 100 B; a and c can share.
std::vector<TensorLifetime> Chain() { return {T(100, 0, 1, 64), T(50, 1, 2, 64), T(100, 2, 3, 64)}; }

Plan OneArena(uint64_t size, std::vector<uint64_t> offsets) {
  Plan p;
  p.strategy = "hand";
  p.arenas.push_back(Arena{Device::kCpu, size, 256});
  p.storages.push_back(Storage{size, 256, Device::kCpu, 0, 0});
  for (uint64_t o : offsets) p.placements.push_back(Placement{0, o});
  return p;
}

TEST(PlanChecker, AcceptsValidOffsetPlan) {
  EXPECT_TRUE(CheckPlan(Chain(), OneArena(192, {0, 128, 0})).ok());
}

TEST(PlanChecker, CatchesOverlapOfLiveTensors) {
  // b [128, 178) would be fine; at 64 it overlaps a [0, 100) at step 1.
  Status s = CheckPlan(Chain(), OneArena(256, {0, 64, 128}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("tensor 0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("tensor 1"), std::string::npos) << s.message();
}

TEST(PlanChecker, CatchesOverlapFromBelowAcrossManyLiveTensors) {
  // A long tensor low in memory, many short ones above, one that dips into it.
  std::vector<TensorLifetime> ts{T(1000, 0, 50)};
  std::vector<uint64_t> offs{0};
  for (int i = 0; i < 20; ++i) {
    ts.push_back(T(10, i, i));
    offs.push_back(1000 + 10 * static_cast<uint64_t>(i % 3));
  }
  EXPECT_TRUE(CheckPlan(ts, OneArena(2000, offs)).ok());
  ts.push_back(T(10, 30, 31));
  offs.push_back(995);  // overlaps the long tensor's last 5 bytes
  Status s = CheckPlan(ts, OneArena(2000, offs));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("tensor 21"), std::string::npos) << s.message();
}

TEST(PlanChecker, DisjointLifetimesMayShareBytes) {
  EXPECT_TRUE(CheckPlan({T(100, 0, 1), T(100, 2, 3)}, OneArena(100, {0, 0})).ok());
  // Touching at one step is not disjoint.
  EXPECT_FALSE(CheckPlan({T(100, 0, 1), T(100, 1, 3)}, OneArena(100, {0, 0})).ok());
}

TEST(PlanChecker, CatchesMisalignedTensor) {
  Status s = CheckPlan(Chain(), OneArena(256, {0, 100, 0}));  // b needs 64-alignment
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("aligned"), std::string::npos) << s.message();
  // Offset aligned but the arena itself is only 32-aligned.
  Plan p = OneArena(192, {0, 128, 0});
  p.arenas[0].alignment = 32;
  p.storages[0].alignment = 32;
  EXPECT_FALSE(CheckPlan(Chain(), p).ok());
}

TEST(PlanChecker, CatchesTensorOutsideStorageAndStorageOutsideArena) {
  EXPECT_FALSE(CheckPlan(Chain(), OneArena(150, {0, 128, 0})).ok());  // b ends at 178
  Plan p = OneArena(192, {0, 128, 0});
  p.storages[0].offset = 256;  // storage [256, 448) in a 192-byte arena
  EXPECT_FALSE(CheckPlan(Chain(), p).ok());
  Plan q = OneArena(192, {0, 128, 0});
  q.placements[2].offset = UINT64_MAX - 10;  // overflow must not wrap around
  EXPECT_FALSE(CheckPlan(Chain(), q).ok());
}

TEST(PlanChecker, CatchesBadIndicesAndCounts) {
  Plan p = OneArena(192, {0, 128, 0});
  p.placements.pop_back();
  EXPECT_FALSE(CheckPlan(Chain(), p).ok());
  Plan q = OneArena(192, {0, 128, 0});
  q.placements[1].storage = 3;
  EXPECT_FALSE(CheckPlan(Chain(), q).ok());
  Plan r = OneArena(192, {0, 128, 0});
  r.storages[0].arena = 7;
  EXPECT_FALSE(CheckPlan(Chain(), r).ok());
}

TEST(PlanChecker, CatchesDeviceMismatchAndAllowsCrossDeviceOverlap) {
  std::vector<TensorLifetime> ts{T(100, 0, 1), T(100, 0, 1, 1, Device::kCuda)};
  Plan p;
  p.arenas = {Arena{Device::kCpu, 100, 256}, Arena{Device::kCuda, 100, 256}};
  p.storages = {Storage{100, 256, Device::kCpu, 0, 0}, Storage{100, 256, Device::kCuda, 1, 0}};
  p.placements = {Placement{0, 0}, Placement{1, 0}};
  EXPECT_TRUE(CheckPlan(ts, p).ok());
  p.placements[1].storage = 0;  // a CUDA tensor in CPU memory
  EXPECT_FALSE(CheckPlan(ts, p).ok());
}

TEST(PlanChecker, SeparateArenasDoNotConflict) {
  std::vector<TensorLifetime> ts{T(100, 0, 1), T(100, 0, 1)};
  Plan p;
  p.arenas = {Arena{Device::kCpu, 100, 256}, Arena{Device::kCpu, 100, 256}};
  p.storages = {Storage{100, 256, Device::kCpu, 0, 0}, Storage{100, 256, Device::kCpu, 1, 0}};
  p.placements = {Placement{0, 0}, Placement{1, 0}};
  EXPECT_TRUE(CheckPlan(ts, p).ok());
  // Two storages overlapping inside one arena, their tensors live together.
  p.storages[1].arena = 0;
  EXPECT_FALSE(CheckPlan(ts, p).ok());
}

TEST(PlanChecker, DynamicStoragesAreSeparateAllocations) {
  std::vector<TensorLifetime> ts{T(100, 0, 1), T(100, 0, 1)};
  Plan p;
  p.storages = {Storage{100, 64, Device::kCpu, -1, 0}, Storage{100, 64, Device::kCpu, -1, 0}};
  p.placements = {Placement{0, 0}, Placement{1, 0}};
  EXPECT_TRUE(CheckPlan(ts, p).ok());
  p.placements[1].storage = 0;  // both live in one dynamic storage
  EXPECT_FALSE(CheckPlan(ts, p).ok());
}

TEST(PlanChecker, InPlaceAliasOnlyAtTheSameStart) {
  std::vector<TensorLifetime> ts{T(128, 0, 1, 64), T(128, 1, 2, 64)};
  ts[1].may_alias_with = 0;
  EXPECT_TRUE(CheckPlan(ts, OneArena(128, {0, 0})).ok());
  EXPECT_FALSE(CheckPlan(ts, OneArena(256, {0, 64})).ok());  // shifted: not in place
  ts[1].may_alias_with = -1;
  EXPECT_FALSE(CheckPlan(ts, OneArena(128, {0, 0})).ok());  // not declared
}

TEST(PlanChecker, InPlaceAliasDoesNotExcuseAThirdTensor) {
  // a aliased by b at step 1; c (live at step 1) overlaps the shared bytes.
  std::vector<TensorLifetime> ts{T(128, 0, 1, 64), T(64, 1, 2, 64), T(64, 1, 1, 64)};
  ts[1].may_alias_with = 0;
  EXPECT_TRUE(CheckPlan(ts, OneArena(192, {0, 0, 128})).ok());
  EXPECT_FALSE(CheckPlan(ts, OneArena(192, {0, 0, 64})).ok());  // c inside a's upper half
}

TEST(PlanChecker, RejectsInvalidLifetimes) {
  std::vector<TensorLifetime> ts{T(10, 3, 2)};
  EXPECT_EQ(CheckPlan(ts, OneArena(10, {0})).code(), StatusCode::kInvalidArgument);
  std::vector<TensorLifetime> us{T(10, 0, 1, 3)};
  EXPECT_EQ(CheckPlan(us, OneArena(10, {0})).code(), StatusCode::kInvalidArgument);
  std::vector<TensorLifetime> vs{T(10, 0, 1), T(10, 2, 3)};
  vs[1].may_alias_with = 0;  // 0's last_use (1) != 1's first_use (2)
  EXPECT_EQ(CheckPlan(vs, OneArena(10, {0, 0})).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace keel::memory
