// compiler/ir/reference_eval.cc — naive reference implementations of every IR op
// (see reference_eval.h). Clarity over speed: plain loops over flat indices,
// double-precision math, dtype conversion only at the boundaries.
#include "compiler/ir/reference_eval.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "compiler/ir/type_inference.h"

namespace keel::ir {
namespace {

// A tensor as the evaluator sees it: its type and its values as doubles.
struct Buf {
  TensorType type;
  std::vector<double> v;
  const std::vector<int64_t>& shape() const { return type.shape; }
};

std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) {
    s[static_cast<size_t>(i)] = s[static_cast<size_t>(i) + 1] * shape[static_cast<size_t>(i) + 1];
  }
  return s;
}

// Strides of `in` aligned to an output of rank `out_rank` under numpy
// broadcasting: broadcast dimensions get stride 0.
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& in, size_t out_rank) {
  std::vector<int64_t> st = Strides(in);
  std::vector<int64_t> out(out_rank, 0);
  size_t off = out_rank - in.size();
  for (size_t i = 0; i < in.size(); ++i) out[off + i] = in[i] == 1 ? 0 : st[i];
  return out;
}

// Offset into a broadcast input for flat output index `idx`.
int64_t BroadcastOffset(int64_t idx, const std::vector<int64_t>& out_shape, const std::vector<int64_t>& in_strides) {
  int64_t off = 0;
  for (int64_t d = static_cast<int64_t>(out_shape.size()) - 1; d >= 0; --d) {
    int64_t dim = out_shape[static_cast<size_t>(d)];
    off += (idx % dim) * in_strides[static_cast<size_t>(d)];
    idx /= dim;
  }
  return off;
}

bool IsIntegral(DType d) { return d != DType::kF32 && d != DType::kF64 && d != DType::kF16 && d != DType::kBF16; }

Status Err(const Node& n, const std::string& m) { return InvalidArgument(NodeDescription(n) + ": " + m); }

