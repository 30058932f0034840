// bench/memory/guillotine_pieces.cc — the generator's own guillotine cuts of a
// generated problem (perfect_packing.h), as a tree of pieces, and any piece
// written out as a problem of its own.
//
//   keel_guillotine_pieces [--buffers 10000] [--seed 2] [--capacity 1048576]
//                          [--steps 100000] [--min-buffers 100]
//                          [--export K PATH] [--merge K1,K2,... PATH]
//                          [--layout PATH] [--find]
//                          [--cuts [--within T0 T1] [--closure-nodes N]]
//
// Rebuilds a guillotine tree from the generator's layout: a piece (a set of
// buffers tiling a rectangle of time x bytes) is split across time where no
// buffer of it lives across a step, else across bytes where no buffer of it
// straddles an offset (time first; the generator's own order of cuts is not
// recoverable, any tree of the tiling will do). Prints every piece of at least
// --min-buffers buffers, indented by depth, numbered in that order: its steps,
// bytes, buffers, how it is cut and its median buffer lifetime. --export K
// writes piece K as MiniMalloc's CSV (its buffers as they are; `keel-plan
// --buffers PATH --strategies exact`), whose optimum is the piece's height:
// the buffers tile it, every step of it is full. --merge writes the whole
// problem with each listed piece replaced by one buffer, its rectangle (a
// piece inside one listed before it stays inside it): an oracle for "these
// pieces decided and merged", whose optimum is still the problem's.
// --layout writes the whole problem with the generator's offsets (MiniMalloc's
// solution format), for measuring a search against the generator's pieces.
// --find runs the piece search that `exact` uses (piece_search.h), which
// does not see the layout, and prints, per size, how many of the tree's pieces
// it found, how many of its pieces are rectangles of the generator's layout,
// and how many TilePieces packed (with the seconds each step took).
// --cuts asks why the chains (piece_search.cc) miss the tree's pieces of
// 100-1,000 buffers (those inside steps [T0, T1) with --within): at each
// point where such a piece is cut across time, whether its own starters there
// are the first subset (fewest buffers first) of all starters there that sums
// to its height, as a chain step chooses; per slice between its cuts, whether
// the search found it and what the closure from the slice's starters returns
// (the slice, consecutive slices of the piece, a set reaching outside it, or
// nothing); and whether the closure from the piece's own starters is the piece.
//
// Why: a piece that a planner cannot pack alone at its height is where the
// planner loses bytes on the whole problem too, and it is far smaller (seed
// 2 at 10,000 buffers: 1,430 buffers in 77 steps, docs/MEASUREMENTS.md,
// "Memory planning, issue 10: the hard core of seed 2"). The tree is the
// generator's knowledge, for measurement only; no planner sees it.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/memory/perfect_packing.h"
#include "compiler/memory/buffer_csv.h"
#include "compiler/memory/piece_search.h"

namespace {

namespace memory = keel::memory;

struct Piece {
  std::vector<int32_t> buffers;
  int depth = 0;
};

class Tree {
 public:
  explicit Tree(const memory::bench::PerfectPackingProblem& problem) : p_(problem) {}

