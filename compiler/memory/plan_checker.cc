// compiler/memory/plan_checker.cc — CheckPlan: structure checks and a sweep-line
// overlap check (algorithm in plan_checker.h).
#include "compiler/memory/plan_checker.h"

#include <algorithm>
#include <climits>
#include <map>
#include <utility>

#include "compiler/memory/planning_support.h"

namespace keel::memory {

namespace {

using internal::IsPowerOfTwo;

std::string Name(const std::vector<TensorLifetime>& tensors, size_t i) {
  std::string s = "tensor " + std::to_string(i);
  if (!tensors[i].name.empty()) s += " ('" + tensors[i].name + "')";
  return s;
}

struct Rect {
  int64_t space = 0;   // arena index, or -(storage index) - 1 for a dynamic storage
  uint64_t start = 0;  // byte offset within the space
  uint64_t end = 0;
};

bool AliasAllowed(const std::vector<TensorLifetime>& tensors, const std::vector<Rect>& rects,
                  size_t a, size_t b) {
  const bool related = tensors[a].may_alias_with == static_cast<int32_t>(b) ||
                       tensors[b].may_alias_with == static_cast<int32_t>(a);
  return related && rects[a].space == rects[b].space && rects[a].start == rects[b].start;
}

Status CheckStructure(const std::vector<TensorLifetime>& tensors, const Plan& plan,
                      std::vector<Rect>* rects) {
  if (plan.placements.size() != tensors.size()) {
    return InvalidArgument("plan has " + std::to_string(plan.placements.size()) +
                           " placements for " + std::to_string(tensors.size()) + " tensors");
  }
  for (size_t a = 0; a < plan.arenas.size(); ++a) {
    if (!IsPowerOfTwo(plan.arenas[a].alignment)) {
      return InvalidArgument("arena " + std::to_string(a) + " alignment is not a power of two");
    }
  }
  for (size_t s = 0; s < plan.storages.size(); ++s) {
    const Storage& st = plan.storages[s];
    const std::string sname = "storage " + std::to_string(s);
    if (!IsPowerOfTwo(st.alignment)) {
      return InvalidArgument(sname + " alignment is not a power of two");
    }
    if (st.arena == -1) continue;
    if (st.arena < 0 || static_cast<size_t>(st.arena) >= plan.arenas.size()) {
      return InvalidArgument(sname + " names arena " + std::to_string(st.arena) + " out of range");
    }
    const Arena& ar = plan.arenas[st.arena];
    if (ar.device != st.device) return InvalidArgument(sname + " device differs from its arena's");
    if (st.offset > ar.size || st.size > ar.size - st.offset) {
      return InvalidArgument(sname + " [" + std::to_string(st.offset) + ", +" +
                             std::to_string(st.size) + ") lies outside arena " +
                             std::to_string(st.arena) + " of " + std::to_string(ar.size) + " bytes");
    }
    if (st.offset % st.alignment != 0 || ar.alignment % st.alignment != 0) {
      return InvalidArgument(sname + " is not aligned to " + std::to_string(st.alignment));
    }
  }
  rects->resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorLifetime& t = tensors[i];
    const Placement& p = plan.placements[i];
    if (p.storage < 0 || static_cast<size_t>(p.storage) >= plan.storages.size()) {
      return InvalidArgument(Name(tensors, i) + " is placed in storage " +
                             std::to_string(p.storage) + " out of range");
    }
    const Storage& st = plan.storages[p.storage];
    if (st.device != t.device) {
      return InvalidArgument(Name(tensors, i) + " is placed in a storage of another device");
    }
    if (p.offset > st.size || t.size > st.size - p.offset) {
      return InvalidArgument(Name(tensors, i) + " [" + std::to_string(p.offset) + ", +" +
                             std::to_string(t.size) + ") lies outside storage " +
                             std::to_string(p.storage) + " of " + std::to_string(st.size) +
                             " bytes");
    }
    Rect& r = (*rects)[i];
    uint32_t base_alignment = 0;
    if (st.arena == -1) {
      r.space = -static_cast<int64_t>(p.storage) - 1;
      r.start = p.offset;
      base_alignment = st.alignment;
    } else {
      r.space = st.arena;
      r.start = st.offset + p.offset;  // no overflow: both inside the arena
      base_alignment = plan.arenas[st.arena].alignment;
    }
    r.end = r.start + t.size;
    if (r.start % t.alignment != 0 || base_alignment % t.alignment != 0) {
      return InvalidArgument(Name(tensors, i) + " at byte " + std::to_string(r.start) +
                             " is not aligned to " + std::to_string(t.alignment));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckPlan(const std::vector<TensorLifetime>& tensors, const Plan& plan) {
  KEEL_RETURN_IF_ERROR(internal::ValidateLifetimes(tensors));
  std::vector<Rect> rects;
  KEEL_RETURN_IF_ERROR(CheckStructure(tensors, plan, &rects));

  // Events: inserts ordered by first_use, removals by last_use.
  std::vector<int32_t> by_first, by_last;
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].size == 0) continue;
    by_first.push_back(static_cast<int32_t>(i));
  }
  by_last = by_first;
  std::sort(by_first.begin(), by_first.end(), [&](int32_t a, int32_t b) {
    return std::pair(tensors[a].first_use, a) < std::pair(tensors[b].first_use, b);
  });
  std::sort(by_last.begin(), by_last.end(), [&](int32_t a, int32_t b) {
    return std::pair(tensors[a].last_use, a) < std::pair(tensors[b].last_use, b);
  });

