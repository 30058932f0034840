// common/conv_geometry.cc — see conv_geometry.h.
#include "common/conv_geometry.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace keel::common {
namespace {

std::string DimsText(const std::vector<int64_t>& dims) {
  std::string r = "[";
  for (size_t i = 0; i < dims.size(); ++i) r += (i ? "," : "") + std::to_string(dims[i]);
  return r + "]";
}

Status Bad(const std::string& what) { return InvalidExecutable(what); }

}  // namespace

int64_t CudnnConvGeometry::spatial_size() const {
  int64_t s = 1;
  for (size_t i = 2; i < y.size(); ++i) s *= y[i];
  return s;
}

size_t ConvSpatialDims(size_t x_rank) { return x_rank >= 3 && x_rank <= 5 ? x_rank - 2 : 0; }

Result<CudnnConvGeometry> MakeCudnnConvGeometry(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                                const std::vector<int64_t>& y, const std::vector<int64_t>& pads,
                                                const std::vector<int64_t>& strides,
                                                const std::vector<int64_t>& dilations, int64_t group) {
  const size_t k = ConvSpatialDims(x.size());
  if (k == 0) return Bad("X must have 1 to 3 spatial dims (rank 3 to 5), got " + DimsText(x));
  if (w.size() != x.size() || y.size() != x.size()) {
    return Bad("X " + DimsText(x) + ", W " + DimsText(w) + " and Y " + DimsText(y) + " must have the same rank");
  }
  for (const std::vector<int64_t>* s : {&x, &w, &y}) {
    for (int64_t d : *s) {
      if (d < 1 || d > INT32_MAX) return Bad("shape " + DimsText(*s) + " has a dimension outside [1, 2^31)");
    }
  }
  if (pads.size() != 2 * k || strides.size() != k || dilations.size() != k) {
    return Bad("a " + std::to_string(k) + "-D convolution needs " + std::to_string(2 * k) + " pads, " +
               std::to_string(k) + " strides and " + std::to_string(k) + " dilations, got pads " + DimsText(pads) +
               ", strides " + DimsText(strides) + ", dilations " + DimsText(dilations));
  }
  for (size_t i = 0; i < k; ++i) {
    if (pads[i] < 0 || pads[i + k] < 0 || pads[i] > INT32_MAX || pads[i + k] > INT32_MAX) {
      return Bad("pads " + DimsText(pads) + " must be in [0, 2^31)");
    }
    if (strides[i] < 1 || strides[i] > INT32_MAX || dilations[i] < 1 || dilations[i] > INT32_MAX) {
      return Bad("strides " + DimsText(strides) + " and dilations " + DimsText(dilations) + " must be in [1, 2^31)");
    }
  }
  if (group < 1 || group > INT32_MAX || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1] ||
      w[0] != y[1] || x[0] != y[0]) {
    return Bad("X " + DimsText(x) + ", W " + DimsText(w) + ", Y " + DimsText(y) + " do not match group " +
               std::to_string(group));
  }
  for (const std::vector<int64_t>* s : {&x, &w, &y}) {
    int64_t elements = 1;
    for (int64_t d : *s) elements = elements > INT32_MAX ? elements : elements * d;
    if (elements > INT32_MAX) {
      return Unsupported("tensor " + DimsText(*s) + " has 2^31 elements or more (cuDNN's strides are int32)");
    }
  }
  for (size_t i = 0; i < k; ++i) {
    if (pads[i] != pads[i + k]) {
      return Unsupported("asymmetric pads " + DimsText(pads) + " (cuDNN pads both ends alike; pad explicitly)");
    }
  }
  for (size_t i = 0; i < k; ++i) {
    const int64_t span = x[2 + i] + pads[i] + pads[i + k] - dilations[i] * (w[2 + i] - 1) - 1;
    if (span < 0 || span / strides[i] + 1 != y[2 + i]) {
      return Bad("Y is " + DimsText(y) + " but X " + DimsText(x) + ", W " + DimsText(w) + ", pads " +
                 DimsText(pads) + ", strides " + DimsText(strides) + ", dilations " + DimsText(dilations) +
                 " give spatial dim " + std::to_string(i) + " = " +
                 (span < 0 ? std::string("nothing") : std::to_string(span / strides[i] + 1)));
    }
  }
  CudnnConvGeometry g;
  g.spatial = k;
  g.x = x;
  g.w = w;
  g.y = y;
  g.pads.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(k));
  g.strides = strides;
  g.dilations = dilations;
  g.group = group;
  if (k == 1) {  // a unit height: cuDNN convolves 2-D and 3-D problems only
    for (std::vector<int64_t>* s : {&g.x, &g.w, &g.y}) s->insert(s->begin() + 2, 1);
    g.pads.insert(g.pads.begin(), 0);
    g.strides.insert(g.strides.begin(), 1);
    g.dilations.insert(g.dilations.begin(), 1);
  }
  return g;
}

Result<CudnnConvGeometry> MakeCudnnConvTransposeGeometry(const std::vector<int64_t>& x, const std::vector<int64_t>& w,
                                                         const std::vector<int64_t>& y, const std::vector<int64_t>& pads,
                                                         const std::vector<int64_t>& strides,
                                                         const std::vector<int64_t>& dilations, int64_t group) {
  Result<CudnnConvGeometry> g = MakeCudnnConvGeometry(y, w, x, pads, strides, dilations, group);
  if (!g.ok()) return g.status().WithContext("checked as its forward convolution, X and Y exchanged");
  return g;
}

std::vector<int64_t> ChannelsFirstShape(const std::vector<int64_t>& channels_last) {
  std::vector<int64_t> s = channels_last;
  if (s.size() >= 3) std::rotate(s.begin() + 1, s.end() - 1, s.end());
  return s;
}

}  // namespace keel::common
