// compiler/memory/lower_bounds.cc — PeakLiveLowerBound and PositionalMaxLowerBound
// (definitions and proofs in lower_bounds.h).
#include "compiler/memory/lower_bounds.h"

#include <algorithm>
#include <functional>
#include <set>

#include "compiler/memory/planning_support.h"

namespace keel::memory {

namespace internal {
// Peak live bytes of one device group.
uint64_t GroupPeakLive(const std::vector<TensorLifetime>& tensors, const std::vector<int32_t>& group) {
  const std::vector<int32_t> steps = internal::FirstUseSteps(tensors, group);
  // delta[k]: change of live bytes at steps[k]; tensors leave after their last_use,
  // i.e. at the first first_use step > last_use. Alias savings apply only at one step.
  std::vector<int64_t> delta(steps.size() + 1, 0);
  std::vector<uint64_t> saving(steps.size(), 0);
  auto index_of = [&](int32_t step) {
    return static_cast<size_t>(std::lower_bound(steps.begin(), steps.end(), step) - steps.begin());
  };
  for (int32_t i : group) {
    const TensorLifetime& t = tensors[i];
    const size_t a = index_of(t.first_use);
    const size_t b = static_cast<size_t>(std::upper_bound(steps.begin(), steps.end(), t.last_use) -
                                         steps.begin());
    delta[a] += static_cast<int64_t>(t.size);
    delta[b] -= static_cast<int64_t>(t.size);
    const int32_t al = t.may_alias_with;
    if (al >= 0 && static_cast<size_t>(al) < tensors.size() &&
        tensors[al].device == t.device && tensors[al].last_use == t.first_use) {
      saving[a] += std::min(t.size, tensors[al].size);
    }
  }
  uint64_t peak = 0;
  int64_t live = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    live += delta[k];
    const uint64_t here = static_cast<uint64_t>(live);
    peak = std::max(peak, here > saving[k] ? here - saving[k] : 0);
  }
  return peak;
}
}  // namespace internal

namespace {

uint64_t GroupPositional(const std::vector<TensorLifetime>& tensors,
                         const std::vector<int32_t>& group) {
  std::vector<int32_t> by_first = group, by_last = group;
  std::sort(by_first.begin(), by_first.end(), [&](int32_t a, int32_t b) {
    return std::pair(tensors[a].first_use, a) < std::pair(tensors[b].first_use, b);
  });
  std::sort(by_last.begin(), by_last.end(), [&](int32_t a, int32_t b) {
    return std::pair(tensors[a].last_use, a) < std::pair(tensors[b].last_use, b);
  });
  std::multiset<uint64_t, std::greater<>> live;
  std::vector<uint64_t> position_max;
  size_t next_add = 0, next_remove = 0;
  while (next_add < by_first.size()) {
    const int32_t s = tensors[by_first[next_add]].first_use;
    while (next_remove < by_last.size() && tensors[by_last[next_remove]].last_use < s) {
      live.erase(live.find(tensors[by_last[next_remove]].size));
      ++next_remove;
    }
    while (next_add < by_first.size() && tensors[by_first[next_add]].first_use == s) {
      live.insert(tensors[by_first[next_add]].size);
      ++next_add;
    }
    if (position_max.size() < live.size()) position_max.resize(live.size(), 0);
    size_t k = 0;
    for (uint64_t size : live) {
      position_max[k] = std::max(position_max[k], size);
      ++k;
    }
  }
  uint64_t sum = 0;
  for (uint64_t v : position_max) sum += v;
  return sum;
}

}  // namespace

uint64_t PeakLiveLowerBound(const std::vector<TensorLifetime>& tensors) {
  uint64_t total = 0;
  for (const internal::DeviceGroup& g : internal::GroupByDevice(tensors)) {
    total += internal::GroupPeakLive(tensors, g.tensors);
  }
  return total;
}

uint64_t PositionalMaxLowerBound(const std::vector<TensorLifetime>& tensors) {
  uint64_t total = 0;
  for (const internal::DeviceGroup& g : internal::GroupByDevice(tensors)) {
    total += GroupPositional(tensors, g.tensors);
  }
  return total;
}

}  // namespace keel::memory
