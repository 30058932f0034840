// compiler/codegen/lower_winograd.cc — a Conv in Winograd form
// (compiler/ops/winograd.h: 3x3, stride 1, dilation 1, group 1, any pads; the
// weight already transformed at compile time to U [(m+2)^2, Co, Ci]) as
// Winograd's F(m, 3) (winograd_matrices.h). With n = m + 2 and the output cut
// into T = B * ceil(OH/m) * ceil(OW/m) tiles of m x m:
//   1. input transform: V[ξ, c, t] = (B^T d B)[ξ] for each input channel c and
//      tile t (d: the n x n input patch of the tile, zeros outside the image),
//      lanes over tiles, parallel over (tile chunk, channel) pairs, written
//      straight in the GEMM's packed B layout (NR-tile panels, the last one
//      filled with copies of the last tile), so the GEMMs do no packing of
//      their own;
//   2. n² GEMMs M[ξ] (Co x T) = U[ξ] (Co x Ci) · V[ξ] (Ci x T) through the
//      shared blocked GEMM (lower_gemm.cc: the same MR x NR micro-kernel as
//      every other GEMM, so AVX2 / AVX-512 tiles follow --cpu), as one batch
//      of n² products in one parallel region (one thread-pool fork-join, not
//      n² of them); U is usually in the row-panel layout (packed at compile
//      time, ops/packed_weight.h), so each register tile reads it as one stream;
//   3. output transform: Y = A^T M A per (output channel, tile), plus the bias,
//      through `store` (the fused epilogue), lanes over tiles, parallel over
//      output channels.
// Tiles are numbered with the full ones (inside the output) first: those run
// in lanes with unguarded stores (the last chunk overlaps the previous one,
// storing some tiles twice, so the output must not alias an input — in-place
// reuse is only granted to elementwise groups), the partial ones at the right
// and bottom edges one at a time with guarded stores. Baked i32 tables give a
// tile's image and origin, so lanes need no divisions.
// Lanes over tiles make every patch read a gather and every output write a
// scatter (each lane's tile elsewhere in the image). With
// LowerOptions::winograd_tile_loads the interior tiles (patch inside the image,
// numbered first) are read per tile as n-lane row vectors and transposed in
// registers to lanes over tiles; with winograd_tile_stores the output transform
// goes the other way (lanes over tiles transposed to each tile's m rows of m
// outputs, m-lane vector stores), the partial tiles in lanes too, stores
// guarded. SqueezeNet's 55x55 F(4,3) layers took 0.8 of the time at one thread
// (docs/MEASUREMENTS.md, cpu51). Workspace: V and M,
// n² * (Tp * Ci + T * Co) floats (Tp: T rounded up to the panel width).
// Three parallel regions in all.
// In bands (LowerOptions::winograd_band_panels): ONE parallel region over Np
// bands of consecutive tiles of balanced sizes instead, each band's input
// transform (into a panel of its own), n² GEMMs (over that panel, batched,
// serial) and output transform run by one thread in a row, so that its V and M
// (n² panels each, [Nb][n²][C or Co][NR] with a cache line between products)
// are still in that core's cache when the next stage reads them and only U is
// shared between the cores (the three-region form hands V and M between the
// cores at each stage). A band computes its whole panel; the columns past its
// tiles (the next band's tiles) are never read.
#include <algorithm>
#include <climits>
#include <cstring>

#include "compiler/codegen/lower_ops.h"
#include "compiler/codegen/winograd_matrices.h"

