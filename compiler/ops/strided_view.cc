// compiler/ops/strided_view.cc — see strided_view.h.
#include "compiler/ops/strided_view.h"

#include <algorithm>
#include <deque>
#include <set>

namespace keel::ops {
namespace {

// The factors of `dims` in row-major order without extent-1 ones, adjacent
// factors that nest (outer stride = inner extent * inner stride) merged.
std::deque<ViewFactor> Atoms(const std::vector<std::vector<ViewFactor>>& dims) {
  std::deque<ViewFactor> atoms;
  for (const auto& d : dims) {
    for (const ViewFactor& f : d) {
      if (f.extent == 1) continue;
      if (!atoms.empty() && atoms.back().stride == f.extent * f.stride) {
        atoms.back() = {atoms.back().extent * f.extent, f.stride};
      } else {
        atoms.push_back(f);
      }
    }
  }
  return atoms;
}

// Takes factors with product `extent` from the front of `atoms`, splitting the
// last one when it is larger (its outer part goes, its inner part stays).
std::optional<std::vector<ViewFactor>> TakeExtent(std::deque<ViewFactor>& atoms, int64_t extent) {
  if (extent == 1) return std::vector<ViewFactor>{{1, 0}};
  std::vector<ViewFactor> out;
  int64_t need = extent;
  while (need > 1) {
    if (atoms.empty()) return std::nullopt;
    const ViewFactor a = atoms.front();
    if (need % a.extent == 0) {
      out.push_back(a);
      need /= a.extent;
      atoms.pop_front();
    } else if (a.extent % need == 0) {
      out.push_back({need, a.stride * (a.extent / need)});
      atoms.front() = {a.extent / need, a.stride};
      need = 1;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

int64_t Product(const std::vector<ViewFactor>& d) {
  int64_t p = 1;
  for (const ViewFactor& f : d) p *= f.extent;
  return p;
}

}  // namespace

std::vector<int64_t> StridedView::Shape() const {
  std::vector<int64_t> s;
  for (const auto& d : dims) s.push_back(Product(d));
  return s;
}

int64_t StridedView::ElementOffset(const std::vector<int64_t>& idx) const {
  int64_t off = offset;
  for (size_t d = 0; d < dims.size(); ++d) {
    int64_t rest = idx[d];
    for (size_t f = dims[d].size(); f-- > 0;) {
      off += (rest % dims[d][f].extent) * dims[d][f].stride;
      rest /= dims[d][f].extent;
    }
  }
  return off;
}

StridedView DenseView(const std::vector<int64_t>& shape) {
  StridedView v;
  v.dims.resize(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    v.dims[d] = {{shape[d], shape[d] == 1 ? 0 : stride}};
    stride *= shape[d];
  }
  return v;
}

std::optional<StridedView> PermuteView(const StridedView& v, const std::vector<int64_t>& perm) {
  if (perm.size() != v.dims.size()) return std::nullopt;
  StridedView out;
  out.offset = v.offset;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(v.dims.size())) return std::nullopt;
    out.dims.push_back(v.dims[static_cast<size_t>(p)]);
  }
  return out;
}

std::optional<StridedView> SliceView(const StridedView& v, int64_t axis, int64_t start, int64_t len, int64_t step) {
  if (axis < 0 || axis >= static_cast<int64_t>(v.dims.size()) || len < 0) return std::nullopt;
  const std::vector<ViewFactor>& d = v.dims[static_cast<size_t>(axis)];
  const int64_t extent = Product(d);
  if (start == 0 && step == 1 && len == extent) return v;
  std::vector<ViewFactor> nontrivial;
  for (const ViewFactor& f : d)
    if (f.extent != 1) nontrivial.push_back(f);
  if (nontrivial.size() > 1) return std::nullopt;  // a slice of merged axes is not one stride
  const int64_t stride = nontrivial.empty() ? 0 : nontrivial[0].stride;
  StridedView out = v;
  out.offset += start * stride;
  out.dims[static_cast<size_t>(axis)] = {{len, len == 1 ? 0 : stride * step}};
  return out;
}

std::optional<StridedView> ReshapeView(const StridedView& v, const std::vector<int64_t>& shape) {
  int64_t in = 1, want = 1;
  for (int64_t e : v.Shape()) in *= e;
  for (int64_t e : shape) want *= e;
  if (in != want || in == 0) return std::nullopt;
  std::deque<ViewFactor> atoms = Atoms(v.dims);
  StridedView out;
  out.offset = v.offset;
  for (int64_t e : shape) {
    std::optional<std::vector<ViewFactor>> d = TakeExtent(atoms, e);
    if (!d) return std::nullopt;
    out.dims.push_back(std::move(*d));
  }
  if (!atoms.empty()) return std::nullopt;
  return out;
}

std::optional<StridedView> BroadcastView(const StridedView& v, const std::vector<int64_t>& shape) {
  if (v.dims.size() > shape.size()) return std::nullopt;
  StridedView out;
  out.offset = v.offset;
  const size_t lead = shape.size() - v.dims.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < lead) {
      out.dims.push_back({{shape[d], 0}});
      continue;
    }
    const std::vector<ViewFactor>& src = v.dims[d - lead];
    const int64_t extent = Product(src);
    if (extent == shape[d]) {
      out.dims.push_back(src);
    } else if (extent == 1) {
      out.dims.push_back({{shape[d], 0}});
    } else {
      return std::nullopt;
    }
  }
  return out;
}

std::optional<std::vector<ViewFactor>> RefineFactors(const std::vector<ViewFactor>& factors,
                                                     const std::vector<int64_t>& extents) {
  std::deque<ViewFactor> atoms;
  for (const ViewFactor& f : factors)
    if (f.extent != 1) atoms.push_back(f);  // not merged: the strides stay per factor
  std::vector<ViewFactor> out;
  for (int64_t e : extents) {
    std::optional<std::vector<ViewFactor>> d = TakeExtent(atoms, e);
    if (!d) return std::nullopt;
    if (d->size() > 1) {
      // A target extent spanning several of `factors` must be one stride.
      for (size_t i = 0; i + 1 < d->size(); ++i) {
        if ((*d)[i].stride != (*d)[i + 1].extent * (*d)[i + 1].stride) return std::nullopt;
      }
      d = std::vector<ViewFactor>{{e, d->back().stride}};
    }
    out.push_back(d->front());
  }
  if (!atoms.empty()) return std::nullopt;
  return out;
}

std::optional<std::vector<int64_t>> CommonRefinement(const std::vector<std::vector<int64_t>>& factorizations) {
  std::optional<int64_t> total;
  std::set<int64_t> bounds;  // products of the inner factors
  for (const std::vector<int64_t>& f : factorizations) {
    int64_t p = 1;
    for (size_t i = f.size(); i-- > 0;) {
      if (f[i] < 1) return std::nullopt;
      p *= f[i];
      bounds.insert(p);
    }
    if (total && *total != p) return std::nullopt;
    total = p;
  }
  if (!total) return std::nullopt;
  std::vector<int64_t> inner_first;
  int64_t prev = 1;
  for (int64_t b : bounds) {
    if (b == 1) continue;
    if (b % prev != 0) return std::nullopt;
    inner_first.push_back(b / prev);
    prev = b;
  }
  if (inner_first.empty()) inner_first.push_back(1);
  std::reverse(inner_first.begin(), inner_first.end());
  return inner_first;
}

}  // namespace keel::ops
