// compiler/ops/row_reference.cc — see row_reference.h.
#include "compiler/ops/row_reference.h"

namespace keel::ops {

std::vector<std::vector<int64_t>> RowOffsets(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes) {
  std::vector<bool> reduced(shape.size(), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  int64_t rows = 1, total = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    total *= shape[d];
    if (!reduced[d]) rows *= shape[d];
  }
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(rows));
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t row = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!reduced[d]) row = row * shape[d] + idx[d];
    out[static_cast<size_t>(row)].push_back(i);
    for (size_t d = shape.size(); d-- > 0;) {  // next index, row-major
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace keel::ops
