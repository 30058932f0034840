// compiler/codegen/lower_pool.cc — MaxPool (with optional Indices),
// AveragePool and LpPool over any number of spatial dims (NC + spatial...;
// pads, strides, dilations, ceil_mode, count_include_pad, p), and the global
// pools.
// Pools are memory-bound and small next to convolutions: a direct kernel,
// parallel over output rows (image, channel and every spatial dim but the
// last); the window's leading dims are serial loops guarded per dim, and the
// last spatial dim is the column. On the CPU (LowerOptions::pool_padded_rows) a
// pool with leading window dims first folds them for every input column into a
// local row padded with the fold's identity, a block of rows per parallel
// iteration, then takes every output column's taps along that row as vector
// lanes, borders included. Otherwise (1-D pools, narrow rows, the GPU) interior
// columns run as vector chunks (kLanes), border columns with clamped-and-guarded
// window reads (the GPU's max pools on wide rows take the column maxima of the
// interior columns first). The Indices
// output (first maximum's flat input index) and integer max pools always use
// the scalar column path. A channels-last pool (NHWC) instead runs one output
// pixel per parallel iteration with the channels innermost (ChannelsLastPool).
// Global pools on the CPU fold vector lanes (LowerOptions::lane_row_reductions).
#include <algorithm>
#include <limits>
#include <optional>

#include "compiler/codegen/lower_ops.h"
#include "compiler/codegen/lower_rows.h"

