// compiler/memory/interval_index.cc — segment tree of closed intervals over
// compressed steps (see interval_index.h).
#include "compiler/memory/interval_index.h"

#include <algorithm>

namespace keel::memory::internal {

IntervalIndex::IntervalIndex(std::vector<int32_t> steps, int32_t max_id)
    : steps_(std::move(steps)) {
  leaves_ = std::max<int>(1, static_cast<int>(steps_.size()));
  lists_.resize(4 * static_cast<size_t>(leaves_));
  subtree_count_.assign(4 * static_cast<size_t>(leaves_), 0);
  stamp_.assign(static_cast<size_t>(std::max(0, max_id)), 0);
}

void IntervalIndex::Insert(int32_t id, int32_t first, int32_t last) {
  const int a = static_cast<int>(std::lower_bound(steps_.begin(), steps_.end(), first) - steps_.begin());
  const int b = static_cast<int>(std::upper_bound(steps_.begin(), steps_.end(), last) - steps_.begin()) - 1;
  if (a > b) return;
  InsertRec(1, 0, leaves_ - 1, a, b, id);
}

void IntervalIndex::InsertRec(int node, int lo, int hi, int a, int b, int32_t id) {
  ++subtree_count_[node];
  if (a <= lo && hi <= b) {
    lists_[node].push_back(id);
    return;
  }
  const int mid = (lo + hi) / 2;
  if (a <= mid) InsertRec(2 * node, lo, mid, a, b, id);
  if (b > mid) InsertRec(2 * node + 1, mid + 1, hi, a, b, id);
}

void IntervalIndex::Query(int32_t first, int32_t last, std::vector<int32_t>* out) {
  const int a = static_cast<int>(std::lower_bound(steps_.begin(), steps_.end(), first) - steps_.begin());
  const int b = static_cast<int>(std::upper_bound(steps_.begin(), steps_.end(), last) - steps_.begin()) - 1;
  if (a > b) return;
  if (++query_stamp_ == 0) {  // wrapped: forget old stamps
    std::fill(stamp_.begin(), stamp_.end(), 0);
    query_stamp_ = 1;
  }
  QueryRec(1, 0, leaves_ - 1, a, b, out);
}

void IntervalIndex::QueryRec(int node, int lo, int hi, int a, int b, std::vector<int32_t>* out) {
  if (subtree_count_[node] == 0 || hi < a || b < lo) return;
  for (int32_t id : lists_[node]) {
    if (stamp_[id] != query_stamp_) {
      stamp_[id] = query_stamp_;
      out->push_back(id);
    }
  }
  if (lo == hi) return;
  const int mid = (lo + hi) / 2;
  QueryRec(2 * node, lo, mid, a, b, out);
  QueryRec(2 * node + 1, mid + 1, hi, a, b, out);
}

}  // namespace keel::memory::internal