  using Key = std::pair<std::pair<int64_t, uint64_t>, int32_t>;  // ((space, start), tensor)
  std::map<Key, int32_t> live;  // value unused; the key carries the tensor
  auto key_of = [&](int32_t i) { return Key{{rects[i].space, rects[i].start}, i}; };
  auto conflict = [&](int32_t a, int32_t b) -> Status {
    return InvalidArgument(Name(tensors, a) + " [step " + std::to_string(tensors[a].first_use) +
                           ".." + std::to_string(tensors[a].last_use) + ", bytes " +
                           std::to_string(rects[a].start) + ".." + std::to_string(rects[a].end) +
                           ") overlaps " + Name(tensors, b) + " [step " +
                           std::to_string(tensors[b].first_use) + ".." +
                           std::to_string(tensors[b].last_use) + ", bytes " +
                           std::to_string(rects[b].start) + ".." + std::to_string(rects[b].end) +
                           ") in the same memory while both are live");
  };

  size_t next_removal = 0;
  for (int32_t x : by_first) {
    const int32_t s = tensors[x].first_use;
    while (next_removal < by_last.size() && tensors[by_last[next_removal]].last_use < s) {
      live.erase(key_of(by_last[next_removal]));
      ++next_removal;
    }
    const Rect& r = rects[x];
    // Entries starting inside [start, end).
    auto it = live.lower_bound(Key{{r.space, r.start}, INT32_MIN});
    for (auto jt = it; jt != live.end(); ++jt) {
      const int32_t y = jt->first.second;
      if (rects[y].space != r.space || rects[y].start >= r.end) break;
      if (!AliasAllowed(tensors, rects, x, y)) return conflict(x, y);
    }
    // The predecessor group: entries sharing the largest start below r.start.
    if (it != live.begin()) {
      auto pt = std::prev(it);
      const auto group = pt->first.first;
      if (group.first == r.space) {
        while (true) {
          const int32_t y = pt->first.second;
          if (rects[y].end > r.start && !AliasAllowed(tensors, rects, x, y)) return conflict(x, y);
          if (pt == live.begin()) break;
          --pt;
          if (pt->first.first != group) break;
        }
      }
    }
    live.emplace(key_of(x), 0);
  }
  return Status::Ok();
}

}  // namespace keel::memory