double Unary(const std::string& op, double x, const Attributes& a) {
  if (op == "Relu") return x > 0 ? x : 0.0;
  if (op == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (op == "Tanh") return std::tanh(x);
  if (op == "Erf") return std::erf(x);
  if (op == "Sqrt") return std::sqrt(x);
  if (op == "Neg") return -x;
  if (op == "Exp") return std::exp(x);
  if (op == "Clip") {
    double lo = *a.GetFloat("min", -std::numeric_limits<double>::infinity());
    double hi = *a.GetFloat("max", std::numeric_limits<double>::infinity());
    return std::min(std::max(x, lo), hi);
  }
  return x;  // Identity, Dropout, Cast (conversion happens at the boundary)
}

double Binary(const std::string& op, double x, double y, bool integral) {
  if (op == "Add") return x + y;
  if (op == "Sub") return x - y;
  if (op == "Mul") return x * y;
  if (op == "Div") {
    if (integral) return y == 0 ? 0 : std::trunc(x / y);
    return x / y;
  }
  return std::pow(x, y);  // Pow
}

// Window ops work on up to 3 spatial dims by padding shapes/attrs to 3-D.
struct Window {
  int64_t n, c, in[3], out[3], k[3], s[3], pb[3], pe[3], d[3];
};

Window MakeWindow(const std::vector<int64_t>& x, const std::vector<int64_t>& y, const Attributes& a) {
  Window w{};
  size_t sp = x.size() - 2;
  auto kernel = *a.GetInts("kernel_shape", {});
  auto strides = *a.GetInts("strides", std::vector<int64_t>(sp, 1));
  auto pads = *a.GetInts("pads", std::vector<int64_t>(2 * sp, 0));
  auto dil = *a.GetInts("dilations", std::vector<int64_t>(sp, 1));
  w.n = x[0];
  w.c = x[1];
  for (size_t i = 0; i < 3; ++i) {
    size_t off = 3 - sp;  // missing leading spatial dims are size 1
    if (i < off) {
      w.in[i] = w.out[i] = w.k[i] = w.s[i] = w.d[i] = 1;
      w.pb[i] = w.pe[i] = 0;
    } else {
      size_t j = i - off;
      w.in[i] = x[2 + j];
      w.out[i] = y[2 + j];
      w.k[i] = j < kernel.size() ? kernel[j] : 1;
      w.s[i] = strides[j];
      w.d[i] = dil[j];
      w.pb[i] = pads[j];
      w.pe[i] = pads[j + sp];
    }
  }
  return w;
}

Result<Buf> EvalConv(const Node& node, const std::vector<const Buf*>& in, const TensorType& out_type) {
  const Buf& x = *in[0];
  const Buf& wt = *in[1];
  const Buf* bias = in.size() > 2 ? in[2] : nullptr;
  Attributes attrs = node.attrs();
  if (!attrs.Has("kernel_shape")) {
    attrs.Set("kernel_shape", std::vector<int64_t>(wt.shape().begin() + 2, wt.shape().end()));
  }
  Window w = MakeWindow(x.shape(), out_type.shape, attrs);
  int64_t group = *attrs.GetInt("group", 1);
  int64_t m = wt.shape()[0];
  int64_t cin_g = wt.shape()[1];
  int64_t m_g = m / group;
  Buf y{out_type, std::vector<double>(static_cast<size_t>(out_type.NumElements()), 0.0)};
  int64_t kvol = w.k[0] * w.k[1] * w.k[2];
  int64_t ivol = w.in[0] * w.in[1] * w.in[2];
  size_t yi = 0;
  for (int64_t n = 0; n < w.n; ++n) {
    for (int64_t oc = 0; oc < m; ++oc) {
      int64_t g = oc / m_g;
      for (int64_t o0 = 0; o0 < w.out[0]; ++o0) {
        for (int64_t o1 = 0; o1 < w.out[1]; ++o1) {
          for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
            double acc = bias ? bias->v[static_cast<size_t>(oc)] : 0.0;
            for (int64_t ic = 0; ic < cin_g; ++ic) {
              int64_t c = g * cin_g + ic;
              const double* xin = &x.v[static_cast<size_t>((n * w.c + c) * ivol)];
              const double* wk = &wt.v[static_cast<size_t>((oc * cin_g + ic) * kvol)];
              for (int64_t k0 = 0; k0 < w.k[0]; ++k0) {
                int64_t i0 = o0 * w.s[0] - w.pb[0] + k0 * w.d[0];
                if (i0 < 0 || i0 >= w.in[0]) continue;
                for (int64_t k1 = 0; k1 < w.k[1]; ++k1) {
                  int64_t i1 = o1 * w.s[1] - w.pb[1] + k1 * w.d[1];
                  if (i1 < 0 || i1 >= w.in[1]) continue;
                  for (int64_t k2 = 0; k2 < w.k[2]; ++k2) {
                    int64_t i2 = o2 * w.s[2] - w.pb[2] + k2 * w.d[2];
                    if (i2 < 0 || i2 >= w.in[2]) continue;
                    acc += xin[(i0 * w.in[1] + i1) * w.in[2] + i2] * wk[(k0 * w.k[1] + k1) * w.k[2] + k2];
                  }
                }
              }
            }
            y.v[yi++] = acc;
          }
        }
      }
    }
  }
  return y;
}

