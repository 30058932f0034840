// compiler/codegen/lower_depthwise_plane.cc — the CPU "plane" kernel of 2-D
// depthwise convolutions on small images (see lower_ops.h).
//
// Why: the row kernel (lower_conv.cc, DirectConv) vectorizes along one output
// row and runs the border columns as scalar code. On the small images of a
// network's last stages (7x7 and 14x14 with 5x5 or 7x7 windows: MnasNet,
// ConvNeXt) most columns are border columns, or the interior is narrower than
// four lanes and the whole row runs as a guarded scalar loop: MnasNet's three
// 1152-channel 5x5 layers at 7x7 ran at ~1 GFLOP/s, a quarter of the model's time.
//
// How: per parallel iteration one (image, channel) plane. The input plane is
// copied once into a zero-padded local buffer, split into stride phases
// (sh x sw planes: phase (a, c) holds padded rows a, a + sh, ... and columns
// c, c + sw, ...; one row's right padding columns are the next row's left
// ones), so that every tap reads its phase at unit stride. Output
// position (oh, ow) is flattened as o = oh * Wq + ow, with Wq the phases'
// row pitch; tap (kh, kw) then reads phase (kh*dh % sh, kw*dw % sw) at
// o + (kh*dh / sh) * Wq + kw*dw / sw: one unit-stride vector load per tap for L
// consecutive positions, whatever the row boundaries. Positions with ow >= OW
// (the padding columns of the flattened grid) are computed and dropped. G chunks
// of L positions share each tap's weight broadcast and keep G independent
// accumulator chains (the FMA latency, not the loads, bounds a single chain).
// Where a plane has at most two full groups of chunks (unrolled), a chunk leaves
// out the taps whose input rows are padding for every output row it covers.
// The results go to a local buffer, then through the fused epilogue one output
// at a time.
//
// Small planes are copied several at a time (PlanesPerIteration): a parallel iteration
// copies the planes of several channels, then runs their taps. The copies are
// narrow stores (a 7-wide row is two 4-lane chunks) and every tap is a 64-byte
// load across several of them; right behind its own copy such a load cannot be
// served by store forwarding and waits for the stores to reach the cache (perf
// on MnasNet's 5x5 at 7x7: 14% of the kernel's samples on its first tap load).
#include <algorithm>
#include <functional>

