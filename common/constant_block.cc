// common/constant_block.cc — the device constant block's layout (see the header).
#include "common/constant_block.h"

#include <algorithm>
#include <numeric>

namespace keel::common {
namespace {

uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The largest power of two dividing v, capped at the block alignment (0 divides by all).
uint64_t AlignmentOf(uint64_t v) { return v == 0 ? kDeviceConstantAlignment : std::min(v & (~v + 1), kDeviceConstantAlignment); }

}  // namespace

ConstantBlockLayout LayOutConstantBlock(std::span<const ConstantSpan> spans) {
  ConstantBlockLayout out;
  out.offset.assign(spans.size(), 0);
  std::vector<size_t> order(spans.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return spans[a].offset < spans[b].offset; });

  bool open = false;            // a run is being extended
  uint64_t run_src = 0;         // where the current run starts in the data segment
  uint64_t run_end = 0;         // and ends
  uint64_t run_dst = 0;         // where it starts in the block
  auto close_run = [&] {
    if (open && run_end > run_src) out.copies.push_back({run_src, run_dst, run_end - run_src});
    if (open) out.bytes = std::max(out.bytes, run_dst + (run_end - run_src));
    open = false;
  };
  for (size_t i : order) {
    const ConstantSpan& s = spans[i];
    // Join the run when only padding separates them (less than one alignment unit)
    // and the constant keeps the alignment it has in the file; overlapping spans
    // (shared bytes) always join, so they stay shared.
    const bool joins = open && (s.offset < run_end || (s.offset - run_end < kDeviceConstantAlignment &&
                                                       AlignmentOf(s.offset - run_src) >= AlignmentOf(s.offset)));
    if (!joins) {
      close_run();
      open = true;
      run_src = s.offset;
      run_end = s.offset;
      run_dst = AlignUp(out.bytes, kDeviceConstantAlignment);
    }
    out.offset[i] = run_dst + (s.offset - run_src);
    run_end = std::max(run_end, s.offset + s.size);
  }
  close_run();
  return out;
}

}  // namespace keel::common