Result<Buf> EvalPool(const Node& node, const Buf& x, const TensorType& out_type) {
  const bool is_max = node.op_type() == "MaxPool";
  Window w = MakeWindow(x.shape(), out_type.shape, node.attrs());
  const bool include_pad = *node.attrs().GetInt("count_include_pad", 0) != 0;
  Buf y{out_type, std::vector<double>(static_cast<size_t>(out_type.NumElements()), 0.0)};
  int64_t ivol = w.in[0] * w.in[1] * w.in[2];
  size_t yi = 0;
  for (int64_t nc = 0; nc < w.n * w.c; ++nc) {
    const double* xin = &x.v[static_cast<size_t>(nc * ivol)];
    for (int64_t o0 = 0; o0 < w.out[0]; ++o0) {
      for (int64_t o1 = 0; o1 < w.out[1]; ++o1) {
        for (int64_t o2 = 0; o2 < w.out[2]; ++o2) {
          double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
          int64_t count = 0;
          for (int64_t k0 = 0; k0 < w.k[0]; ++k0) {
            int64_t i0 = o0 * w.s[0] - w.pb[0] + k0 * w.d[0];
            for (int64_t k1 = 0; k1 < w.k[1]; ++k1) {
              int64_t i1 = o1 * w.s[1] - w.pb[1] + k1 * w.d[1];
              for (int64_t k2 = 0; k2 < w.k[2]; ++k2) {
                int64_t i2 = o2 * w.s[2] - w.pb[2] + k2 * w.d[2];
                bool inside = i0 >= 0 && i0 < w.in[0] && i1 >= 0 && i1 < w.in[1] && i2 >= 0 && i2 < w.in[2];
                // Padding positions count for count_include_pad; positions past the
                // end padding (ceil_mode) never do.
                bool in_padded = i0 < w.in[0] + w.pe[0] && i1 < w.in[1] + w.pe[1] && i2 < w.in[2] + w.pe[2];
                if (inside) {
                  double v = xin[(i0 * w.in[1] + i1) * w.in[2] + i2];
                  acc = is_max ? std::max(acc, v) : acc + v;
                  ++count;
                } else if (include_pad && in_padded) {
                  ++count;
                }
              }
            }
          }
          y.v[yi++] = is_max ? acc : (count ? acc / static_cast<double>(count) : 0.0);
        }
      }
    }
  }
  return y;
}

Result<Buf> EvalMatMul(const Buf& a, const Buf& b, const TensorType& out_type) {
  std::vector<int64_t> sa = a.shape(), sb = b.shape();
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  std::vector<int64_t> batch = *BroadcastShapes(ba, bb);
  std::vector<int64_t> sta = BroadcastStrides(ba, batch.size()), stb = BroadcastStrides(bb, batch.size());
  int64_t nbatch = 1;
  for (int64_t d : batch) nbatch *= d;
  Buf y{out_type, std::vector<double>(static_cast<size_t>(nbatch * m * n), 0.0)};
  for (int64_t bi = 0; bi < nbatch; ++bi) {
    const double* pa = &a.v[static_cast<size_t>(BroadcastOffset(bi, batch, sta) * m * k)];
    const double* pb = &b.v[static_cast<size_t>(BroadcastOffset(bi, batch, stb) * k * n)];
    double* py = &y.v[static_cast<size_t>(bi * m * n)];
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += pa[i * k + p] * pb[p * n + j];
        py[i * n + j] = acc;
      }
    }
  }
  return y;
}

Result<Buf> EvalGemm(const Node& node, const std::vector<const Buf*>& in, const TensorType& out_type) {
  const Buf& a = *in[0];
  const Buf& b = *in[1];
  const Buf* c = in.size() > 2 ? in[2] : nullptr;
  double alpha = *node.attrs().GetFloat("alpha", 1.0), beta = *node.attrs().GetFloat("beta", 1.0);
  bool ta = *node.attrs().GetInt("transA", 0) != 0, tb = *node.attrs().GetInt("transB", 0) != 0;
  int64_t m = out_type.shape[0], n = out_type.shape[1];
  int64_t k = ta ? a.shape()[0] : a.shape()[1];
  Buf y{out_type, std::vector<double>(static_cast<size_t>(m * n), 0.0)};
  std::vector<int64_t> stc = c ? BroadcastStrides(c->shape(), 2) : std::vector<int64_t>{};
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) {
        double av = ta ? a.v[static_cast<size_t>(p * m + i)] : a.v[static_cast<size_t>(i * k + p)];
        double bv = tb ? b.v[static_cast<size_t>(j * k + p)] : b.v[static_cast<size_t>(p * n + j)];
        acc += av * bv;
      }
      double cv = c ? c->v[static_cast<size_t>(BroadcastOffset(i * n + j, out_type.shape, stc))] : 0.0;
      y.v[static_cast<size_t>(i * n + j)] = alpha * acc + beta * cv;
    }
  }
  return y;
}