namespace keel::codegen {
namespace {

// sum_k coef[k] * term(k), skipping zero coefficients (the transforms are sparse).
Expr Combine(const double* coef, int64_t count, const std::function<Expr(int64_t)>& term) {
  Expr sum;
  for (int64_t k = 0; k < count; ++k) {
    const double c = coef[k];
    if (c == 0) continue;
    Expr t = term(k);
    if (c == -1) {
      sum = sum.is_null() ? -t : sum - t;
      continue;
    }
    if (c != 1) t = t * FloatConst(c);
    sum = sum.is_null() ? t : sum + t;
  }
  return sum.is_null() ? FloatConst(0) : sum;
}

void Put32(std::vector<uint8_t>& v, int64_t i, int64_t x) {
  const int32_t x32 = static_cast<int32_t>(x);
  std::memcpy(&v[static_cast<size_t>(i) * 4], &x32, 4);
}

}  // namespace

Result<Stmt> LowerWinogradConv(LowerContext& ctx, const ir::Node& node, int64_t tile, int64_t packed_rows,
                               const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  const WinogradMatrices mx = WinogradFor(tile);
  if (mx.m == 0) return InvalidArgument(NodeLabel(node) + ": Winograd tile must be 2 or 4");
  KEEL_ASSIGN_OR_RETURN(const TensorFn* xp, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* up, ctx.Input(node, 1));
  const TensorFn* bias = nullptr;
  if (node.input(2)) { KEEL_ASSIGN_OR_RETURN(bias, ctx.Input(node, 2)); }
  const TensorFn X = *xp, U = *up;
  const std::vector<int64_t>& xs = X.type.shape;
  const std::vector<int64_t>& us = U.type.shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const int64_t m = mx.m, n = mx.n, nn = n * n;
  if (xs.size() != 4 || os.size() != 4 || us.size() != 3 || us[0] != nn || us[2] != xs[1] || us[1] != os[1] ||
      X.type.dtype != DType::kF32 || U.type.dtype != DType::kF32)
    return InvalidArgument(NodeLabel(node) + ": Winograd convolution needs f32 X [N,C,H,W] and U [n*n, Co, C]");
  KEEL_ASSIGN_OR_RETURN(std::vector<int64_t> pads, node.attrs().GetInts("pads", std::vector<int64_t>(4, 0)));
  if (pads.size() != 4) return InvalidArgument(NodeLabel(node) + ": malformed pads");
  const int64_t B = xs[0], C = xs[1], H = xs[2], W = xs[3], Co = os[1], OH = os[2], OW = os[3];
  const int64_t pt = pads[0], pl = pads[1];
  const int64_t TH = (OH + m - 1) / m, TW = (OW + m - 1) / m, T = B * TH * TW;
  if (T <= 0 || Co <= 0) return Block({});
  if (B * C * H * W > INT32_MAX) return Unsupported(NodeLabel(node) + ": Winograd convolution of a > 2^31-element input");

  // V's packed layout: [n²][Np panels][C][NR tiles].
  const int64_t NR = GemmPanelWidth(ctx.options()), Np = GemmPanels(ctx.options(), T), Tp = Np * NR;
  // Bands (LowerOptions::winograd_band_panels): Np of them, band b the tiles [b T / Np,
  // (b + 1) T / Np) (sizes differing by at most one, so that 49 tiles split 25 : 24 between two
  // threads, not 32 : 17 as whole panels would), each in a panel of its own.
  const int64_t band_panels = ctx.options().winograd_band_panels;
  const bool bands = Np > 1 && Np <= band_panels;
  // Tile tables, full tiles first: image, origin row, origin column; entries
  // T..Tt repeat the last tile (the padding columns of V's last panel, or in bands
  // the columns of the last band's panel past T).
  const int64_t Tt = bands ? T + NR : Tp;
  std::vector<uint8_t> tb(static_cast<size_t>(Tt) * 4), th0(static_cast<size_t>(Tt) * 4), tw0(static_cast<size_t>(Tt) * 4);
  // Full tiles in two classes where winograd_tile_loads is on: first the interior ones (their n x n
  // input patch inside the image, so the input transform may read it without clamps: Ti of them),
  // then the others.
  int64_t Tf = 0, Ti = 0;
  {
    int64_t t = 0;
    for (int pass = 0; pass < 3; ++pass) {
      for (int64_t b = 0; b < B; ++b)
        for (int64_t th = 0; th < TH; ++th)
          for (int64_t tw = 0; tw < TW; ++tw) {
            const bool full = (th + 1) * m <= OH && (tw + 1) * m <= OW;
            const bool interior = full && ctx.options().winograd_tile_loads && th * m - pt >= 0 && th * m - pt + n <= H && tw * m - pl >= 0 && tw * m - pl + n <= W;
            const int cls = interior ? 0 : full ? 1 : 2;
            if (cls != pass) continue;
            Put32(tb, t, b);
            Put32(th0, t, th * m);
            Put32(tw0, t, tw * m);
            ++t;
          }
      if (pass == 0) Ti = t;
      if (pass == 1) Tf = t;
    }
  }
  for (int64_t t = T; t < Tt; ++t)
    for (std::vector<uint8_t>* v : {&tb, &th0, &tw0}) std::memcpy(&(*v)[static_cast<size_t>(t) * 4], &(*v)[static_cast<size_t>(T - 1) * 4], 4);
  const int tab_b = k.AddConstant("wino_tile_img", DType::kI32, {Tt}, std::move(tb));
  const int tab_h = k.AddConstant("wino_tile_row", DType::kI32, {Tt}, std::move(th0));
  const int tab_w = k.AddConstant("wino_tile_col", DType::kI32, {Tt}, std::move(tw0));
  auto tab = [&k](int buf, Expr t) { return Cast(k.Load(buf, {std::move(t)}), DType::kI64); };

  // Lanes of the transforms: half the GEMM's panel width (8 floats for AVX2, 16
  // for AVX-512; more would keep n² * lanes values live); a divisor of NR, so a
  // chunk of lanes never straddles two panels of V.
  const int64_t L = NR % 2 == 0 && NR >= 8 ? NR / 2 : NR;
  // (Bands of half a panel, so that whole panels' 32 : 17 split of 49 tiles became 32 : 16 + 1,
  // measured slower: the GEMM's half-width register tiles.)
  const int64_t Nb = Np, cpb = NR / L;
  // In bands, a band's V and M are [n²][C or Co][NR] each, every ξ's panel a cache line
  // further than its size (vs, ms floats apart): at 8 KB apart (64 channels of 32 tiles), the
  // transforms' n² loads or stores of one lane chunk would all fall into one L1 set.
  const int64_t vs = C * NR + 16, ms = Co * NR + 16;
  const int V = bands ? k.AddWorkspace("wino_v", DType::kF32, {Nb * nn * vs})
                      : k.AddWorkspace("wino_v", DType::kF32, {nn * Np * C * NR});
  const int Mo = bands ? k.AddWorkspace("wino_m", DType::kF32, {Nb * nn * ms})
                       : k.AddWorkspace("wino_m", DType::kF32, {nn, Co, T});
  // V's element (ξ, panel p, channel c, column col): [n²][Np][C][NR], or in bands [Np][n²][vs].
  auto v_at = [&](int64_t xi, Expr p, Expr c, Expr col) {
    return bands ? p * (nn * vs) + (c * NR + col + xi * vs) : ((xi * Np + p) * C + c) * NR + col;
  };
  // M's element (ξ, output channel co, tile t): [n²][Co][T], or in bands [Np][n²][ms].
  // (In bands, t is a tile of band `band`, the parallel loop's variable, which starts at tile
  // `band_start`.)
  Expr band = bands ? k.NewVar("band") : Expr();
  Expr band_start = bands ? band * T / Nb : Expr(), band_end = bands ? (band + 1) * T / Nb : Expr();
  auto m_at = [&](int64_t xi, Expr co, Expr t) -> std::vector<Expr> {
    if (!bands) return {Expr(xi), co, t};
    return {band * (nn * ms) - band_start + (co * NR + t + xi * ms)};
  };
  const int64_t min_par = ctx.options().min_parallel_elements;

  // 1. Input transform, into V's panels: chunk q is lanes [col, col + L) of panel p.
  Stmt input_transform;
  {
    const int64_t lanes = L, Q = Tp / L, chunks_per_panel = NR / L;
    const int d = k.AddLocal("wino_d", DType::kF32, {nn * lanes});
    const int tmp = k.AddLocal("wino_bd", DType::kF32, {nn * lanes});
    Expr c = k.NewVar("c"), q = k.NewVar("q"), j = k.NewVar("j");
    // (In bands, q is the chunk of the band's panel, whose columns are the tiles from band_start.)
    Expr t = bands ? band_start + q * lanes + j : q * lanes + j;
    Expr p = bands ? band : q / chunks_per_panel;
    Expr col = bands ? q * lanes + j : (q % chunks_per_panel) * lanes + j;
    Expr b = tab(tab_b, t), h0 = tab(tab_h, t) - pt, w0 = tab(tab_w, t) - pl;
    auto at = [&](const int buf, int64_t r, int64_t s) { return k.Load(buf, {(r * n + s) * lanes + j}); };
    // B^T d B into V, d's element (r, s) of lane j from d_at.
    auto transform = [&](std::vector<Stmt>& body, const std::function<Expr(int64_t, int64_t)>& d_at) {
      for (int64_t r = 0; r < n; ++r)  // B^T d
        for (int64_t s = 0; s < n; ++s)
          body.push_back(k.Store(tmp, {(r * n + s) * lanes + j},
                                 Combine(mx.bt + r * n, n, [&](int64_t a) { return d_at(a, s); })));
      for (int64_t r = 0; r < n; ++r)  // (B^T d) B
        for (int64_t s = 0; s < n; ++s)
          body.push_back(k.Store(V, {v_at(r * n + s, p, c, col)},
                                 Combine(mx.bt + s * n, n, [&](int64_t a) { return at(tmp, r, a); })));
    };
    std::vector<Stmt> body;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t s = 0; s < n; ++s) {
        Expr h = h0 + r, w = w0 + s;
        Expr inside = (h >= 0) && (h < H) && (w >= 0) && (w < W);
        Expr x = X.at({b, c, Clamp(h, 0, H - 1), Clamp(w, 0, W - 1)});
        body.push_back(k.Store(d, {(r * n + s) * lanes + j}, Select(inside, x, FloatConst(0))));
      }
    transform(body, [&](int64_t r, int64_t s) { return at(d, r, s); });
    Stmt chunk = For(j, 0, lanes, LoopKind::kLanes, Block(std::move(body)));
    // A chunk of interior tiles (LowerOptions::winograd_tile_loads): each tile's patch rows read as
    // n-lane vectors into dt [lanes][n][RW] (no clamps, no gathers), transposed in lanes x lanes
    // blocks (TryTransposeTile) to dd [n][RW][lanes], from which the transform reads vectors.
    const int64_t RW = n <= 4 ? 4 : 8, XW = n * RW;
    if (!bands && ctx.options().winograd_tile_loads && lanes >= 4 && lanes <= 16 && (lanes & (lanes - 1)) == 0 &&
        XW % lanes == 0 && Ti >= lanes) {
      const int dt = k.AddLocal("wino_dt", DType::kF32, {lanes * XW});
      const int dd = k.AddLocal("wino_dd", DType::kF32, {XW * lanes});
      Expr jt = k.NewVar("tt"), r = k.NewVar("r"), sv = k.NewVar("s");
      Expr tj = q * lanes + jt;
      Expr bj = tab(tab_b, tj), hj = tab(tab_h, tj) - pt, wj = tab(tab_w, tj) - pl;
      Stmt rows = For(jt, 0, lanes, LoopKind::kSerial,
                      For(r, 0, n, LoopKind::kUnroll,
                          For(sv, 0, n, LoopKind::kLanes, k.Store(dt, {jt * XW + r * RW + sv}, X.at({bj, c, hj + r, wj + sv})))));
      std::vector<Stmt> blocks;
      for (int64_t h = 0; h < XW / lanes; ++h) {
        Expr jj = k.NewVar("x"), i = k.NewVar("tt");
        blocks.push_back(For(jj, 0, lanes, LoopKind::kUnroll,
                             For(i, 0, lanes, LoopKind::kLanes,
                                 k.Store(dd, {(jj + h * lanes) * lanes + i}, k.Load(dt, {i * XW + h * lanes + jj})))));
      }
      std::vector<Stmt> fast_body;
      transform(fast_body, [&](int64_t rr, int64_t ss) { return k.Load(dd, {(rr * RW + ss) * lanes + j}); });
      Stmt fast = Block({rows, Block(std::move(blocks)), For(j, 0, lanes, LoopKind::kLanes, Block(std::move(fast_body)))});
      chunk = If(q * lanes + lanes <= Ti, fast, chunk);
    }
    const bool par = C > 1 && C * Tp * nn >= min_par;
    // Tile chunks outermost: a thread's contiguous share of the pairs
    // (vm/cpu/thread_pool.h) is a band of tiles, i.e. of image rows, which is
    // how the 1x1 convolutions before it split their pixels, so it reads X
    // from its own core's cache (over channels, half of X came from the
    // other core). docs/MEASUREMENTS.md, "Tasks in panel order".
    Expr i = k.NewVar("qc");
    if (bands) {
      // The chunks of the band's panel, each over every channel.
      input_transform = For(q, 0, cpb, LoopKind::kSerial, For(c, 0, C, LoopKind::kSerial, chunk));
    } else {
      input_transform =
          For(i, 0, Q * C, par ? LoopKind::kParallel : LoopKind::kSerial,
              For(q, i / C, i / C + 1, LoopKind::kSerial, For(c, i % C, i % C + 1, LoopKind::kSerial, chunk)));
    }
  }

