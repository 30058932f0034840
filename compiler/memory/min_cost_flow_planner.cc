// compiler/memory/min_cost_flow_planner.cc — blocked successive-shortest-path
// min-cost flow on the tensor reuse graph (see header).
#include "compiler/memory/min_cost_flow_planner.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <tuple>

namespace keel::memory {

namespace {

// A small min-cost-flow solver for unit capacities (successive shortest paths with
// Dijkstra on reduced costs; all original costs are non-negative).
class UnitFlow {
 public:
  explicit UnitFlow(int nodes) : head_(nodes, -1), potential_(nodes, 0) {}

  int AddEdge(int from, int to, int64_t cost) {
    const int id = static_cast<int>(to_.size());
    Push(from, to, 1, cost);
    Push(to, from, 0, -cost);
    return id;
  }
  bool HasFlow(int edge) const { return cap_[edge] == 0; }

  // Sends `units` units from s to t (each one shortest path); false if impossible.
  bool Run(int s, int t, int units) {
    const int n = static_cast<int>(head_.size());
    std::vector<int64_t> dist(n);
    std::vector<int> via(n);
    using Item = std::pair<int64_t, int>;
    for (int u = 0; u < units; ++u) {
      std::fill(dist.begin(), dist.end(), kInf);
      std::fill(via.begin(), via.end(), -1);
      std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
      dist[s] = 0;
      heap.emplace(0, s);
      while (!heap.empty()) {
        auto [d, v] = heap.top();
        heap.pop();
        if (d != dist[v]) continue;
        if (v == t) break;  // nodes still queued are no closer than t
        for (int e = head_[v]; e != -1; e = next_[e]) {
          if (cap_[e] == 0) continue;
          const int w = to_[e];
          const int64_t nd = d + cost_[e] + potential_[v] - potential_[w];
          if (nd < dist[w]) {
            dist[w] = nd;
            via[w] = e;
            heap.emplace(nd, w);
          }
        }
      }
      if (dist[t] == kInf) return false;
      // Johnson potentials capped at dist[t] (as in the AtCoder library): keeps
      // every residual reduced cost non-negative, also for nodes not reached.
      for (int v = 0; v < n; ++v) potential_[v] += std::min(dist[v], dist[t]);
      for (int v = t; v != s; v = to_[via[v] ^ 1]) {
        cap_[via[v]] -= 1;
        cap_[via[v] ^ 1] += 1;
      }
    }
    return true;
  }

 private:
  static constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
  void Push(int from, int to, int cap, int64_t cost) {
    to_.push_back(to);
    cap_.push_back(cap);
    cost_.push_back(cost);
    next_.push_back(head_[from]);
    head_[from] = static_cast<int>(to_.size()) - 1;
  }
  std::vector<int> head_, to_, cap_, next_;
  std::vector<int64_t> cost_, potential_;
};

struct Tail {  // an L-side candidate
  int32_t last_use;
  uint64_t size;
  int32_t object;  // >= 0: an existing object; -1: a block tensor (see tensor)
  int32_t tensor;  // local tensor index when object == -1
};

}  // namespace

internal::ObjectAssignment MinCostFlowPlanner::AssignObjects(
    const std::vector<TensorLifetime>& tensors, const std::vector<int32_t>& group) {
  const int32_t n = static_cast<int32_t>(group.size());
  auto T = [&](int32_t local) -> const TensorLifetime& { return tensors[group[local]]; };
  std::vector<int32_t> order(n);
  for (int32_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return T(a).first_use < T(b).first_use; });

  internal::ObjectAssignment out;
  out.object_of.assign(n, -1);
  std::vector<uint64_t> object_size;
  std::vector<int32_t> object_last;