// Splits `shape` around `axis` into outer * len * inner.
void SplitAxis(const std::vector<int64_t>& shape, int64_t axis, int64_t& outer, int64_t& len, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[static_cast<size_t>(d)];
  len = shape[static_cast<size_t>(axis)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
}

Buf EvalSoftmax(const Node& node, const Buf& x) {
  int64_t axis = *node.attrs().GetInt("axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(x.shape().size());
  int64_t outer, len, inner;
  SplitAxis(x.shape(), axis, outer, len, inner);
  Buf y = x;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) -> double& { return y.v[static_cast<size_t>((o * len + j) * inner + i)]; };
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < len; ++j) mx = std::max(mx, at(j));
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += std::exp(at(j) - mx);
      for (int64_t j = 0; j < len; ++j) at(j) = std::exp(at(j) - mx) / sum;
    }
  }
  return y;
}

Buf EvalLayerNorm(const Node& node, const std::vector<const Buf*>& in) {
  const Buf& x = *in[0];
  const Buf& scale = *in[1];
  const Buf* bias = in.size() > 2 ? in[2] : nullptr;
  int64_t axis = *node.attrs().GetInt("axis", -1);
  if (axis < 0) axis += static_cast<int64_t>(x.shape().size());
  double eps = *node.attrs().GetFloat("epsilon", 1e-5);
  std::vector<int64_t> norm_shape(x.shape().begin() + axis, x.shape().end());
  int64_t len = 1;
  for (int64_t d : norm_shape) len *= d;
  int64_t outer = x.type.NumElements() / std::max<int64_t>(len, 1);
  std::vector<int64_t> sts = BroadcastStrides(scale.shape(), norm_shape.size());
  std::vector<int64_t> stb = bias ? BroadcastStrides(bias->shape(), norm_shape.size()) : std::vector<int64_t>{};
  Buf y = x;
  for (int64_t o = 0; o < outer; ++o) {
    const double* px = &x.v[static_cast<size_t>(o * len)];
    double mean = 0;
    for (int64_t j = 0; j < len; ++j) mean += px[j];
    mean /= static_cast<double>(len);
    double var = 0;
    for (int64_t j = 0; j < len; ++j) var += (px[j] - mean) * (px[j] - mean);
    var /= static_cast<double>(len);
    double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < len; ++j) {
      double s = scale.v[static_cast<size_t>(BroadcastOffset(j, norm_shape, sts))];
      double b = bias ? bias->v[static_cast<size_t>(BroadcastOffset(j, norm_shape, stb))] : 0.0;
      y.v[static_cast<size_t>(o * len + j)] = (px[j] - mean) * inv * s + b;
    }
  }
  return y;
}

Buf EvalBatchNorm(const Node& node, const std::vector<const Buf*>& in) {
  const Buf& x = *in[0];
  double eps = *node.attrs().GetFloat("epsilon", 1e-5);
  int64_t n = x.shape()[0], c = x.shape()[1];
  int64_t inner = x.type.NumElements() / std::max<int64_t>(n * c, 1);
  Buf y = x;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      size_t ci = static_cast<size_t>(ch);
      double scale = in[1]->v[ci] / std::sqrt(in[4]->v[ci] + eps);
      double shift = in[2]->v[ci] - in[3]->v[ci] * scale;
      for (int64_t i = 0; i < inner; ++i) {
        double& v = y.v[static_cast<size_t>((b * c + ch) * inner + i)];
        v = v * scale + shift;
      }
    }
  }
  return y;
}