#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {
namespace {

constexpr int64_t kLanes = 16;         // positions per vector chunk
constexpr int64_t kMaxPlaneFloats = 8192;  // local phase planes, all phases (32 KiB)
constexpr int64_t kMaxPlanes = 4;          // planes copied before their taps run
constexpr int64_t kIterationFloats = 768;   // their planes together, all phases (3 KiB)

int64_t RoundUp(int64_t a, int64_t b) { return (a + b - 1) / b * b; }
int64_t CeilDivPos(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The phase planes' geometry for one convolution.
struct PlaneLayout {
  int64_t Hq = 0, Wq = 0;  // rows and row pitch of one phase plane
  int64_t positions = 0;   // flattened output positions (OH - 1) * Wq + OW
  int64_t chunks = 0;      // ceil(positions / kLanes)
  int64_t plane = 0;       // floats per phase plane (reads of the last chunk included)
};

PlaneLayout Layout(const DepthwiseGeom2D& g) {
  PlaneLayout p;
  const int64_t rmax = (g.OH - 1) * g.sh + (g.KH - 1) * g.dh;  // last padded row any tap reads
  const int64_t cmax = (g.OW - 1) * g.sw + (g.KW - 1) * g.dw;
  p.Hq = rmax / g.sh + 1;
  // Neighbouring rows may share their zero columns (a row's right padding is the next
  // row's left padding). In padded columns the pitch Pp must keep row r's reads clear of
  // row r - 1's data (Pp >= pw + W: the leftmost read, column 0) and of row r + 1's data
  // (Pp > cmax - pw: the rightmost read), and be a multiple of the stride so that a column
  // keeps its phase. Any phase pitch from that one up to the unshared cmax / sw + 1 is
  // correct; the narrower one is taken where it saves a tenth of the chunks or is a
  // multiple of 8 at no more chunks. (Measured, one thread: MnasNet's 5x5 at 7x7 pitch 9
  // for 11 (4 chunks for 5), 5x5 at 14x14 16 for 18, 3x3 at 7x7 8 for 9: 0.72-0.95 of
  // the layer's time; but 15 for 16 at 14x14 3x3, 30 for 32 at 28x28 5x5, same or 5% fewer
  // chunks, 1.10-1.17.)
  const int64_t hi = cmax / g.sw + 1;
  const int64_t lo = std::min(hi, RoundUp(std::max(g.pw + g.W, cmax - g.pw + 1), g.sw) / g.sw);
  auto chunks = [&](int64_t wq) { return CeilDivPos((g.OH - 1) * wq + g.OW, kLanes); };
  p.Wq = hi;
  for (int64_t wq = lo; wq < hi; ++wq) {
    const int64_t c = chunks(wq), best = chunks(p.Wq);
    const bool aligned = wq % 8 == 0;
    if ((10 * c <= 9 * chunks(hi) && c < best) || (aligned && c <= best && p.Wq % 8 != 0)) p.Wq = wq;
  }
  p.positions = (g.OH - 1) * p.Wq + g.OW;
  p.chunks = chunks(p.Wq);
  const int64_t max_tap = ((g.KH - 1) * g.dh / g.sh) * p.Wq + (g.KW - 1) * g.dw / g.sw;
  p.plane = RoundUp(std::max(p.Hq * p.Wq, p.chunks * kLanes + max_tap), kLanes);
  return p;
}

// Channels per parallel iteration: as many planes (all phases) as fit kIterationFloats, at
// most kMaxPlanes (measured, one layer alone: 7x7 planes best at 4, 14x14 at 2, two 28x28
// planes per iteration 2-5% slower than one).
int64_t PlanesPerIteration(const DepthwiseGeom2D& g, const PlaneLayout& p) {
  return std::clamp<int64_t>(kIterationFloats / (g.sh * g.sw * p.plane), 1, kMaxPlanes);
}

// `per(i)` for every i in [lo, hi): vector chunks of up to kLanes lanes where
// the run allows (the last chunk overlapping the one before it, so some i run
// twice: `per` must be idempotent), else a scalar loop. The plane copies'
// strided reads and the epilogue's stores were scalar loops over every
// element: on the larger planes (MobileNetV2's 144 channels at 56 -> 28, stride
// 2) they, not the taps, were most of the kernel's time.
Stmt Chunked(KernelFunc& k, int64_t lo, int64_t hi, const std::function<Stmt(Expr)>& per) {
  const int64_t n = hi - lo;
  int64_t L = kLanes;
  while (L > 4 && n < L) L /= 2;
  Expr i = k.NewVar("i");
  if (n < L) return For(i, lo, hi, LoopKind::kSerial, per(i));
  Expr qc = k.NewVar("qc");
  Expr first = Min(qc * L + lo, hi - L);
  return For(qc, 0, CeilDivPos(n, L), LoopKind::kSerial, For(i, 0, L, LoopKind::kLanes, per(first + i)));
}

}  // namespace

bool DepthwisePlaneApplies(const LowerOptions& o, const DepthwiseGeom2D& g) {
  const int64_t width = g.KW >= 5 ? std::max(o.depthwise_plane_width, o.depthwise_plane_wide_window_width)
                                  : o.depthwise_plane_width;
  if (o.gpu_direct_conv || o.depthwise_plane_width <= 0 || g.OW > width) return false;
  if (g.sh < 1 || g.sh > 2 || g.sw < 1 || g.sw > 2 || g.OH < 1 || g.OW < 1) return false;
  return g.sh * g.sw * Layout(g).plane <= kMaxPlaneFloats;
}

Result<Stmt> LowerDepthwisePlane(LowerContext& ctx, const DepthwiseGeom2D& g, const TensorFn& X, const TensorFn& Wt,
                                 const TensorFn* bias, const StoreFn& store) {
  if (!DepthwisePlaneApplies(ctx.options(), g)) return InvalidArgument("depthwise plane kernel: shape not supported");
  KernelFunc& k = ctx.kernel();
  const PlaneLayout p = Layout(g);
  const int64_t phases = g.sh * g.sw;
  const int64_t rows = g.B * g.Co;
  const int64_t nplanes = std::min(rows, PlanesPerIteration(g, p));
  const int64_t set = phases * p.plane;  // floats of one channel's phase planes
  int plane = k.AddLocal("dwp_plane", DType::kF32, {nplanes * set});
  int out = k.AddLocal("dwp_out", DType::kF32, {p.chunks * kLanes});
  const int64_t chains = std::max<int64_t>(1, ctx.options().depthwise_plane_chains);
  int acc = k.AddLocal("dwp_acc", DType::kF32, {chains * kLanes});

  Expr t = k.NewVar("t");  // nplanes (image, output channel) rows: one parallel iteration
  // Row m of iteration t: the last iteration repeats the last row where nplanes does not divide
  // `rows` (it computes and stores the same values again, in the same iteration).
  auto row = [&](int64_t m) {
    return rows % nplanes == 0 ? t * nplanes + m : Min(t * nplanes + m, Expr(rows - 1));
  };
  std::vector<Stmt> body;
  // 1. Per row of the iteration: zero its phase planes (their padding), then copy the
  // input plane in, phase by phase: input row ih = rq*sh + a - ph lands in phase row rq.
  for (int64_t m = 0; m < nplanes; ++m) {
    Expr r = row(m);
    Expr b = r / g.Co, co = r % g.Co;
    Expr ci = g.Mg == 1 ? co : co / g.Mg;
    {
      Expr i = k.NewVar("i"), j = k.NewVar("j");
      body.push_back(
          For(i, 0, set / kLanes, LoopKind::kSerial,
              For(j, 0, kLanes, LoopKind::kLanes, k.Store(plane, {i * kLanes + j + m * set}, FloatConst(0)))));
    }
    for (int64_t a = 0; a < g.sh; ++a) {
      // Phase rows whose input row is inside the image: 0 <= rq*sh + a - ph < H, rq < Hq.
      const int64_t r_lo = std::max<int64_t>(0, CeilDivPos(std::max<int64_t>(0, g.ph - a), g.sh));
      const int64_t r_hi = std::min(p.Hq, g.H - 1 + g.ph - a < 0 ? 0 : (g.H - 1 + g.ph - a) / g.sh + 1);
      for (int64_t c = 0; c < g.sw; ++c) {
        const int64_t q_lo = std::max<int64_t>(0, CeilDivPos(std::max<int64_t>(0, g.pw - c), g.sw));
        const int64_t q_hi = std::min(p.Wq, g.W - 1 + g.pw - c < 0 ? 0 : (g.W - 1 + g.pw - c) / g.sw + 1);
        if (r_lo >= r_hi || q_lo >= q_hi) continue;
        Expr rq = k.NewVar("rq");
        const int64_t base = (a * g.sw + c) * p.plane + m * set;
        auto copy = [&](Expr q) {
          Expr v = Cast(X.at({b, ci, rq * g.sh + (a - g.ph), q * g.sw + (c - g.pw)}), DType::kF32);
          return k.Store(plane, {rq * p.Wq + q + base}, v);
        };
        body.push_back(For(rq, r_lo, r_hi, LoopKind::kSerial, Chunked(k, q_lo, q_hi, copy)));
      }
    }
  }
  // 2.-3. Per row of the iteration: its taps, then its epilogue.
  for (int64_t m = 0; m < nplanes; ++m) {
    Expr r = row(m);
    Expr b = r / g.Co, co = r % g.Co;
    // 2. Groups of up to `chains` chunks: every tap one weight broadcast and one
    // unit-stride load + FMA per chunk, each chunk its own accumulator chain (one
    // chain alone waits on the FMA latency at every tap).
    // `known` >= 0: first_chunk's value, so that a chunk's taps whose input rows lie in the
    // padding for every output row the chunk covers can be left out (they add zeros).
    auto group = [&](Expr first_chunk, int64_t n, int64_t known) {
      auto zero_rows = [&](int64_t u, int64_t kh) {
        if (known < 0) return false;
        const int64_t oh_lo = (known + u) * kLanes / p.Wq;
        const int64_t oh_hi = std::min(g.OH - 1, ((known + u) * kLanes + kLanes - 1) / p.Wq);
        for (int64_t oh = oh_lo; oh <= oh_hi; ++oh) {
          const int64_t ih = oh * g.sh + kh * g.dh - g.ph;
          if (ih >= 0 && ih < g.H) return false;
        }
        return true;
      };
      std::vector<Stmt> s;
      Expr init = bias ? Cast(bias->at({co}), DType::kF32) : FloatConst(0);
      for (int64_t u = 0; u < n; ++u) {
        Expr j = k.NewVar("j");
        s.push_back(For(j, 0, kLanes, LoopKind::kLanes, k.Store(acc, {u * kLanes + j}, init)));
      }
      for (int64_t kh = 0; kh < g.KH; ++kh) {
        for (int64_t kw = 0; kw < g.KW; ++kw) {
          const int64_t rr = kh * g.dh, cc = kw * g.dw;
          const int64_t off = ((rr % g.sh) * g.sw + cc % g.sw) * p.plane + (rr / g.sh) * p.Wq + cc / g.sw + m * set;
          Expr w = Cast(Wt.at({co, Expr(0), Expr(kh), Expr(kw)}), DType::kF32);
          Expr j = k.NewVar("j");
          std::vector<Stmt> lanes;
          for (int64_t u = 0; u < n; ++u) {
            if (zero_rows(u, kh)) continue;
            Expr x = k.Load(plane, {(first_chunk + u) * kLanes + j + off});
            lanes.push_back(k.Store(acc, {u * kLanes + j}, k.Load(acc, {u * kLanes + j}) + x * w));
          }
          if (!lanes.empty()) s.push_back(For(j, 0, kLanes, LoopKind::kLanes, Block(std::move(lanes))));
        }
      }
      for (int64_t u = 0; u < n; ++u) {
        Expr j = k.NewVar("j");
        s.push_back(For(j, 0, kLanes, LoopKind::kLanes,
                        k.Store(out, {(first_chunk + u) * kLanes + j}, k.Load(acc, {u * kLanes + j}))));
      }
      return Block(std::move(s));
    };
    const int64_t full_groups = p.chunks / chains, rest = p.chunks % chains;
    if (full_groups > 2) {
      Expr gi = k.NewVar("g");
      body.push_back(For(gi, 0, full_groups, LoopKind::kSerial, group(gi * chains, chains, -1)));
    } else {
      for (int64_t gi = 0; gi < full_groups; ++gi) body.push_back(group(Expr(gi * chains), chains, gi * chains));
    }
    if (rest > 0) body.push_back(group(Expr(full_groups * chains), rest, full_groups * chains));
    // 3. The epilogue, output row by output row.
    {
      Expr oh = k.NewVar("oh");
      body.push_back(For(oh, 0, g.OH, LoopKind::kSerial, Chunked(k, 0, g.OW, [&](Expr ow) {
                           return store({b, co, oh, ow}, k.Load(out, {oh * p.Wq + ow}));
                         })));
    }
  }
  const int64_t iters = CeilDivPos(rows, nplanes);
  const bool par = iters > 1 && rows * g.OH * g.OW * g.KH * g.KW >= ctx.options().min_parallel_elements;
  return For(t, 0, iters, par ? LoopKind::kParallel : LoopKind::kSerial, Block(std::move(body)));
}

}  // namespace keel::codegen