  // Splits `piece` recursively, printing (and numbering) the pieces of at
  // least `min_buffers` buffers; `wanted` receives the listed pieces' buffers.
  void Walk(Piece piece, size_t min_buffers, std::map<long, std::vector<int32_t>>* wanted) {
    if (piece.buffers.size() < min_buffers) return;
    const long index = next_index_++;
    all_pieces_.push_back(piece.buffers);
    if (auto it = wanted->find(index); it != wanted->end()) it->second = piece.buffers;
    int64_t t0 = INT64_MAX, t1 = 0;
    uint64_t b0 = UINT64_MAX, b1 = 0;
    std::vector<int64_t> lifetimes;
    for (int32_t i : piece.buffers) {
      t0 = std::min<int64_t>(t0, Begin(i));
      t1 = std::max<int64_t>(t1, End(i));
      b0 = std::min(b0, p_.offsets[i]);
      b1 = std::max(b1, p_.offsets[i] + p_.tensors[i].size);
      lifetimes.push_back(End(i) - Begin(i));
    }
    std::nth_element(lifetimes.begin(), lifetimes.begin() + lifetimes.size() / 2, lifetimes.end());
    std::vector<int32_t> low, high;
    const char* how = "not cut";
    int64_t at = 0;
    if (Split(piece.buffers, [&](int32_t i) { return Begin(i); }, [&](int32_t i) { return End(i); }, &low, &high, &at)) {
      how = "time";
    } else if (Split(
                   piece.buffers, [&](int32_t i) { return static_cast<int64_t>(p_.offsets[i]); },
                   [&](int32_t i) { return static_cast<int64_t>(p_.offsets[i] + p_.tensors[i].size); }, &low, &high,
                   &at)) {
      how = "bytes";
    }
    std::printf("%4ld %*s[%lld, %lld) x [%llu, %llu): %zu buffers, median lifetime %lld; cut: %s",
                index, 2 * piece.depth, "", static_cast<long long>(t0), static_cast<long long>(t1),
                static_cast<unsigned long long>(b0), static_cast<unsigned long long>(b1), piece.buffers.size(),
                static_cast<long long>(lifetimes[lifetimes.size() / 2]), how);
    if (low.empty()) {
      std::printf("\n");
      return;
    }
    std::printf(" at %lld\n", static_cast<long long>(at));
    Walk({std::move(low), piece.depth + 1}, min_buffers, wanted);
    Walk({std::move(high), piece.depth + 1}, min_buffers, wanted);
  }

 private:
  int64_t Begin(int32_t i) const { return p_.tensors[i].first_use; }
  int64_t End(int32_t i) const { return int64_t{p_.tensors[i].last_use} + 1; }

  // The first point x (in `lo` order) that no buffer spans (lo < x < hi), with
  // buffers on both sides: `low` gets those ending at or before it.
  template <typename Lo, typename Hi>
  static bool Split(std::vector<int32_t> buffers, Lo lo, Hi hi, std::vector<int32_t>* low, std::vector<int32_t>* high,
                    int64_t* at) {
    std::sort(buffers.begin(), buffers.end(), [&](int32_t a, int32_t b) { return lo(a) < lo(b); });
    int64_t reach = hi(buffers[0]);
    for (size_t k = 1; k < buffers.size(); ++k) {
      if (lo(buffers[k]) >= reach) {
        low->assign(buffers.begin(), buffers.begin() + static_cast<std::ptrdiff_t>(k));
        high->assign(buffers.begin() + static_cast<std::ptrdiff_t>(k), buffers.end());
        *at = lo(buffers[k]);
        return true;
      }
      reach = std::max(reach, hi(buffers[k]));
    }
    return false;
  }

  const memory::bench::PerfectPackingProblem& p_;
  long next_index_ = 0;