Result<Buf> EvalTranspose(const Node& node, const Buf& x, const TensorType& out_type) {
  auto perm = *node.attrs().GetInts("perm", {});
  std::vector<int64_t> xs = Strides(x.shape());
  Buf y{out_type, std::vector<double>(static_cast<size_t>(out_type.NumElements()))};
  std::vector<int64_t> st(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) st[i] = xs[static_cast<size_t>(perm[i])];
  for (int64_t i = 0; i < out_type.NumElements(); ++i) {
    y.v[static_cast<size_t>(i)] = x.v[static_cast<size_t>(BroadcastOffset(i, out_type.shape, st))];
  }
  return y;
}

Result<Buf> EvalSlice(const Node& node, const Buf& x, const TensorType& out_type) {
  auto starts = *node.attrs().GetInts("starts", {});
  auto axes = *node.attrs().GetInts("axes", {});
  auto steps = *node.attrs().GetInts("steps", {});
  size_t r = x.shape().size();
  std::vector<int64_t> begin(r, 0), step(r, 1);
  for (size_t i = 0; i < axes.size(); ++i) {
    begin[static_cast<size_t>(axes[i])] = starts[i];
    step[static_cast<size_t>(axes[i])] = steps[i];
  }
  std::vector<int64_t> xs = Strides(x.shape());
  Buf y{out_type, std::vector<double>(static_cast<size_t>(out_type.NumElements()))};
  for (int64_t i = 0; i < out_type.NumElements(); ++i) {
    int64_t idx = i, off = 0;
    for (int64_t d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      size_t du = static_cast<size_t>(d);
      int64_t od = idx % out_type.shape[du];
      idx /= out_type.shape[du];
      off += (begin[du] + od * step[du]) * xs[du];
    }
    y.v[static_cast<size_t>(i)] = x.v[static_cast<size_t>(off)];
  }
  return y;
}

Result<Buf> EvalGather(const Node& node, const Buf& x, const Buf& idx, const TensorType& out_type) {
  int64_t axis = *node.attrs().GetInt("axis", 0);
  int64_t outer, len, inner;
  SplitAxis(x.shape(), axis, outer, len, inner);
  int64_t ni = idx.type.NumElements();
  Buf y{out_type, std::vector<double>(static_cast<size_t>(out_type.NumElements()))};
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < ni; ++j) {
      int64_t k = static_cast<int64_t>(idx.v[static_cast<size_t>(j)]);
      if (k < 0) k += len;
      if (k < 0 || k >= len) return Err(node, "index " + std::to_string(k) + " out of range [0," + std::to_string(len) + ")");
      for (int64_t i = 0; i < inner; ++i) {
        y.v[static_cast<size_t>((o * ni + j) * inner + i)] = x.v[static_cast<size_t>((o * len + k) * inner + i)];
      }
    }
  }
  return y;
}

Buf EvalConcat(const Node& node, const std::vector<const Buf*>& in, const TensorType& out_type) {
  int64_t axis = *node.attrs().GetInt("axis", 0);
  int64_t outer, total, inner;
  SplitAxis(out_type.shape, axis, outer, total, inner);
  Buf y{out_type, std::vector<double>(static_cast<size_t>(out_type.NumElements()))};
  int64_t at = 0;
  for (const Buf* b : in) {
    int64_t len = b->shape()[static_cast<size_t>(axis)];
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < len * inner; ++j) {
        y.v[static_cast<size_t>((o * total + at) * inner + j)] = b->v[static_cast<size_t>(o * len * inner + j)];
      }
    }
    at += len;
  }
  return y;
}

Buf EvalReduceMean(const Node& node, const Buf& x, const TensorType& out_type) {
  auto axes = *node.attrs().GetInts("axes", {});
  size_t r = x.shape().size();
  // Output index of each input element: reduced dims collapse to 0.
  std::vector<int64_t> kept_shape(r);
  for (size_t d = 0; d < r; ++d) {
    bool red = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    kept_shape[d] = red ? 1 : x.shape()[d];
  }
  std::vector<int64_t> ks = BroadcastStrides(kept_shape, r);
  Buf y{out_type, std::vector<double>(static_cast<size_t>(out_type.NumElements()), 0.0)};
  int64_t count = x.type.NumElements() / std::max<int64_t>(out_type.NumElements(), 1);
  for (int64_t i = 0; i < x.type.NumElements(); ++i) {
    y.v[static_cast<size_t>(BroadcastOffset(i, x.shape(), ks))] += x.v[static_cast<size_t>(i)];
  }
  for (double& v : y.v) v /= static_cast<double>(std::max<int64_t>(count, 1));
  return y;
}

