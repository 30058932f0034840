// compiler/ops/row_reference.h — the reference evaluators' view of a tensor as
// rows (the reduction family: Reduce*, ArgMax/ArgMin, Softmax/LogSoftmax/
// Hardmax, CumSum, TopK; internal to compiler/ops).
//
// A row is one combination of the kept (not reduced) dimensions; rows are
// numbered row-major over the kept dimensions, which is also the flat index of
// the row's element in a reduced output (with or without keepdims). Each row
// lists the flat offsets of its elements, row-major over the reduced dimensions.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/graph.h"

namespace keel::ops {

// `axes` non-negative and < rank.
std::vector<std::vector<int64_t>> RowOffsets(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes);

}  // namespace keel::ops