  // 2. The n² GEMMs, one batch over V's panels (in bands: over the band's panel, all NR columns,
  // those past the band's tiles computed but never read).
  auto build_gemms = [&](int64_t cols) -> Result<Stmt> {
    Expr xi = k.NewVar("xi");
    KernelFunc* kp = &k;
    IndexFn u_at = U.at;
    GemmOperands g;
    g.m = Co; g.n = cols; g.k = C;
    g.batch = nn;
    g.batch_var = xi;
    g.b_packed = V;
    if (packed_rows > 0) {
      // U[xi] in row panels (compile-time packed): flat offsets into U.
      const int64_t plane = Co * C;
      g.a_panel_rows = packed_rows;
      if (U.buffer >= 0) {
        const int uflat = k.AddArgView(k.buffer(U.buffer).arg_index, "u_panels", {nn * plane});
        g.a_panel = [kp, uflat, xi, plane](Expr offset) { return kp->Load(uflat, {xi * plane + offset}); };
      } else {
        const std::vector<int64_t> shape = us;
        g.a_panel = [u_at, shape, xi, plane](Expr offset) { return u_at(Delinearize(shape, xi * plane + offset)); };
      }
    } else {
      g.a = [u_at, xi](Expr row, Expr kk) { return u_at({xi, row, kk}); };
    }
    if (bands) {
      g.b_packed_base = band * (nn * vs);
      g.b_packed_stride = vs;
      g.in_region = true;
      g.region_slot = band;
      g.region_slots = Nb;
      Expr base = band * (nn * ms);
      g.store = [kp, Mo, xi, base, ms, NR](Expr row, Expr col, Expr acc) {
        return kp->Store(Mo, {base + xi * ms + row * NR + col}, acc);
      };
    } else {
      g.store = [kp, Mo, xi](Expr row, Expr col, Expr acc) { return kp->Store(Mo, {xi, row, col}, acc); };
    }
    return BuildBlockedGemm(ctx, g, "wino");
  };
  KEEL_ASSIGN_OR_RETURN(Stmt gemms, build_gemms(bands ? NR : T));