  for (int32_t begin = 0; begin < n; begin += kBlock) {
    const int32_t end = std::min(n, begin + kBlock);
    const int32_t block = end - begin;
    // L candidates sorted by last_use (objects first on ties, then by id: deterministic).
    std::vector<Tail> tails;
    for (int32_t o = 0; o < static_cast<int32_t>(object_size.size()); ++o) {
      tails.push_back(Tail{object_last[o], object_size[o], o, -1});
    }
    for (int32_t k = begin; k < end; ++k) {
      tails.push_back(Tail{T(order[k]).last_use, T(order[k]).size, -1, order[k]});
    }
    std::stable_sort(tails.begin(), tails.end(),
                     [](const Tail& a, const Tail& b) { return a.last_use < b.last_use; });

    // Nodes: 0 source, 1 sink, 2.. R (block), then L nodes created on demand.
    std::vector<int> l_node(tails.size(), -1);
    int next_node = 2 + block;
    struct PendingEdge { int l_tail; int r; int64_t cost; };
    std::vector<PendingEdge> pending;
    std::vector<size_t> candidates, scratch;
    for (int32_t r = 0; r < block; ++r) {
      const TensorLifetime& t = T(order[begin + r]);
      // Tails with last_use < first_use form a prefix of `tails`. Keep the
      // kCandidates/2 that died last (chain-like reuse) and the kCandidates/2
      // best-fitting others (least growth, then least waste) so long-idle objects
      // of the right size stay reachable.
      const size_t limit = static_cast<size_t>(
          std::lower_bound(tails.begin(), tails.end(), t.first_use,
                           [](const Tail& a, int32_t f) { return a.last_use < f; }) -
          tails.begin());
      const size_t recent = std::min<size_t>(limit, kCandidates / 2);
      candidates.clear();
      for (size_t c = limit - recent; c < limit; ++c) candidates.push_back(c);
      std::vector<size_t>& older = scratch;
      older.resize(limit - recent);
      for (size_t c = 0; c < older.size(); ++c) older[c] = c;
      auto fit_key = [&](size_t c) {
        const uint64_t s = tails[c].size;
        return std::tuple(t.size > s ? t.size - s : 0, s > t.size ? s - t.size : 0,
                          -static_cast<int64_t>(c));
      };
      auto by_fit = [&](size_t a, size_t b) { return fit_key(a) < fit_key(b); };
      const size_t fit_count = std::min<size_t>(older.size(), kCandidates - recent);
      std::nth_element(older.begin(), older.begin() + fit_count, older.end(), by_fit);
      candidates.insert(candidates.end(), older.begin(), older.begin() + fit_count);
      std::sort(candidates.begin(), candidates.end());
      for (size_t c : candidates) {
        if (l_node[c] == -1) l_node[c] = next_node++;
        const uint64_t growth = t.size > tails[c].size ? t.size - tails[c].size : 0;
        pending.push_back(PendingEdge{static_cast<int>(c), r, static_cast<int64_t>(growth)});
      }
    }
    UnitFlow flow(next_node);
    for (size_t c = 0; c < tails.size(); ++c) {
      if (l_node[c] != -1) flow.AddEdge(0, l_node[c], 0);
    }
    for (int32_t r = 0; r < block; ++r) {
      flow.AddEdge(0, 2 + r, static_cast<int64_t>(T(order[begin + r]).size));
      flow.AddEdge(2 + r, 1, 0);
    }
    std::vector<int> reuse_edge(pending.size());
    for (size_t e = 0; e < pending.size(); ++e) {
      reuse_edge[e] = flow.AddEdge(l_node[pending[e].l_tail], 2 + pending[e].r, pending[e].cost);
    }
    // Always feasible: every R_j has its own source edge.
    (void)flow.Run(0, 1, block);

    std::vector<int> source_tail(block, -1);  // which tail feeds R_j, -1: new object
    for (size_t e = 0; e < pending.size(); ++e) {
      if (flow.HasFlow(reuse_edge[e])) source_tail[pending[e].r] = pending[e].l_tail;
    }
    for (int32_t r = 0; r < block; ++r) {  // first_use order: predecessors resolved first
      const int32_t x = order[begin + r];
      int32_t obj;
      if (source_tail[r] == -1) {
        obj = static_cast<int32_t>(object_size.size());
        object_size.push_back(0);
        object_last.push_back(T(x).last_use);
      } else {
        const Tail& tail = tails[source_tail[r]];
        obj = tail.object >= 0 ? tail.object : out.object_of[tail.tensor];
      }
      out.object_of[x] = obj;
      object_size[obj] = std::max(object_size[obj], T(x).size);
      object_last[obj] = std::max(object_last[obj], T(x).last_use);
    }
  }
  out.num_objects = static_cast<int32_t>(object_size.size());
  return out;
}

Result<Plan> MinCostFlowPlanner::MakePlan(const std::vector<TensorLifetime>& tensors,
                                          const PlanOptions& /*options*/) const {
  return internal::PlanSharedObjects(tensors, name(), &MinCostFlowPlanner::AssignObjects, false);
}

}  // namespace keel::memory