 public:
  std::vector<std::vector<int32_t>> all_pieces_;  // every piece walked, in walk order
};

// --find: the piece search against the tree (measurement only).
int FindPieces(const memory::bench::PerfectPackingProblem& problem, std::vector<std::vector<int32_t>> tree) {
  using Clock = memory::internal::SearchClock;
  std::vector<memory::internal::PackingItem> items;
  for (const memory::TensorLifetime& t : problem.tensors) items.push_back(memory::internal::ItemOf(t));
  const Clock::time_point start = Clock::now();
  const std::vector<memory::internal::ConstantPiece> found = memory::internal::FindConstantPieces(items);
  const double find_s = std::chrono::duration<double>(Clock::now() - start).count();
  size_t tiled = 0;
  const Clock::time_point tile_start = Clock::now();
  const memory::internal::BlockProblem blocks =
      memory::internal::TilePieces(items, Clock::now() + std::chrono::seconds(60), {}, &tiled);
  const double tile_s = std::chrono::duration<double>(Clock::now() - tile_start).count();
  auto is_rect = [&](const std::vector<int32_t>& piece) {
    int64_t t0 = INT64_MAX, t1 = 0;
    uint64_t b0 = UINT64_MAX, b1 = 0, area = 0;
    for (int32_t i : piece) {
      t0 = std::min<int64_t>(t0, items[i].begin);
      t1 = std::max<int64_t>(t1, items[i].end);
      b0 = std::min(b0, problem.offsets[i]);
      b1 = std::max(b1, problem.offsets[i] + items[i].size);
      area += items[i].size * static_cast<uint64_t>(items[i].end - items[i].begin);
    }
    return static_cast<uint64_t>(t1 - t0) * (b1 - b0) == area;
  };
  std::set<std::vector<int32_t>> found_sets;
  for (const auto& piece : found) found_sets.insert(piece.members);
  for (auto& piece : tree) std::sort(piece.begin(), piece.end());
  // The tiled pieces: how many of them are rectangles of the generator's
  // layout (the others are packed differently at the same height).
  std::vector<std::vector<int32_t>> members(blocks.blocks.size());
  for (size_t i = 0; i < items.size(); ++i) members[blocks.block_of[i]].push_back(static_cast<int32_t>(i));
  size_t tiled_rect = 0, tiled_buffers = 0;
  for (const auto& m : members) {
    if (m.size() < 2) continue;
    tiled_buffers += m.size();
    tiled_rect += is_rect(m);
  }
  std::printf("found %zu pieces in %.3f s; TilePieces: %zu packed as blocks (%zu of them rectangles of the layout; "
              "%zu buffers in them, %zu blocks for %zu buffers) in %.3f s\n",
              found.size(), find_s, tiled, tiled_rect, tiled_buffers, blocks.blocks.size(), items.size(), tile_s);
  const size_t bins[][2] = {{2, 19}, {20, 99}, {100, 200}, {201, 300}, {301, 1000}, {1001, 2000}, {2001, 1000000}};
  for (const auto& bin : bins) {
    size_t in_tree = 0, hit = 0, mine = 0, rect = 0;
    for (const auto& piece : tree) {
      if (piece.size() < bin[0] || piece.size() > bin[1]) continue;
      ++in_tree;
      hit += found_sets.count(piece);
    }
    for (const auto& piece : found) {
      if (piece.members.size() < bin[0] || piece.members.size() > bin[1]) continue;
      ++mine;
      rect += is_rect(piece.members);
    }
    std::printf("%5zu-%-7zu tree pieces %5zu, found %5zu; pieces found %5zu, rectangles of the layout %5zu\n", bin[0],
                bin[1], in_tree, hit, mine, rect);
  }
  return 0;
}

// --cuts: for each tree piece of 100-1,000 buffers cut across time, at each
// point inside it where none of its buffers lives across (a cut), whether
// the chains' choice can reach its continuation: the buffers of it starting
// there (X, summing to its height H) among the subsets of all buffers starting
// there that sum to H, enumerated as piece_search.cc does (larger buffers
// first, then fewest buffers first; measurement only).
int Cuts(const memory::bench::PerfectPackingProblem& problem, const std::vector<std::vector<int32_t>>& tree,
         int64_t within_begin, int64_t within_end, const memory::internal::PieceSearchLimits& limits) {
  std::vector<memory::internal::PackingItem> items;
  for (const memory::TensorLifetime& t : problem.tensors) items.push_back(memory::internal::ItemOf(t));
  std::map<int64_t, std::vector<int32_t>> starting;
  for (int32_t i = 0; i < static_cast<int32_t>(items.size()); ++i) {
    if (items[i].alignment == 1) starting[items[i].begin].push_back(i);
  }
  for (auto& [t, list] : starting) {
    std::sort(list.begin(), list.end(), [&](int32_t a, int32_t b) {
      return items[a].size != items[b].size ? items[a].size > items[b].size : a < b;
    });
  }
  // All subsets (up to `cap`, within `max_nodes`) of `c` summing to `target`, each ascending.
  auto subsets = [&](const std::vector<int32_t>& c, uint64_t target, size_t cap, uint64_t max_nodes) {
    std::vector<std::vector<int32_t>> found = memory::internal::SubsetsWithSum(items, c, target, cap, max_nodes);
    for (auto& f : found) std::sort(f.begin(), f.end());
    return found;
  };
  std::set<std::vector<int32_t>> found_sets;
  for (const auto& piece : memory::internal::FindConstantPieces(items)) found_sets.insert(piece.members);
  size_t slices = 0, slices_found = 0, prefixes = 0, prefixes_found = 0;
  size_t pieces_seen = 0, pieces_closed = 0, pieces_found = 0;
  size_t closure_superset = 0, closure_union = 0, closure_to_end = 0;
  std::vector<size_t> closure_sizes;
  size_t closure_fails = 0, closure_slice = 0, closure_inside = 0, closure_other = 0;
  size_t cuts = 0, in16 = 0, in_big = 0, first = 0, solo = 0;
  std::vector<size_t> starters_n, x_n, first_n;
  for (const auto& piece : tree) {
    if (piece.size() < 100 || piece.size() > 1000) continue;
    int64_t t0 = INT64_MAX, t1 = 0;
    for (int32_t i : piece) t0 = std::min(t0, items[i].begin), t1 = std::max(t1, items[i].end);
    if (t0 < within_begin || t1 > within_end) continue;
    ++pieces_seen;
    {
      std::vector<int32_t> seed, sorted = piece;
      for (int32_t i : piece) {
        if (items[i].begin == t0) seed.push_back(i);
      }
      std::sort(sorted.begin(), sorted.end());
      pieces_closed += memory::internal::ClosureFrom(items, seed, limits) == sorted;
      pieces_found += found_sets.count(sorted);
    }
    std::map<int64_t, int> delta;  // members live across each point
    std::set<int64_t> starts;
    for (int32_t i : piece) {
      starts.insert(items[i].begin);
    }
    std::vector<int32_t> piece_sorted = piece;
    std::sort(piece_sorted.begin(), piece_sorted.end());
    std::vector<int64_t> cut_points = {t0};
    for (int64_t q : starts) {
      if (q == t0) continue;
      bool crossed = false;
      for (int32_t i : piece) crossed = crossed || (items[i].begin < q && items[i].end > q);
      if (!crossed) cut_points.push_back(q);
    }
    cut_points.push_back(t1);
    if (cut_points.size() > 2) {
      for (size_t k = 0; k + 1 < cut_points.size(); ++k) {
        std::vector<int32_t> slice, prefix;
        for (int32_t i : piece) {
          if (items[i].begin >= cut_points[k] && items[i].begin < cut_points[k + 1]) slice.push_back(i);
          if (items[i].begin < cut_points[k + 1]) prefix.push_back(i);
        }
        ++slices;
        slices_found += slice.size() >= 2 && found_sets.count(slice);
        std::vector<int32_t> seed;
        for (int32_t i : slice) {
          if (items[i].begin == cut_points[k]) seed.push_back(i);
        }
        const std::vector<int32_t> closure = memory::internal::ClosureFrom(items, seed, limits);
        if (closure.empty()) {
          ++closure_fails;
        } else if (closure == slice) {
          ++closure_slice;
        } else if (std::includes(piece_sorted.begin(), piece_sorted.end(), closure.begin(), closure.end())) {
          ++closure_inside;
          std::vector<int32_t> slice_sorted = slice;
          std::sort(slice_sorted.begin(), slice_sorted.end());
          if (std::includes(closure.begin(), closure.end(), slice_sorted.begin(), slice_sorted.end())) {
            ++closure_superset;
            bool union_of_slices = true;  // every member starting in a slice it touches
            int64_t reach = 0;
            for (int32_t i : closure) reach = std::max(reach, items[i].end);
            for (int32_t i : piece) {
              if (items[i].begin >= cut_points[k] && items[i].end <= reach) {
                union_of_slices = union_of_slices && std::binary_search(closure.begin(), closure.end(), i);
              }
            }
            closure_union += union_of_slices;
            closure_to_end += reach == t1;
          } else {
            closure_sizes.push_back(closure.size() * 100 / slice.size());
          }
        } else {
          ++closure_other;
        }
        if (k > 0) {
          ++prefixes;
          prefixes_found += found_sets.count(prefix);
        }
      }
    }
    for (int64_t q : starts) {
      if (q == t0) continue;
      bool crossed = false;
      std::vector<int32_t> x;
      for (int32_t i : piece) {
        if (items[i].begin < q && items[i].end > q) crossed = true;
        if (items[i].begin == q) x.push_back(i);
      }
      if (crossed) continue;
      std::sort(x.begin(), x.end());
      uint64_t h = 0;
      for (int32_t i : x) h += items[i].size;
      const std::vector<int32_t>& s = starting[q];
      ++cuts;
      starters_n.push_back(s.size());
      x_n.push_back(x.size());
      if (x.size() == s.size()) ++solo;
      const auto small = subsets(s, h, 16, 20000);
      const auto big = subsets(s, h, 100000, 20000000);
      if (!small.empty()) first_n.push_back(small[0].size());
      in16 += std::find(small.begin(), small.end(), x) != small.end();
      in_big += std::find(big.begin(), big.end(), x) != big.end();
      first += !small.empty() && small[0] == x;
    }
  }
  auto median = [](std::vector<size_t> v) {
    if (v.empty()) return size_t{0};
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  std::printf("tree pieces of 100-1000 buffers: %zu time cuts inside them; starters there median %zu, the piece's "
              "own median %zu (all of them at %zu cuts); the first subset's buffers median %zu; the piece's own set is "
              "the first subset at %zu, among the first 16 at %zu, among up to 100,000 at %zu\n",
              cuts, median(starters_n), median(x_n), solo, median(first_n), first, in16, in_big);
  std::printf("their slices between cuts: %zu, found by the piece search %zu; their prefixes (first slices chained) "
              "%zu, found %zu\n", slices, slices_found, prefixes, prefixes_found);
  std::printf("the closure from a slice's starters: the slice %zu, another set inside the piece %zu, a set reaching "
              "outside it %zu, no closure %zu\n", closure_slice, closure_inside, closure_other, closure_fails);
  std::sort(closure_sizes.begin(), closure_sizes.end());
  std::printf("pieces %zu: the closure from its starters is the piece %zu; found by the search %zu\n", pieces_seen,
              pieces_closed, pieces_found);
  std::printf("  inside: holding the slice %zu (consecutive slices %zu, to the piece's end %zu); the others' size, "
              "%% of the slice: median %zu\n", closure_superset, closure_union, closure_to_end,
              closure_sizes.empty() ? size_t{0} : closure_sizes[closure_sizes.size() / 2]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int buffers = 10000;
  uint32_t seed = 2;
  uint64_t capacity = uint64_t{1} << 20;
  int32_t steps = 100000;
  size_t min_buffers = 100;
  long export_index = -1;
  std::string export_path, merge_path, layout_path;
  bool find = false, cuts = false;
  int64_t within_begin = 0, within_end = INT64_MAX;
  memory::internal::PieceSearchLimits limits;  // --cuts' closures
  std::vector<long> merge;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--export" && i + 2 < argc) {
      export_index = std::atol(argv[++i]);
      export_path = argv[++i];
    } else if (flag == "--merge" && i + 2 < argc) {
      std::stringstream list(argv[++i]);
      for (std::string k; std::getline(list, k, ',');) merge.push_back(std::atol(k.c_str()));
      merge_path = argv[++i];
    } else if (flag == "--find") {
      find = true;
    } else if (flag == "--cuts") {
      cuts = true;
    } else if (flag == "--closure-nodes" && i + 1 < argc) {
      limits.closure_nodes = std::strtoull(argv[++i], nullptr, 10);
    } else if (flag == "--within" && i + 2 < argc) {
      within_begin = std::atol(argv[++i]);
      within_end = std::atol(argv[++i]);
    } else if (flag == "--layout" && i + 1 < argc) {
      layout_path = argv[++i];
    } else if (flag == "--buffers" && i + 1 < argc) {
      buffers = std::atoi(argv[++i]);
    } else if (flag == "--seed" && i + 1 < argc) {
      seed = static_cast<uint32_t>(std::atoi(argv[++i]));
    } else if (flag == "--capacity" && i + 1 < argc) {
      capacity = std::strtoull(argv[++i], nullptr, 10);
    } else if (flag == "--steps" && i + 1 < argc) {
      steps = std::atoi(argv[++i]);
    } else if (flag == "--min-buffers" && i + 1 < argc) {
      min_buffers = static_cast<size_t>(std::atol(argv[++i]));
    } else {
      std::fprintf(stderr,
                   "usage: %s [--buffers N] [--seed S] [--capacity BYTES] [--steps N] [--min-buffers N] "
                   "[--export K PATH] [--merge K1,K2,... PATH] [--layout PATH] [--find] "
                   "[--cuts [--within T0 T1] [--closure-nodes N]]\n",
                   argv[0]);
      return 2;
    }
  }
  const memory::bench::PerfectPackingProblem problem =
      memory::bench::PerfectPackingWithLayout(buffers, seed, capacity, steps);
  if (!layout_path.empty()) {
    auto csv = memory::FormatBufferCsv(problem.tensors, &problem.offsets);
    if (!csv.ok()) {
      std::fprintf(stderr, "%s\n", csv.status().ToString().c_str());
      return 1;
    }
    std::ofstream(layout_path) << *csv;
  }
  Piece all;
  for (int32_t i = 0; i < static_cast<int32_t>(problem.tensors.size()); ++i) all.buffers.push_back(i);
  std::map<long, std::vector<int32_t>> wanted;
  if (export_index >= 0) wanted[export_index];
  for (long k : merge) wanted[k];
  Tree tree(problem);
  tree.Walk(std::move(all), std::max<size_t>(min_buffers, 1), &wanted);
  if (find) return FindPieces(problem, tree.all_pieces_);
  if (cuts) return Cuts(problem, tree.all_pieces_, within_begin, within_end, limits);
  if (!merge.empty()) {
    // Pieces in tree order (a piece's parent comes before it), so a piece
    // inside one already merged is skipped.
    std::sort(merge.begin(), merge.end());
    std::vector<char> merged(problem.tensors.size(), 0);
    std::vector<memory::TensorLifetime> out;
    size_t pieces = 0;
    for (long k : merge) {
      const std::vector<int32_t>& piece = wanted[k];
      if (piece.empty()) {
        std::fprintf(stderr, "no piece %ld of at least %zu buffers\n", k, min_buffers);
        return 1;
      }
      if (merged[piece[0]]) continue;
      memory::TensorLifetime rect = problem.tensors[piece[0]];
      uint64_t b0 = UINT64_MAX, b1 = 0;
      for (int32_t i : piece) {
        merged[i] = 1;
        rect.first_use = std::min(rect.first_use, problem.tensors[i].first_use);
        rect.last_use = std::max(rect.last_use, problem.tensors[i].last_use);
        b0 = std::min(b0, problem.offsets[i]);
        b1 = std::max(b1, problem.offsets[i] + problem.tensors[i].size);
      }
      rect.size = b1 - b0;
      rect.name = "piece" + std::to_string(k);
      out.push_back(rect);
      ++pieces;
    }
    size_t kept = 0;
    for (size_t i = 0; i < problem.tensors.size(); ++i) {
      if (merged[i]) continue;
      out.push_back(problem.tensors[i]);
      out.back().name = std::to_string(i);
      ++kept;
    }
    auto csv = memory::FormatBufferCsv(out, nullptr);
    if (!csv.ok()) {
      std::fprintf(stderr, "%s\n", csv.status().ToString().c_str());
      return 1;
    }
    std::ofstream(merge_path) << *csv;
    std::printf("%zu pieces (%zu buffers) merged, %zu buffers kept: %zu written to %s\n", pieces,
                problem.tensors.size() - kept, kept, out.size(), merge_path.c_str());
  }
  if (export_index >= 0) {
    const std::vector<int32_t>& exported = wanted[export_index];
    if (exported.empty()) {
      std::fprintf(stderr, "no piece %ld of at least %zu buffers\n", export_index, min_buffers);
      return 1;
    }
    std::vector<int32_t> sorted = exported;
    std::sort(sorted.begin(), sorted.end());
    std::vector<memory::TensorLifetime> part;
    for (int32_t i : sorted) part.push_back(problem.tensors[i]);
    auto csv = memory::FormatBufferCsv(part, nullptr);
    if (!csv.ok()) {
      std::fprintf(stderr, "%s\n", csv.status().ToString().c_str());
      return 1;
    }
    std::ofstream(export_path) << *csv;
    std::printf("piece %ld: %zu buffers written to %s\n", export_index, part.size(), export_path.c_str());
  }
  return 0;
}
