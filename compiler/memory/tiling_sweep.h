// compiler/memory/tiling_sweep.h — a layout of a problem without slack, built
// in time order with the byte order of the live buffers left open (a PQ-tree)
// until the buffers' ends decide it.
//
// Problem: that of skyline_search.h, where the live bytes are the same, C, at
// every step from the first start to the last end (no slack: every generated
// perfect packing, and the strip of tiny buffers that holds up the
// 10,000-buffer problem of seed 2, docs/MEMORY_PLANNING.md). A layout within
// C then tiles [0, C) exactly at every step.
//
// Why: in such a layout, the buffers ending at a time point free bytes that
// the buffers starting there must fill exactly, and the layout within C is a
// byte order of the live buffers at every step that is consistent over time.
// A sweep that fixes offsets as buffers start (tried: the choice among
// hundreds of same-time starters) goes wrong at once and learns of it only
// many time points later; the searches over offsets thrash on thousands of
// buffers of a few bytes and steps. But the ends need not be guessed: a set
// of buffers ending together must be consecutive in the byte order (when
// they free one gap), and the buffers starting there take exactly their
// place, in any order. That is the consecutive-ones problem, and a PQ-tree
// (Booth and Lueker, 1976) holds every byte order that satisfies all such
// constraints so far, so no order is fixed before an end needs it.
//
// Method. Sweep the time points in order. The tree's leaves are the live
// buffers (its frontier a byte order from 0 up). At a time point, the
// buffers ending there are made consecutive (the tree's reduction); their run
// is frozen in the order the tree then lists it and replaced, at its place,
// by one P-node of the buffers starting there (their total is the run's: no
// slack). Where the enders cannot be made consecutive (two or more gaps at
// one time point), they are split in runs whose sums parts of the starters
// match, each tried on a copy of the tree. A time point where the enders
// could be one run but might be several is a choice point; when a later one
// has no option left, the search backjumps to the latest choice point among
// the time points that started the items it could not place, within a work
// budget. Offsets come last, backwards in time: a frozen run starts where
// its replacement's lowest buffer does, turned like the Q-node it was part
// of (a sibling's side tells).
//
// Result: the layout at C (optimal) or nothing: problems with slack, with
// alignments other than 1, or whose constraints the search does not meet
// within its budget return an empty layout. The layout is checked before it
// is returned. Deterministic.
//
// Status (2026-11-27): an experiment, not used by any planner. It tiles the
// generated perfect packings of 300 buffers (3 of 3) and 1,000 (2 of 3) in
// milliseconds, none from 3,000 on, and none of the dense strips: there
// nearly every time point has two to ten gaps (sums of crumbs match by
// chance), and a wrong split or a wrong "one run" is refuted only many time
// points later. docs/MEMORY_PLANNING.md has the numbers.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/memory/skyline_search.h"

namespace keel::memory::internal {

struct TilingResult {
  std::vector<uint64_t> offsets;  // empty: no layout within the live bytes
  // Diagnostics: the time point where the sweep gave up (-1: it did not).
  int64_t failed_at = -1;
};

TilingResult TileWithoutSlack(const std::vector<PackingItem>& items);

}  // namespace keel::memory::internal