namespace keel::codegen {
namespace {

// Null stands for "true" so that 1-D windows need no leading-dim guards.
Expr And(const Expr& a, const Expr& b) { return a.is_null() ? b : b.is_null() ? a : a && b; }

// |x|^p, specialized for the common p = 1, 2.
Expr LpTerm(const Expr& x, double p) {
  Expr ax = Unary(UnaryOp::kAbs, x);
  if (p == 1.0) return ax;
  if (p == 2.0) return x * x;
  return Binary(BinaryOp::kPow, ax, FloatConst(p));
}
Expr LpRoot(const Expr& s, double p) {
  if (p == 1.0) return s;
  if (p == 2.0) return Unary(UnaryOp::kSqrt, s);
  return Binary(BinaryOp::kPow, s, FloatConst(1.0 / p));
}

// The accumulator type: f32 for floats (f16/bf16 widened), i64 for integer max pools.
DType PoolAccType(DType t) { return IsFloat(t) ? DType::kF32 : DType::kI64; }
// The column maxima of a columns-first max pool's block of rows (floats, 8 KiB): the rows
// of one parallel iteration.
constexpr int64_t kColumnBlockFloats = 2048;
constexpr int64_t kColumnLanes = 16;  // columns per chunk of the column maxima

Expr MaxInit(DType acc) {
  return acc == DType::kF32 ? FloatConst(-std::numeric_limits<double>::infinity())
                            : IntConst(std::numeric_limits<int64_t>::min(), DType::kI64);
}

// A channels-last pool's windows have at most this many taps to take the form below.
constexpr int64_t kMaxUnrolledTaps = 64;

// A channels-last pool (ops/channels_last.h: lowered as its channels-first twin, whose reads
// and store permute the indices): one output pixel per parallel iteration with the channels
// innermost, the window's taps unrolled into one expression. Neighbouring channels are
// neighbouring addresses, so a GPU's threads take contiguous channels and read and write
// coalesced (gpu_mapping.h kFlat, 128-bit accesses), where the row form below has each thread
// walk a row C elements apart. cuDNN has no fast NHWC average pool (Inception-v3's 35x35 pools
// at batch 32, fp16, H100: 188-251 us each; docs/PRECISION.md). Taps that can leave the input
// read it clamped and count only where inside; count_include_pad counts the pads, never a
// ceil_mode overhang past them. Nullopt for larger windows (the row form serves them).
std::optional<Stmt> ChannelsLastPool(LowerContext& ctx, const TensorFn& X, PoolKind mode, double p, bool cip,
                                     const std::vector<int64_t>& out, const std::vector<int64_t>& kernel,
                                     const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                                     const std::vector<int64_t>& dil, const StoreFn& store) {
  const std::vector<int64_t>& xs = X.type.shape;
  const size_t sp = xs.size() - 2;
  const int64_t taps = NumElements(kernel);
  if (taps > kMaxUnrolledTaps) return std::nullopt;
  KernelFunc& k = ctx.kernel();
  const DType acc_t = PoolAccType(X.type.dtype);
  std::vector<int64_t> pixel_dims{xs[0]};
  pixel_dims.insert(pixel_dims.end(), out.begin(), out.end());
  Expr r = k.NewVar("r"), c = k.NewVar("c");
  const std::vector<Expr> o = Delinearize(pixel_dims, r);  // b, then the output coordinates
  // Each tap's term enters the accumulator once (a Select on the term, not on the sum), so the
  // expression stays linear in the taps.
  Expr acc = mode == PoolKind::kMax ? MaxInit(acc_t) : FloatConst(0);
  Expr varying_count;
  double fixed_count = 0;
  for (int64_t t = 0; t < taps; ++t) {
    Expr inside, counted;
    std::vector<Expr> xi{o[0], c};
    const std::vector<int64_t> tap = DelinearizeConst(kernel, t);
    for (size_t d = 0; d < sp; ++d) {
      const int64_t offset = tap[d] * dil[d] - pads[d];
      const int64_t last_read = (out[d] - 1) * strides[d] + offset;
      Expr id = o[1 + d] * strides[d] + offset;
      if (offset < 0 || last_read >= xs[2 + d]) {
        inside = And(inside, (id >= 0) && (id < xs[2 + d]));
        xi.push_back(Clamp(id, 0, xs[2 + d] - 1));
      } else {
        xi.push_back(id);
      }
      if (last_read >= xs[2 + d] + pads[d + sp]) counted = And(counted, id < xs[2 + d] + pads[d + sp]);
    }
    Expr x = Cast(X.at(xi), acc_t);
    if (mode == PoolKind::kMax) {
      acc = Max(acc, inside.is_null() ? x : Select(inside, x, MaxInit(acc_t)));
    } else {
      Expr term = mode == PoolKind::kLp ? LpTerm(x, p) : x;
      acc = acc + (inside.is_null() ? term : Select(inside, term, FloatConst(0)));
    }
    const Expr count_if = cip ? counted : inside;
    if (count_if.is_null()) {
      fixed_count += 1;
    } else {
      Expr one = Select(count_if, FloatConst(1), FloatConst(0));
      varying_count = varying_count.is_null() ? one : varying_count + one;
    }
  }
  Expr result = acc;
  if (mode == PoolKind::kLp) result = LpRoot(acc, p);
  if (mode == PoolKind::kAvg) {
    Expr count = varying_count.is_null() ? FloatConst(fixed_count)
                                         : Max(varying_count + FloatConst(fixed_count), FloatConst(1));
    result = acc / count;
  }
  std::vector<Expr> out_idx{o[0], c};
  out_idx.insert(out_idx.end(), o.begin() + 1, o.end());
  const int64_t pixels = NumElements(pixel_dims);
  const bool par = pixels > 1 && pixels * xs[1] >= ctx.options().min_parallel_elements / 4;
  return For(r, 0, pixels, par ? LoopKind::kParallel : LoopKind::kSerial,
             For(c, 0, xs[1], LoopKind::kSerial, store(out_idx, result)));
}

}  // namespace

Result<Stmt> LowerPool(LowerContext& ctx, const ir::Node& node, PoolKind mode, const std::vector<StoreFn>& stores) {
  KernelFunc& k = ctx.kernel();
  const ir::Attributes& at = node.attrs();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  const std::vector<int64_t>& xs = X.type.shape;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  if (xs.size() < 3 || os.size() != xs.size()) return InvalidArgument(NodeLabel(node) + ": pooling needs rank >= 3");
  if (!IsFloat(X.type.dtype) && (mode != PoolKind::kMax || X.type.dtype == DType::kBool))
    return Unsupported(NodeLabel(node) + ": pooling on " + ir::DTypeName(X.type.dtype));
  const size_t sp = xs.size() - 2, last = sp - 1;
  KEEL_ASSIGN_OR_RETURN(auto kernel, at.GetInts("kernel_shape", {}));
  KEEL_ASSIGN_OR_RETURN(auto strides, at.GetInts("strides", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(auto pads, at.GetInts("pads", std::vector<int64_t>(2 * sp, 0)));
  KEEL_ASSIGN_OR_RETURN(auto dil, at.GetInts("dilations", std::vector<int64_t>(sp, 1)));
  KEEL_ASSIGN_OR_RETURN(int64_t cip, at.GetInt("count_include_pad", 0));
  KEEL_ASSIGN_OR_RETURN(int64_t storage_order, at.GetInt("storage_order", 0));
  KEEL_ASSIGN_OR_RETURN(double p, at.GetFloat("p", 2.0));
  if (kernel.size() != sp || strides.size() != sp || pads.size() != 2 * sp || dil.size() != sp)
    return InvalidArgument(NodeLabel(node) + ": malformed window attributes");
  const bool with_indices = mode == PoolKind::kMax && stores.size() > 1 && node.outputs().size() > 1 && node.output(1);
  const DType acc_t = PoolAccType(X.type.dtype);
  const int64_t B = xs[0], C = xs[1];
  const std::vector<int64_t> in(xs.begin() + 2, xs.end()), out(os.begin() + 2, os.end());
  const int64_t W = in[last], OW = out[last], KW = kernel[last], sw = strides[last], dw = dil[last];
  const int64_t pl = pads[last], pr = pads[last + sp];
  if (ctx.channels_last_output() && !with_indices) {
    std::optional<Stmt> cl = ChannelsLastPool(ctx, X, mode, p, cip != 0, out, kernel, strides, pads, dil,
                                                stores[0]);
    if (cl) return std::move(*cl);
  }

  // Interior columns [ilo, ihi): every kw tap inside [0, W).
  const int64_t ilo = std::clamp<int64_t>((pl + sw - 1) / sw, 0, OW);
  const int64_t ihi = std::clamp<int64_t>(W - 1 + pl - (KW - 1) * dw >= 0 ? (W - 1 + pl - (KW - 1) * dw) / sw + 1 : 0,
                                          ilo, OW);
  int64_t L = 16;
  while (L > 4 && ihi - ilo < L) L /= 2;
  const bool vector_cols = ihi - ilo >= L && !with_indices && acc_t == DType::kF32;
  // A pool with leading window dims first folds them for every input column of the row
  // (unit-stride loads: the maximum, or the sum of the values or of their Lp terms) into a local
  // row padded on both sides with the fold's identity, then takes the taps along the row from
  // that: KW times fewer strided reads than every tap of every window row, and every output
  // column a vector lane, the borders included (the pads are in the row). SqueezeNet's max pool
  // 111x111 -> 55x55, 64 channels: 0.082-0.090 -> 0.075 ms at 2 threads; rows of 13 outputs lost
  // while each row's taps ran right behind its own column maxima, and gain since rows run in
  // blocks (27x27 -> 13x13, 0.023 -> 0.011 ms). Average pools since cpu49: Inception-v3's 3x3
  // stride-1 pools with count_include_pad at 35x35, 17x17 and 8x8 (docs/MEASUREMENTS.md).
  int64_t LP = 16;  // output lanes per chunk of the padded-row form
  while (LP > 4 && OW < LP) LP /= 2;
  int64_t CL = 16;  // input columns per chunk of its column fold
  while (CL > 4 && W < CL) CL /= 2;
  const int64_t pad_right = std::max<int64_t>((OW - 1) * sw + (KW - 1) * dw - pl - W + 1, 0);
  const int64_t Wp = pl + W + pad_right;  // the padded row
  const bool columns_first = ctx.options().pool_padded_rows && !with_indices && acc_t == DType::kF32 && last > 0 &&
                             OW >= LP && W >= CL;
  // Without the padded rows (the GPU's lowering): max pools only, their interior columns.
  const bool max_columns_first = !ctx.options().pool_padded_rows && vector_cols && mode == PoolKind::kMax &&
                                 last > 0 && L >= 8 && W >= 16;

  // Rows: (b, c, leading output coordinates). A columns-first pool runs R rows of its innermost
  // leading dim per parallel iteration: first the column maxima of all R rows, then their taps.
  // Right behind its own stores a tap's load (unaligned, across two of them) cannot be served by
  // store forwarding and waits for them to reach the cache; a block of rows puts the other rows'
  // work between a row's stores and its loads.
  std::vector<int64_t> row_dims{B, C};
  row_dims.insert(row_dims.end(), out.begin(), out.end() - 1);
  const int64_t rows = NumElements(row_dims);
  const int64_t LH = last > 0 ? out[last - 1] : 1;
  // Blocks of balanced sizes (the last block overlaps its predecessor by less than one block).
  const int64_t most_rows = std::max<int64_t>(kColumnBlockFloats / (columns_first ? Wp : W), 1);
  const int64_t blocks = columns_first || max_columns_first ? (LH + most_rows - 1) / most_rows : 1;
  const int64_t R = (LH + blocks - 1) / blocks;
  std::vector<int64_t> outer_dims = row_dims;
  if (columns_first || max_columns_first) outer_dims.back() = blocks;
  Expr r = k.NewVar("r");
  const std::vector<Expr> oix = Delinearize(outer_dims, r);
  // The row coordinates in use: rix[2 + last - 1] is the block's row `i` in the columns-first form.
  std::vector<Expr> rix = oix;
  Expr b = rix[0], c = rix[1];
  auto use_block_row = [&](const Expr& i) {
    rix = oix;
    rix.back() = Min(oix.back() * R, Expr(LH - R)) + i;
  };

  // The window's leading dims: one serial loop each, with the input coordinate
  // and its guards (inside the input; inside the padded input for count_include_pad).
  struct Lead {
    std::vector<Expr> vars, coords;
    Expr ok, counted;
  };
  auto make_lead = [&]() {
    Lead l;
    for (size_t d = 0; d < last; ++d) {
      Expr kd = k.NewVar("k" + std::to_string(d));
      Expr id = rix[2 + d] * strides[d] - pads[d] + kd * dil[d];
      l.vars.push_back(kd);
      l.coords.push_back(id);
      // Statically inside for every output row (no leading pads, the last window inside): no guard.
      if (pads[d] > 0 || (out[d] - 1) * strides[d] - pads[d] + (kernel[d] - 1) * dil[d] >= in[d])
        l.ok = And(l.ok, (id >= 0) && (id < in[d]));
      l.counted = And(l.counted, id < in[d] + pads[d + sp]);
    }
    return l;
  };
  auto wrap_lead = [&](const Lead& l, Stmt body) {
    for (size_t d = last; d-- > 0;) body = For(l.vars[d], 0, kernel[d], LoopKind::kSerial, body);
    return body;
  };
  auto out_index = [&](const Expr& ow) {
    std::vector<Expr> idx{b, c};
    for (size_t d = 0; d < last; ++d) idx.push_back(rix[2 + d]);
    idx.push_back(ow);
    return idx;
  };
  auto finish = [&](const Expr& acc, const Expr& count) -> Expr {
    if (mode == PoolKind::kMax) return acc;
    if (mode == PoolKind::kLp) return LpRoot(acc, p);
    return acc / Max(count, FloatConst(1));
  };
  const Expr init = mode == PoolKind::kMax ? MaxInit(acc_t) : FloatConst(0);

  // Scalar columns [from, to): clamped-and-guarded window reads.
  auto scalar_cols = [&](int64_t from, int64_t to) -> Stmt {
    const Lead l = make_lead();
    int acc = k.AddLocal("pool_acc", acc_t, {1});
    int cnt = k.AddLocal("pool_cnt", DType::kF32, {1});
    Expr ow = k.NewVar("ow"), kw = k.NewVar("kw");
    Expr iw = ow * sw - pl + kw * dw;
    Expr inside = And(l.ok, (iw >= 0) && (iw < W));
    std::vector<Expr> xi{b, c};
    for (size_t d = 0; d < last; ++d) xi.push_back(Clamp(l.coords[d], 0, in[d] - 1));
    xi.push_back(Clamp(iw, 0, W - 1));
    Expr x = Cast(X.at(xi), acc_t);
    Expr value = k.Load(acc, {Expr(0)}), count = k.Load(cnt, {Expr(0)});
    std::vector<Stmt> per_out{k.Store(acc, {Expr(0)}, init), k.Store(cnt, {Expr(0)}, FloatConst(0))};
    Stmt update;
    int idx = -1, flag = -1;
    if (mode == PoolKind::kMax && with_indices) {
      // The first maximum wins (strict >), as the ONNX reference does.
      idx = k.AddLocal("pool_idx", DType::kI64, {1});
      flag = k.AddLocal("pool_better", DType::kI64, {1});
      Expr cur = k.Load(idx, {Expr(0)});
      std::vector<Expr> coords = l.coords;
      coords.push_back(iw);
      Expr flat = IntConst(0), mul = IntConst(1);
      for (size_t d = 0; d < sp; ++d) {
        if (storage_order) {
          flat = flat + coords[d] * mul;
          mul = mul * in[d];
        } else {
          flat = flat * in[d] + coords[d];
        }
      }
      flat = (b * C + c) * NumElements(in) + flat;
      Expr better = inside && ((cur < 0) || (x > value));
      Expr f = k.Load(flag, {Expr(0)}) > 0;
      update = Block({k.Store(flag, {Expr(0)}, Select(better, IntConst(1), IntConst(0))),
                      k.Store(idx, {Expr(0)}, Select(f, flat, cur)), k.Store(acc, {Expr(0)}, Select(f, x, value))});
      per_out.push_back(k.Store(idx, {Expr(0)}, IntConst(-1)));
    } else if (mode == PoolKind::kMax) {
      update = k.Store(acc, {Expr(0)}, Select(inside, Max(value, x), value));
    } else {
      // count_include_pad counts padded positions, never positions past the pads (ceil_mode overhang).
      Expr counted = cip ? And(l.counted, iw < W + pr) : inside;
      Expr term = mode == PoolKind::kLp ? LpTerm(x, p) : x;
      update = Block({k.Store(acc, {Expr(0)}, value + Select(inside, term, FloatConst(0))),
                      k.Store(cnt, {Expr(0)}, count + Select(counted, FloatConst(1), FloatConst(0)))});
    }
    per_out.push_back(wrap_lead(l, For(kw, 0, KW, LoopKind::kSerial, update)));
    per_out.push_back(stores[0](out_index(ow), finish(value, count)));
    if (with_indices) per_out.push_back(stores[1](out_index(ow), k.Load(idx, {Expr(0)})));
    return For(ow, from, to, LoopKind::kSerial, Block(std::move(per_out)));
  };

  // Interior columns [ilo, ihi) as L-lane vector chunks, the last one overlapping
  // its predecessor; leading window positions outside the input are skipped as a
  // whole, and an average's divisor is uniform over the chunk. The overlapping
  // last chunk stores some columns twice, so the output must not alias an input
  // (in-place reuse is only granted to elementwise groups).
  std::vector<Stmt> body;
  auto fold = [&](const Expr& a, const Expr& x) {
    return mode == PoolKind::kMax ? Max(a, x) : mode == PoolKind::kLp ? a + LpTerm(x, p) : a + x;
  };
  if (columns_first) {
    // 1. Each row of the block: its padded row of column folds.
    Expr i1 = k.NewVar("i");
    use_block_row(i1);
    const Lead vl = make_lead();
    const int cols = k.AddLocal("pool_cols", DType::kF32, {R * Wp});
    Expr qc = k.NewVar("qc"), j0 = k.NewVar("j"), j1 = k.NewVar("j");
    Expr w0 = Min(qc * CL, Expr(W - CL));
    Expr c0 = i1 * Wp + pl + w0;
    std::vector<Expr> xi{b, c};
    for (size_t d = 0; d < last; ++d) xi.push_back(vl.coords[d]);
    xi.push_back(w0 + j1);
    Stmt update = For(j1, 0, CL, LoopKind::kLanes, k.Store(cols, {c0 + j1}, fold(k.Load(cols, {c0 + j1}), Cast(X.at(xi), DType::kF32))));
    Stmt per_chunk = For(qc, 0, (W + CL - 1) / CL, LoopKind::kSerial,
                         Block({For(j0, 0, CL, LoopKind::kLanes, k.Store(cols, {c0 + j0}, init)),
                                wrap_lead(vl, vl.ok.is_null() ? update : If(vl.ok, update))}));
    std::vector<Stmt> per_fold_row{per_chunk};
    Expr e = k.NewVar("e");
    if (pl > 0) per_fold_row.push_back(For(e, 0, pl, LoopKind::kSerial, k.Store(cols, {i1 * Wp + e}, init)));
    Expr e2 = k.NewVar("e");
    if (pad_right > 0)
      per_fold_row.push_back(For(e2, 0, pad_right, LoopKind::kSerial, k.Store(cols, {i1 * Wp + pl + W + e2}, init)));
    body.push_back(For(i1, 0, R, LoopKind::kSerial, Block(std::move(per_fold_row))));

    // 2. Each row's taps along its padded row, all OW outputs in LP-lane chunks.
    Expr i2 = k.NewVar("i");
    use_block_row(i2);
    const Lead l = make_lead();
    std::vector<Stmt> per_row;
    // An average's divisor: the window rows counted (a scalar per row) times the columns counted
    // (per output column; uniform where no window reaches past what counts).
    Expr row_count;
    if (mode == PoolKind::kAvg) {
      Expr counted = cip ? l.counted : l.ok;
      double lead_taps = 1;
      bool lead_uniform = counted.is_null();  // every window row counts
      if (cip) {
        lead_uniform = true;
        for (size_t d = 0; d < last; ++d)
          lead_uniform = lead_uniform && (out[d] - 1) * strides[d] - pads[d] + (kernel[d] - 1) * dil[d] < in[d] + pads[d + sp];
      }
      for (size_t d = 0; d < last; ++d) lead_taps *= static_cast<double>(kernel[d]);
      if (lead_uniform) {
        row_count = FloatConst(lead_taps);
      } else {
        const int cnt = k.AddLocal("pool_cnt", DType::kF32, {1});
        Expr n = k.Load(cnt, {Expr(0)});
        per_row.push_back(k.Store(cnt, {Expr(0)}, FloatConst(0)));
        per_row.push_back(wrap_lead(l, k.Store(cnt, {Expr(0)}, n + Select(counted, FloatConst(1), FloatConst(0)))));
        row_count = n;
      }
    }
    const bool columns_uniform = cip ? (OW - 1) * sw - pl + (KW - 1) * dw < W + pr : ilo == 0 && ihi == OW;
    const int acc = k.AddLocal("pool_vacc", DType::kF32, {LP});
    Expr q = k.NewVar("q");
    Expr ow0 = Min(q * LP, Expr(OW - LP));
    std::vector<Stmt> chunk;
    Expr j2 = k.NewVar("j");
    chunk.push_back(For(j2, 0, LP, LoopKind::kLanes, k.Store(acc, {j2}, init)));
    for (int64_t kw = 0; kw < KW; ++kw) {
      Expr j = k.NewVar("j");
      Expr x = k.Load(cols, {i2 * Wp + (ow0 + j) * sw + kw * dw});
      Expr a = k.Load(acc, {j});
      chunk.push_back(For(j, 0, LP, LoopKind::kLanes, k.Store(acc, {j}, mode == PoolKind::kMax ? Max(a, x) : a + x)));
    }
    Expr j3 = k.NewVar("j");
    Expr value = k.Load(acc, {j3});
    if (mode == PoolKind::kLp) value = LpRoot(value, p);
    if (mode == PoolKind::kAvg) {
      if (columns_uniform && row_count->kind == ExprKind::kFloatConst) {
        // A divisor known at compile time: its reciprocal (within an ulp of the division).
        value = value * FloatConst(1.0 / std::max(row_count->float_value * static_cast<double>(KW), 1.0));
      } else {
        Expr col_count = FloatConst(static_cast<double>(KW));
        if (!columns_uniform) {
          col_count = Expr();
          for (int64_t kw = 0; kw < KW; ++kw) {
            Expr iw = (ow0 + j3) * sw + (kw * dw - pl);
            Expr in_col = cip ? iw < W + pr : (iw >= 0) && (iw < W);
            Expr one = Select(in_col, FloatConst(1), FloatConst(0));
            col_count = col_count.is_null() ? one : col_count + one;
          }
        }
        value = value / Max(row_count * col_count, FloatConst(1));
      }
    }
    chunk.push_back(For(j3, 0, LP, LoopKind::kLanes, stores[0](out_index(ow0 + j3), value)));
    per_row.push_back(For(q, 0, (OW + LP - 1) / LP, LoopKind::kSerial, Block(std::move(chunk))));
    body.push_back(For(i2, 0, R, LoopKind::kSerial, Block(std::move(per_row))));
  } else if (vector_cols) {
    int cols = -1;
    Expr row = IntConst(0), i2;  // the row's offset into pool_cols, and the taps' row loop variable
    if (max_columns_first) {
      Expr i1 = k.NewVar("i");
      use_block_row(i1);
      const Lead vl = make_lead();
      cols = k.AddLocal("pool_cols", DType::kF32, {R * W});
      Expr qc = k.NewVar("qc"), j0 = k.NewVar("j"), j1 = k.NewVar("j");
      Expr c0 = i1 * W + Min(qc * kColumnLanes, Expr(W - kColumnLanes));
      std::vector<Expr> xi{b, c};
      for (size_t d = 0; d < last; ++d) xi.push_back(vl.coords[d]);
      xi.push_back(c0 - i1 * W + j1);
      Stmt update = For(j1, 0, kColumnLanes, LoopKind::kLanes,
                        k.Store(cols, {c0 + j1}, Max(k.Load(cols, {c0 + j1}), Cast(X.at(xi), DType::kF32))));
      Stmt per_chunk = For(qc, 0, (W + kColumnLanes - 1) / kColumnLanes, LoopKind::kSerial,
                           Block({For(j0, 0, kColumnLanes, LoopKind::kLanes, k.Store(cols, {c0 + j0}, init)),
                                  wrap_lead(vl, vl.ok.is_null() ? update : If(vl.ok, update))}));
      body.push_back(For(i1, 0, R, LoopKind::kSerial, per_chunk));
      i2 = k.NewVar("i");
      use_block_row(i2);
      row = i2 * W;
    }
    const Lead l = make_lead();
    int acc = k.AddLocal("pool_vacc", DType::kF32, {L});
    int cnt = k.AddLocal("pool_cnt", DType::kF32, {1});
    Expr q = k.NewVar("q");
    Expr ow0 = Min(q * L + ilo, ihi - L);
    Expr n = k.Load(cnt, {Expr(0)});
    std::vector<Stmt> taps;
    for (int64_t kw = 0; kw < KW; ++kw) {
      Expr j = k.NewVar("j");
      std::vector<Expr> xi{b, c};
      for (size_t d = 0; d < last; ++d) xi.push_back(l.coords[d]);
      xi.push_back((ow0 + j) * sw + (kw * dw - pl));
      Expr x = max_columns_first ? k.Load(cols, {row + (ow0 + j) * sw + (kw * dw - pl)}) : Cast(X.at(xi), DType::kF32);
      Expr a = k.Load(acc, {j});
      Expr v = mode == PoolKind::kMax ? Max(a, x) : mode == PoolKind::kLp ? a + LpTerm(x, p) : a + x;
      taps.push_back(For(j, 0, L, LoopKind::kLanes, k.Store(acc, {j}, v)));
    }
    Stmt tap_block = l.ok.is_null() || max_columns_first ? Block(std::move(taps)) : If(l.ok, Block(std::move(taps)));
    Expr counted = cip ? l.counted : l.ok;
    Stmt count_update =
        k.Store(cnt, {Expr(0)}, n + (counted.is_null() ? FloatConst(static_cast<double>(KW))
                                                       : Select(counted, FloatConst(static_cast<double>(KW)), FloatConst(0))));
    Expr j0 = k.NewVar("j"), j1 = k.NewVar("j");
    Stmt chunk = Block({
        For(j0, 0, L, LoopKind::kLanes, k.Store(acc, {j0}, init)),
        k.Store(cnt, {Expr(0)}, FloatConst(0)),
        max_columns_first ? tap_block : wrap_lead(l, Block({tap_block, count_update})),
        For(j1, 0, L, LoopKind::kLanes, stores[0](out_index(ow0 + j1), finish(k.Load(acc, {j1}), n))),
    });
    std::vector<Stmt> per_row{For(q, 0, (ihi - ilo + L - 1) / L, LoopKind::kSerial, chunk)};
    if (ilo > 0) per_row.push_back(scalar_cols(0, ilo));
    if (ihi < OW) per_row.push_back(scalar_cols(ihi, OW));
    body.push_back(max_columns_first ? For(i2, 0, R, LoopKind::kSerial, Block(std::move(per_row)))
                                 : Block(std::move(per_row)));
  } else {
    body.push_back(scalar_cols(0, OW));
  }
  const int64_t iterations = NumElements(outer_dims);
  bool par = iterations > 1 && rows * OW >= ctx.options().min_parallel_elements / 4;
  return For(r, 0, iterations, par ? LoopKind::kParallel : LoopKind::kSerial, Block(std::move(body)));
}

Result<Stmt> LowerGlobalPool(LowerContext& ctx, const ir::Node& node, PoolKind mode, const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  TensorFn X = *Xp;
  const std::vector<int64_t>& xs = X.type.shape;
  if (xs.size() < 3) return InvalidArgument(NodeLabel(node) + ": input rank < 3");
  if (!IsFloat(X.type.dtype) && (mode != PoolKind::kMax || X.type.dtype == DType::kBool))
    return Unsupported(NodeLabel(node) + ": pooling on " + ir::DTypeName(X.type.dtype));
  KEEL_ASSIGN_OR_RETURN(double p, node.attrs().GetFloat("p", 2.0));
  const DType acc_t = PoolAccType(X.type.dtype);
  std::vector<int64_t> spatial(xs.begin() + 2, xs.end());
  const int64_t S = NumElements(spatial), BC = xs[0] * xs[1];
  if (ctx.options().lane_row_reductions && acc_t == DType::kF32 && X.channels_last_buffer >= 0 && xs[1] >= kRowLanes) {
    // Channels-last input (a MobileNetV3 squeeze-excite's pool, ops/channels_last.h): kRowLanes
    // neighbouring channels per parallel iteration, summed down the pixels in vector lanes (the
    // last chunk overlaps its predecessor). Each output's sum runs in the scalar loop's order.
    const int64_t C = xs[1], chunks = (C + kRowLanes - 1) / kRowLanes;
    int view = k.AddArgView(k.buffer(X.channels_last_buffer).arg_index, "x_nhwc", {xs[0], S, C});
    int lanes = k.AddLocal("gpool_lanes", acc_t, {kRowLanes});
    Expr t = k.NewVar("t"), s2 = k.NewVar("s"), j0 = k.NewVar("j"), j1 = k.NewVar("j"), j2 = k.NewVar("j");
    Expr b = t / chunks, c0 = Min((t % chunks) * kRowLanes, Expr(C - kRowLanes));
    auto term = [&](const Expr& j) {
      Expr v = Cast(k.Load(view, {b, s2, c0 + j}), acc_t);
      return mode == PoolKind::kLp ? LpTerm(v, p) : v;
    };
    Expr a = k.Load(lanes, {j1});
    Expr next_lane = mode == PoolKind::kMax ? Max(a, term(j1)) : a + term(j1);
    Expr a2 = k.Load(lanes, {j2});
    Expr lane_result = mode == PoolKind::kMax  ? a2
                       : mode == PoolKind::kLp ? LpRoot(a2, p)
                                               : a2 / FloatConst(static_cast<double>(S));
    std::vector<Expr> out_idx = {b, c0 + j2};
    for (size_t i = 0; i < spatial.size(); ++i) out_idx.push_back(Expr(0));
    Stmt body = Block({For(j0, 0, kRowLanes, LoopKind::kLanes,
                           k.Store(lanes, {j0}, mode == PoolKind::kMax ? MaxInit(acc_t) : FloatConst(0))),
                       For(s2, 0, S, LoopKind::kSerial, For(j1, 0, kRowLanes, LoopKind::kLanes, k.Store(lanes, {j1}, next_lane))),
                       For(j2, 0, kRowLanes, LoopKind::kLanes, store(out_idx, lane_result))});
    const int64_t tasks = xs[0] * chunks;
    bool par = tasks > 1 && BC * S >= ctx.options().min_parallel_elements;
    return For(t, 0, tasks, par ? LoopKind::kParallel : LoopKind::kSerial, body);
  }
  int acc = k.AddLocal("gpool_acc", acc_t, {1});
  Expr r = k.NewVar("r"), s = k.NewVar("s");
  Expr x;
  if (X.buffer >= 0) {
    int view = k.AddArgView(k.buffer(X.buffer).arg_index, "x_flat", {BC, S});
    x = k.Load(view, {r, s});
  } else {
    std::vector<Expr> idx = {r / xs[1], r % xs[1]};
    for (const Expr& e : Delinearize(spatial, s)) idx.push_back(e);
    x = X.at(idx);
  }
  x = Cast(x, acc_t);
  std::vector<Expr> out_idx = {r / xs[1], r % xs[1]};
  for (size_t i = 0; i < spatial.size(); ++i) out_idx.push_back(Expr(0));
  Expr sum = k.Load(acc, {Expr(0)});
  Expr init = mode == PoolKind::kMax ? MaxInit(acc_t) : FloatConst(0);
  Expr next = mode == PoolKind::kMax ? Max(sum, x) : mode == PoolKind::kLp ? sum + LpTerm(x, p) : sum + x;
  Expr result = mode == PoolKind::kMax  ? sum
                : mode == PoolKind::kLp ? LpRoot(sum, p)
                                        : sum / FloatConst(static_cast<double>(S));
  Stmt body;
  if (ctx.options().lane_row_reductions && acc_t == DType::kF32 && X.buffer >= 0 && S >= kRowLanes) {
    // The CPU form (lower_rows.h LaneReduce): partial results in vector lanes. The scalar loop
    // below is one dependent add per element (LLVM's vectorized form of it needs 64 elements
    // a row): a 7x7 plane took 4 cycles per element.
    int view = k.AddArgView(k.buffer(X.buffer).arg_index, "x_rows", {BC, S});
    auto term = [&](const Expr& l) {
      Expr v = Cast(k.Load(view, {r, l}), acc_t);
      return mode == PoolKind::kLp ? LpTerm(v, p) : v;
    };
    std::vector<Stmt> stmts;
    LaneReduce(ctx, S, mode == PoolKind::kMax ? BinaryOp::kMax : BinaryOp::kAdd, term, acc, 0, acc_t, &stmts);
    stmts.push_back(store(out_idx, result));
    body = Block(std::move(stmts));
  } else {
    body = Block({k.Store(acc, {Expr(0)}, init), For(s, 0, S, LoopKind::kSerial, k.Store(acc, {Expr(0)}, next)),
                  store(out_idx, result)});
  }
  bool par = BC > 1 && BC * S >= ctx.options().min_parallel_elements;
  return For(r, 0, BC, par ? LoopKind::kParallel : LoopKind::kSerial, body);
}

Result<Stmt> LowerMaxUnpool(LowerContext& ctx, const ir::Node& node, const std::vector<int64_t>& natural,
                            const StoreFn& store) {
  KernelFunc& k = ctx.kernel();
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Xp, ctx.Input(node, 0));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Ip, ctx.Input(node, 1));
  TensorFn X = *Xp, I = *Ip;
  const std::vector<int64_t>& os = node.output(0)->type().shape;
  const int64_t total = NumElements(natural), n = NumElements(X.type.shape);
  Stmt zero = LoopNest(ctx, os, [&](const std::vector<Expr>& idx) {
    return store(idx, Cast(IntConst(0), X.type.dtype == DType::kF16 || X.type.dtype == DType::kBF16 ? DType::kF32
                                                                                                    : X.type.dtype));
  });
  // The scatter is serial: with duplicate indices the last element wins, as in the reference.
  Expr i = k.NewVar("i");
  const std::vector<Expr> xi = Delinearize(X.type.shape, i);
  Expr at = Cast(I.at(xi), DType::kI64);
  const std::vector<Expr> yi = Delinearize(natural, Clamp(at, 0, total - 1));
  Expr x = X.at(xi);
  if (X.type.dtype == DType::kF16 || X.type.dtype == DType::kBF16) x = Cast(x, DType::kF32);
  Stmt scatter = For(i, 0, n, LoopKind::kSerial, If((at >= 0) && (at < total), store(yi, x)));
  return Block({zero, scatter});
}

}  // namespace keel::codegen
