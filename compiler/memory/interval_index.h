// compiler/memory/interval_index.h — "which inserted lifetimes intersect [a, b]?"
//
// The planners repeatedly ask for the already-placed tensors whose lifetime
// intersects a new tensor's. A linear scan makes greedy-size O(n^2); this index
// answers in O(log T + k log T) for k hits (T = number of distinct steps).
//
// It is a segment tree over the compressed step coordinates. An inserted closed
// interval is stored in its O(log T) canonical nodes; every node also counts how
// many intervals live in its subtree so queries skip empty subtrees:
//
//        [0..7]            interval [1,5] is stored at the canonical nodes
//       /      \           [1], [2..3], [4..5]; a query [5,6] descends only
//   [0..3]    [4..7]       into non-empty subtrees that meet [5,6] and reports
//   /   \     /   \        the lists of the nodes it passes ([4..5] → [1,5]).
//  ..   [2..3][4..5] ..
//
// An interval is reported once per query (a per-id stamp removes duplicates).
//
// Ownership: owns its arrays. Thread-safety: none (one planner call owns one).
#pragma once

#include <cstdint>
#include <vector>

namespace keel::memory::internal {

class IntervalIndex {
 public:
  // `steps`: sorted, unique step coordinates; every inserted interval's endpoints
  // must be among them. `max_id`: ids passed to Insert are in [0, max_id).
  IntervalIndex(std::vector<int32_t> steps, int32_t max_id);

  // Stores id for the closed interval [first, last] (endpoints in `steps`).
  void Insert(int32_t id, int32_t first, int32_t last);

  // Appends to *out (not cleared) every stored id whose interval intersects the
  // closed interval [first, last]; any integers are accepted.
  void Query(int32_t first, int32_t last, std::vector<int32_t>* out);

 private:
  void InsertRec(int node, int lo, int hi, int a, int b, int32_t id);
  void QueryRec(int node, int lo, int hi, int a, int b, std::vector<int32_t>* out);

  std::vector<int32_t> steps_;
  int leaves_ = 0;
  std::vector<std::vector<int32_t>> lists_;
  std::vector<uint32_t> subtree_count_;
  std::vector<uint32_t> stamp_;
  uint32_t query_stamp_ = 0;
};

}  // namespace keel::memory::internal
