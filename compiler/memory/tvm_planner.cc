// compiler/memory/tvm_planner.cc — storage-token reuse with TVM's match range.
#include "compiler/memory/tvm_planner.h"

#include <algorithm>
#include <map>

namespace keel::memory {

namespace {
constexpr uint64_t kMatchRange = 16;  // TVM's match_range
}  // namespace

internal::ObjectAssignment TvmPlanner::AssignTokens(const std::vector<TensorLifetime>& tensors,
                                                    const std::vector<int32_t>& group) {
  const size_t n = group.size();
  std::vector<int32_t> by_first(n), by_last(n);
  for (size_t i = 0; i < n; ++i) by_first[i] = by_last[i] = static_cast<int32_t>(i);
  std::sort(by_first.begin(), by_first.end(), [&](int32_t a, int32_t b) {
    return std::pair(tensors[group[a]].first_use, a) < std::pair(tensors[group[b]].first_use, b);
  });
  std::sort(by_last.begin(), by_last.end(), [&](int32_t a, int32_t b) {
    return std::pair(tensors[group[a]].last_use, a) < std::pair(tensors[group[b]].last_use, b);
  });

  internal::ObjectAssignment out;
  out.object_of.assign(n, -1);
  std::vector<uint64_t> token_size;
  // Free tokens keyed by size; equal sizes keep insertion order (deterministic).
  std::multimap<uint64_t, int32_t> free_tokens;

  size_t next_alloc = 0, next_free = 0;
  while (next_alloc < n || next_free < n) {
    // The next step with an event: allocations at s come before frees at s.
    int32_t s = INT32_MAX;
    if (next_alloc < n) s = tensors[group[by_first[next_alloc]]].first_use;
    if (next_free < n) s = std::min(s, tensors[group[by_last[next_free]]].last_use);
    while (next_alloc < n && tensors[group[by_first[next_alloc]]].first_use == s) {
      const int32_t i = by_first[next_alloc++];
      const uint64_t size = tensors[group[i]].size;
      int32_t token = -1;
      auto mid = free_tokens.lower_bound(size);
      auto end = free_tokens.upper_bound(size > UINT64_MAX / kMatchRange ? UINT64_MAX
                                                                         : size * kMatchRange);
      if (mid != end) {
        token = mid->second;  // the smallest free token >= size
        free_tokens.erase(mid);
      } else {
        auto begin = free_tokens.lower_bound(size / kMatchRange);
        if (mid != begin) {
          auto largest_below = std::prev(mid);
          token = largest_below->second;
          free_tokens.erase(largest_below);
          token_size[token] = std::max(token_size[token], size);
        }
      }
      if (token == -1) {
        token = static_cast<int32_t>(token_size.size());
        token_size.push_back(size);
      }
      out.object_of[i] = token;
    }
    while (next_free < n && tensors[group[by_last[next_free]]].last_use == s) {
      const int32_t i = by_last[next_free++];
      const int32_t token = out.object_of[i];
      free_tokens.emplace(token_size[token], token);
    }
  }
  out.num_objects = static_cast<int32_t>(token_size.size());
  return out;
}

Result<Plan> TvmPlanner::MakePlan(const std::vector<TensorLifetime>& tensors,
                                  const PlanOptions& /*options*/) const {
  return internal::PlanSharedObjects(tensors, name(), &TvmPlanner::AssignTokens, pack_);
}

}  // namespace keel::memory