Result<Buf> ToBuf(const TensorData& t) {
  KEEL_ASSIGN_OR_RETURN(std::vector<double> v, TensorToDoubles(t));
  return Buf{t.type, std::move(v)};
}

}  // namespace

Result<std::vector<double>> TensorToDoubles(const TensorData& t) {
  int64_t n = t.type.NumElements();
  if (static_cast<int64_t>(t.bytes.size()) != t.type.ByteSize()) {
    return InvalidArgument("tensor " + t.type.ToString() + " holds " + std::to_string(t.bytes.size()) + " bytes");
  }
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    size_t iu = static_cast<size_t>(i);
    switch (t.type.dtype) {
      case DType::kF32: v[iu] = t.data<float>()[i]; break;
      case DType::kF64: v[iu] = t.data<double>()[i]; break;
      case DType::kI8: v[iu] = t.data<int8_t>()[i]; break;
      case DType::kI16: v[iu] = t.data<int16_t>()[i]; break;
      case DType::kI32: v[iu] = t.data<int32_t>()[i]; break;
      case DType::kI64: v[iu] = static_cast<double>(t.data<int64_t>()[i]); break;
      case DType::kU8: v[iu] = t.data<uint8_t>()[i]; break;
      case DType::kBool: v[iu] = t.data<uint8_t>()[i] != 0 ? 1.0 : 0.0; break;
      default: return Unsupported(std::string("reference evaluator: dtype ") + DTypeName(t.type.dtype));
    }
  }
  return v;
}

namespace {
template <typename T>
void StoreInt(std::vector<uint8_t>& bytes, size_t i, double v) {
  // Float→int conversion truncates toward zero (ONNX Cast); NaN/inf saturate
  // instead of invoking undefined behaviour.
  T out;
  if (std::isnan(v)) {
    out = 0;
  } else if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
    out = std::numeric_limits<T>::max();
  } else if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) {
    out = std::numeric_limits<T>::lowest();
  } else {
    out = static_cast<T>(std::trunc(v));
  }
  std::memcpy(bytes.data() + i * sizeof(T), &out, sizeof(T));
}
}  // namespace

Result<TensorDataPtr> TensorFromDoubles(const TensorType& type, const std::vector<double>& v) {
  auto t = std::make_shared<TensorData>();
  t->type = type;
  t->bytes.resize(static_cast<size_t>(type.ByteSize()));
  if (static_cast<int64_t>(v.size()) != type.NumElements()) {
    return Internal("TensorFromDoubles: " + std::to_string(v.size()) + " values for " + type.ToString());
  }
  for (size_t i = 0; i < v.size(); ++i) {
    switch (type.dtype) {
      case DType::kF32: {
        float f = static_cast<float>(v[i]);
        std::memcpy(t->bytes.data() + i * 4, &f, 4);
        break;
      }
      case DType::kF64: std::memcpy(t->bytes.data() + i * 8, &v[i], 8); break;
      case DType::kI8: StoreInt<int8_t>(t->bytes, i, v[i]); break;
      case DType::kI16: StoreInt<int16_t>(t->bytes, i, v[i]); break;
      case DType::kI32: StoreInt<int32_t>(t->bytes, i, v[i]); break;
      case DType::kI64: StoreInt<int64_t>(t->bytes, i, v[i]); break;
      case DType::kU8: StoreInt<uint8_t>(t->bytes, i, v[i]); break;
      case DType::kBool: t->bytes[i] = v[i] != 0 ? 1 : 0; break;
      default: return Unsupported(std::string("reference evaluator: dtype ") + DTypeName(type.dtype));
    }
  }
  return TensorDataPtr(std::move(t));
}