  // 3. Output transform: `lanes` tiles from t0 at once; guarded stores for partial tiles.
  auto output_tiles = [&](Expr co, Expr t0, int64_t lanes, bool guarded) {
    const int mm = k.AddLocal("wino_mm", DType::kF32, {nn * lanes});
    const int am = k.AddLocal("wino_am", DType::kF32, {m * n * lanes});
    Expr j = k.NewVar("j");
    Expr t = t0 + j;
    std::vector<Stmt> body;
    for (int64_t x = 0; x < nn; ++x) body.push_back(k.Store(mm, {x * lanes + j}, k.Load(Mo, m_at(x, co, t))));
    for (int64_t r = 0; r < m; ++r)  // A^T M
      for (int64_t s = 0; s < n; ++s)
        body.push_back(k.Store(am, {(r * n + s) * lanes + j}, Combine(mx.at + r * n, n, [&](int64_t a) {
                                 return k.Load(mm, {(a * n + s) * lanes + j});
                               })));
    const int64_t mm2 = m * m, blk = std::min(lanes, mm2);  // the transpose's blocks: blk x blk
    if (ctx.options().winograd_tile_stores && lanes >= 4 && lanes <= 16 && (lanes & (lanes - 1)) == 0 &&
        (mm2 & (mm2 - 1)) == 0) {
      // Through registers instead of scatters: Y of the `lanes` tiles into yl [m²][lanes] (vector
      // stores), transposed in blk x blk blocks to yt [lanes][m²] (llvm_cpu_kernel.cc,
      // TryTransposeTile: contiguous loads, shuffles, contiguous stores; F(4,3): one 16 x 16 block
      // on AVX-512, two 8 x 8 on AVX2; F(2,3): 4 x 4 blocks of 4 tiles), then each tile's m rows
      // of m outputs as m-lane vector stores. The same values reach the same elements.
      const int yl = k.AddLocal("wino_yl", DType::kF32, {mm2 * lanes});
      const int yt = k.AddLocal("wino_yt", DType::kF32, {lanes * mm2});
      for (int64_t r = 0; r < m; ++r)  // (A^T M) A + bias
        for (int64_t s = 0; s < m; ++s) {
          Expr y = Combine(mx.at + s * n, n, [&](int64_t a) { return k.Load(am, {(r * n + a) * lanes + j}); });
          if (bias) y = y + Cast(bias->at({co}), DType::kF32);
          body.push_back(k.Store(yl, {(r * m + s) * lanes + j}, y));
        }
      Stmt compute = For(j, 0, lanes, LoopKind::kLanes, Block(std::move(body)));
      std::vector<Stmt> blocks;
      for (int64_t g = 0; g < lanes / blk; ++g)      // blocks of tiles
        for (int64_t h = 0; h < mm2 / blk; ++h) {  // blocks of outputs
          Expr jj = k.NewVar("tt"), i = k.NewVar("x");
          blocks.push_back(For(jj, 0, blk, LoopKind::kUnroll,
                               For(i, 0, blk, LoopKind::kLanes,
                                   k.Store(yt, {(jj + g * blk) * mm2 + (h * blk) + i},
                                           k.Load(yl, {(i + h * blk) * lanes + (jj + g * blk)})))));
        }
      Expr jt = k.NewVar("tt"), r = k.NewVar("r"), sv = k.NewVar("s");
      Expr tj = t0 + jt;
      Expr tb2 = tab(tab_b, tj), th2 = tab(tab_h, tj), tw2 = tab(tab_w, tj);
      // Partial tiles (guarded): each output element a scalar store behind its bounds check.
      Stmt st = store({tb2, co, th2 + r, tw2 + sv}, k.Load(yt, {jt * mm2 + r * m + sv}));
      Stmt write = For(jt, 0, lanes, LoopKind::kSerial,
                       For(r, 0, m, LoopKind::kUnroll,
                           guarded ? For(sv, 0, m, LoopKind::kUnroll, If((th2 + r < OH) && (tw2 + sv < OW), st))
                                   : For(sv, 0, m, LoopKind::kLanes, st)));
      return Block({compute, Block(std::move(blocks)), write});
    }
    std::vector<Stmt> stores;
    Expr b = tab(tab_b, t), oh0 = tab(tab_h, t), ow0 = tab(tab_w, t);
    for (int64_t r = 0; r < m; ++r)  // (A^T M) A + bias
      for (int64_t s = 0; s < m; ++s) {
        Expr y = Combine(mx.at + s * n, n, [&](int64_t a) { return k.Load(am, {(r * n + a) * lanes + j}); });
        if (bias) y = y + Cast(bias->at({co}), DType::kF32);
        Stmt st = store({b, co, oh0 + r, ow0 + s}, y);
        stores.push_back(guarded ? If((oh0 + r < OH) && (ow0 + s < OW), st) : st);
      }
    if (!guarded) {
      for (Stmt& s : stores) body.push_back(std::move(s));
      return For(j, 0, lanes, LoopKind::kLanes, Block(std::move(body)));
    }
    // One tile (lanes == 1): a one-iteration serial loop, the guards plain branches around the stores.
    body.insert(body.end(), stores.begin(), stores.end());
    return For(j, 0, 1, LoopKind::kSerial, Block(std::move(body)));
  };
  Stmt output_transform;
  if (bands) {
    // Per output channel, the band's full tiles in chunks of L lanes (the last chunk overlapping
    // the one before, as above, inside the band), or one at a time where fewer than L; then its
    // partial ones one at a time.
    Expr co = k.NewVar("co"), q = k.NewVar("q"), t = k.NewVar("t"), t2 = k.NewVar("t");
    Expr full_end = Min(band_end, Expr(Tf)), full = full_end - band_start;
    Stmt lanes = If(full >= L,
                    For(q, 0, (full + (L - 1)) / L, LoopKind::kSerial,
                        output_tiles(co, band_start + Min(q * L, full - L), L, false)),
                    For(t, band_start, full_end, LoopKind::kSerial, output_tiles(co, t, 1, true)));
    Stmt partial = For(t2, Max(band_start, Expr(Tf)), band_end, LoopKind::kSerial, output_tiles(co, t2, 1, true));
    output_transform = For(co, 0, Co, LoopKind::kSerial, Tf < T ? Block({lanes, partial}) : lanes);
    return For(band, 0, Nb, LoopKind::kParallel, Block({input_transform, gemms, output_transform}));
  }
  {
    Expr co = k.NewVar("co");
    std::vector<Stmt> per_channel;
    int64_t scalar_from = 0;
    if (Tf >= L) {
      Expr q = k.NewVar("q");
      per_channel.push_back(For(q, 0, (Tf + L - 1) / L, LoopKind::kSerial, output_tiles(co, Min(q * L, Tf - L), L, false)));
      scalar_from = Tf;
    }
    if (scalar_from < T && ctx.options().winograd_tile_stores && T >= L && L >= 4 && L <= 16 && (L & (L - 1)) == 0) {
      // The partial tiles in chunks of L lanes too (the last chunk ending at T, overlapping full
      // tiles or the chunk before: the same values stored twice), their stores guarded.
      Expr q = k.NewVar("q");
      per_channel.push_back(For(q, 0, (T - scalar_from + L - 1) / L, LoopKind::kSerial,
                                output_tiles(co, Min(scalar_from + q * L, Expr(T - L)), L, true)));
    } else if (scalar_from < T) {
      Expr t = k.NewVar("t");
      per_channel.push_back(For(t, scalar_from, T, LoopKind::kSerial, output_tiles(co, t, 1, true)));
    }
    const bool par = Co > 1 && Co * T * nn >= min_par;
    output_transform = For(co, 0, Co, par ? LoopKind::kParallel : LoopKind::kSerial, Block(std::move(per_channel)));
  }
  return Block({input_transform, gemms, output_transform});
}

}  // namespace keel::codegen
