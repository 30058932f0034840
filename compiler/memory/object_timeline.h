// compiler/memory/object_timeline.h — the lifetimes already assigned to one shared
// object, for the shared-object planners (greedy-breadth, greedy-size-objects).
//
// A shared object holds tensors whose closed lifetimes are pairwise disjoint; they
// are kept in a map first_use → last_use, so "is the object free during [f, l]?"
// and "how far in time is [f, l] from its nearest tensor?" cost O(log k).
//
// Ownership: a plain value. Thread-safety: none needed (one planner call owns it).
#pragma once

#include <cstdint>
#include <map>

namespace keel::memory::internal {

class ObjectTimeline {
 public:
  // True when no stored interval intersects [first, last].
  bool IsFree(int32_t first, int32_t last) const {
    auto it = intervals_.upper_bound(last);
    if (it == intervals_.begin()) return true;
    return std::prev(it)->second < first;
  }
  // Steps between [first, last] and the nearest stored interval (call only when
  // free); INT64_MAX for an empty object.
  int64_t Distance(int32_t first, int32_t last) const {
    int64_t d = INT64_MAX;
    auto it = intervals_.upper_bound(last);
    if (it != intervals_.end()) d = std::min<int64_t>(d, int64_t{it->first} - last);
    if (it != intervals_.begin()) d = std::min<int64_t>(d, int64_t{first} - std::prev(it)->second);
    return d;
  }
  void Add(int32_t first, int32_t last) { intervals_.emplace(first, last); }

 private:
  std::map<int32_t, int32_t> intervals_;
};

}  // namespace keel::memory::internal