TensorDataPtr MakeTensorF32(std::vector<int64_t> shape, const std::vector<float>& values) {
  auto t = std::make_shared<TensorData>();
  t->type = TensorType{DType::kF32, std::move(shape)};
  t->bytes.resize(values.size() * 4);
  if (!values.empty()) std::memcpy(t->bytes.data(), values.data(), values.size() * 4);
  return t;
}

TensorDataPtr MakeTensorI64(std::vector<int64_t> shape, const std::vector<int64_t>& values) {
  auto t = std::make_shared<TensorData>();
  t->type = TensorType{DType::kI64, std::move(shape)};
  t->bytes.resize(values.size() * 8);
  if (!values.empty()) std::memcpy(t->bytes.data(), values.data(), values.size() * 8);
  return t;
}

Result<std::vector<TensorDataPtr>> EvaluateNode(const Node& node, const std::vector<TensorDataPtr>& inputs) {
  const std::string& op = node.op_type();
  if (inputs.size() != node.inputs().size()) {
    return Err(node, "evaluator got " + std::to_string(inputs.size()) + " inputs, node has " +
                         std::to_string(node.inputs().size()));
  }
  if (op == "keel.Fused") {
    if (!node.body()) return Err(node, "no body");
    return EvaluateGraph(*node.body(), inputs);
  }
  std::vector<TensorType> types;
  std::vector<Buf> bufs;
  bufs.reserve(inputs.size());
  std::vector<const Buf*> in;  // non-null inputs, in order (optional inputs are trailing)
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      if (node.input(i) != nullptr) return Err(node, "missing value for input " + std::to_string(i));
      continue;
    }
    types.push_back(inputs[i]->type);
    if (op == "Shape") {
      bufs.push_back(Buf{inputs[i]->type, {}});  // only the shape matters
    } else {
      KEEL_ASSIGN_OR_RETURN(Buf b, ToBuf(*inputs[i]));
      bufs.push_back(std::move(b));
    }
  }
  for (const Buf& b : bufs) in.push_back(&b);
  KEEL_ASSIGN_OR_RETURN(std::vector<TensorType> out_types, InferNodeTypes(node, types));
  const TensorType& ot = out_types[0];
  Buf y;
  if (IsElementwiseBinary(op)) {
    std::vector<int64_t> sa = BroadcastStrides(in[0]->shape(), ot.shape.size());
    std::vector<int64_t> sb = BroadcastStrides(in[1]->shape(), ot.shape.size());
    y = Buf{ot, std::vector<double>(static_cast<size_t>(ot.NumElements()))};
    bool integral = IsIntegral(ot.dtype);
    for (int64_t i = 0; i < ot.NumElements(); ++i) {
      double a = in[0]->v[static_cast<size_t>(BroadcastOffset(i, ot.shape, sa))];
      double b = in[1]->v[static_cast<size_t>(BroadcastOffset(i, ot.shape, sb))];
      y.v[static_cast<size_t>(i)] = Binary(op, a, b, integral);
    }
  } else if (IsElementwiseUnary(op)) {
    y = Buf{ot, in[0]->v};
    for (double& v : y.v) v = Unary(op, v, node.attrs());
  } else if (op == "Conv") {
    KEEL_ASSIGN_OR_RETURN(y, EvalConv(node, in, ot));
  } else if (op == "MaxPool" || op == "AveragePool") {
    KEEL_ASSIGN_OR_RETURN(y, EvalPool(node, *in[0], ot));
  } else if (op == "GlobalAveragePool") {
    int64_t nc = ot.NumElements();
    int64_t len = in[0]->type.NumElements() / std::max<int64_t>(nc, 1);
    y = Buf{ot, std::vector<double>(static_cast<size_t>(nc), 0.0)};
    for (int64_t i = 0; i < nc; ++i) {
      double acc = 0;
      for (int64_t j = 0; j < len; ++j) acc += in[0]->v[static_cast<size_t>(i * len + j)];
      y.v[static_cast<size_t>(i)] = acc / static_cast<double>(len);
    }
  } else if (op == "Gemm") {
    KEEL_ASSIGN_OR_RETURN(y, EvalGemm(node, in, ot));
  } else if (op == "MatMul") {
    KEEL_ASSIGN_OR_RETURN(y, EvalMatMul(*in[0], *in[1], ot));
  } else if (op == "Softmax") {
    y = EvalSoftmax(node, *in[0]);
  } else if (op == "LayerNormalization") {
    y = EvalLayerNorm(node, in);
  } else if (op == "BatchNormalization") {
    y = EvalBatchNorm(node, in);
  } else if (op == "Concat") {
    y = EvalConcat(node, in, ot);
  } else if (op == "Flatten" || op == "Reshape" || op == "keel.Reshape" || op == "Squeeze" || op == "Unsqueeze") {
    y = Buf{ot, in[0]->v};  // row-major data is unchanged by a reshape
  } else if (op == "Transpose") {
    KEEL_ASSIGN_OR_RETURN(y, EvalTranspose(node, *in[0], ot));
  } else if (op == "Slice") {
    KEEL_ASSIGN_OR_RETURN(y, EvalSlice(node, *in[0], ot));
  } else if (op == "Gather") {
    KEEL_ASSIGN_OR_RETURN(y, EvalGather(node, *in[0], *in[1], ot));
  } else if (op == "Shape") {
    int64_t start = *node.attrs().GetInt("start", 0);
    y = Buf{ot, {}};
    for (int64_t i = 0; i < ot.NumElements(); ++i) {
      y.v.push_back(static_cast<double>(in[0]->shape()[static_cast<size_t>(start + i)]));
    }
  } else if (op == "ReduceMean") {
    y = EvalReduceMean(node, *in[0], ot);
  } else {
    return Unsupported(NodeDescription(node) + ": the reference evaluator does not implement " + op);
  }
  KEEL_ASSIGN_OR_RETURN(TensorDataPtr out, TensorFromDoubles(ot, y.v));
  return std::vector<TensorDataPtr>{out};
}

Result<std::vector<TensorDataPtr>> EvaluateGraph(const Graph& graph, const std::vector<TensorDataPtr>& inputs) {
  if (inputs.size() != graph.inputs().size()) {
    return InvalidArgument("graph '" + graph.name() + "' expects " + std::to_string(graph.inputs().size()) +
                           " inputs, got " + std::to_string(inputs.size()));
  }
  // Keyed by value id (stable, deterministic), not by pointer.
  std::unordered_map<int64_t, TensorDataPtr> env;
  for (size_t i = 0; i < inputs.size(); ++i) env[graph.inputs()[i]->id()] = inputs[i];
  for (const Value* v : graph.values()) {
    if (v->is_constant()) env[v->id()] = v->constant();
  }
  for (const Node* n : graph.nodes()) {
    std::vector<TensorDataPtr> args;
    for (const Value* v : n->inputs()) {
      if (!v) {
        args.push_back(nullptr);
        continue;
      }
      auto it = env.find(v->id());
      if (it == env.end()) return InvalidArgument(NodeDescription(*n) + ": input '" + v->name() + "' has no value");
      args.push_back(it->second);
    }
    KEEL_ASSIGN_OR_RETURN(std::vector<TensorDataPtr> outs, EvaluateNode(*n, args));
    for (size_t i = 0; i < outs.size() && i < n->outputs().size(); ++i) env[n->output(i)->id()] = outs[i];
  }
  std::vector<TensorDataPtr> result;
  for (const Value* v : graph.outputs()) {
    auto it = env.find(v->id());
    if (it == env.end()) return InvalidArgument("graph output '" + v->name() + "' was not computed");
    result.push_back(it->second);
  }
  return result;
}

}  // namespace keel::ir
