// compiler/ops/recurrent_kernel.cc — the kernel of RNN, GRU and LSTM (one
// loop nest shared by the CPU and NVPTX back ends).
//
// Structure:
//   1. the input projection of every time step and direction at once, one
//      blocked GEMM (lower_gemm.cc): xw[t*B + b, d*G*H + row] = X_t W_d^T plus
//      the biases that are plain additions (all but GRU's Rbh when
//      linear_before_reset=1, which is scaled by the reset gate);
//   2. the states h (and c) of every direction in the workspace, from
//      initial_h / initial_c or zero;
//   3. a serial loop over the steps; in each, every direction advances by one
//      step in its own time order (t = step or T-1-step):
//        A  gates[d, b, :] = h_{d,b} R_d^T + xw (the recurrent GEMM, parallel
//           over outputs: on the CPU with output rows in SIMD lanes, each
//           element of h broadcast against a row of R^T, which is transposed
//           into the workspace once per call before the steps
//           (LowerOptions::recurrent_rows_in_lanes); else as dot products
//           over unit-stride rows of R in SIMD lanes, each ending in a
//           horizontal sum);
//           GRU with linear_before_reset=0 computes z and r here, then
//           A2 rh = r * h and A3 the h gate from rh R_h^T;
//        B  the cell update per (d, b, j): new h (and c), masked per batch
//           element by t < sequence_lens[b] (a runtime input works: the
//           state is kept and Y gets 0 where the mask is off), Y stored.
//   4. Y_h / Y_c from the final states.
// Each phase reads only what earlier phases wrote (the parallel loops end with
// a join on the CPU, a barrier on the GPU), so states update in place.
// Arithmetic is f32 (f16/bf16/f64 operands are converted on load).
#include <algorithm>

#include "compiler/codegen/lower_ops.h"
#include "compiler/ops/op_util.h"
#include "compiler/ops/recurrent.h"

namespace keel::ops {
namespace {

using codegen::BinaryOp;
using codegen::Block;
using codegen::Cast;
using codegen::Expr;
using codegen::FloatConst;
using codegen::For;
using codegen::LoopKind;
using codegen::Select;
using codegen::Stmt;
using codegen::IndexFn;
using codegen::TensorFn;

Expr F(const Expr& e) { return Cast(e, ir::DType::kF32); }
Expr C(double v) { return FloatConst(v, ir::DType::kF32); }
Expr Eq(Expr a, Expr b) { return codegen::Binary(BinaryOp::kEq, std::move(a), std::move(b)); }

bool SameActivation(const RnnActivation& a, const RnnActivation& b) {
  return a.name == b.name && a.alpha == b.alpha && a.beta == b.beta;
}

}  // namespace

Result<Stmt> LowerRecurrent(codegen::LowerContext& ctx, const ir::Node& node, const std::vector<codegen::StoreFn>& stores) {
  KEEL_ASSIGN_OR_RETURN(RnnSpec s, DecodeRnn(node));
  codegen::KernelFunc& k = ctx.kernel();
  auto input = [&](size_t i) -> Result<const TensorFn*> {
    if (!HasInput(node, i)) return static_cast<const TensorFn*>(nullptr);
    return ctx.Input(node, i);
  };
  KEEL_ASSIGN_OR_RETURN(const TensorFn* X, input(kRnnX));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* W, input(kRnnW));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* R, input(kRnnR));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Bias, input(kRnnB));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* Lens, input(kRnnLens));
  KEEL_ASSIGN_OR_RETURN(const TensorFn* H0, input(kRnnH0));
  const TensorFn* C0 = nullptr;
  const TensorFn* P = nullptr;
  if (s.kind == RnnKind::kLstm) {
    KEEL_ASSIGN_OR_RETURN(C0, input(kRnnC0));
    KEEL_ASSIGN_OR_RETURN(P, input(kRnnP));
  }
  const int64_t T = s.seq, NB = s.batch, I = s.input, H = s.hidden, G = s.gates, D = s.dirs, GH = G * H;
  const bool gru = s.kind == RnnKind::kGru, lstm = s.kind == RnnKind::kLstm;
  const bool gru_lbr = gru && s.linear_before_reset, gru_reset = gru && !s.linear_before_reset;
  const int64_t RG = gru_reset ? 2 : G;  // gates whose recurrent product phase A computes
  const bool has_y = !node.outputs().empty();

  auto wbias = [&](Expr d, Expr row) { return Bias ? F(Bias->at({d, row})) : C(0); };
  auto rbias = [&](Expr d, Expr row) { return Bias ? F(Bias->at({d, row + GH})) : C(0); };
  auto rmat = [&](Expr d, Expr row, Expr kk) { return F(R->at({d, row, kk})); };
  auto clip = [&](Expr x) { return s.has_clip ? codegen::Min(codegen::Max(x, C(-s.clip)), C(s.clip)) : x; };
  // Activation k of direction d (a select between the directions when they differ).
  // Gate pre-activations are clipped; LSTM's cell state going into h() is not
  // (`clipped` false), as in onnxruntime.
  auto act = [&](int64_t fn, Expr d, Expr x, bool clipped = true) {
    if (clipped) x = clip(x);
    const RnnActivation& a0 = s.acts[static_cast<size_t>(fn)];
    if (D == 1 || SameActivation(a0, s.acts[static_cast<size_t>(s.per_dir + fn)])) return ActivationExpr(a0, x);
    return Select(Eq(d, 0), ActivationExpr(a0, x), ActivationExpr(s.acts[static_cast<size_t>(s.per_dir + fn)], x));
  };

  // Workspace.
  const int xw = k.AddWorkspace("rnn_xw", ir::DType::kF32, {T * NB, D * GH});
  const int gates = k.AddWorkspace("rnn_gates", ir::DType::kF32, {D, NB, GH});
  const int hbuf = k.AddWorkspace("rnn_h", ir::DType::kF32, {D, NB, H});
  const int cbuf = lstm ? k.AddWorkspace("rnn_c", ir::DType::kF32, {D, NB, H}) : -1;
  const int rh = gru_reset ? k.AddWorkspace("rnn_rh", ir::DType::kF32, {D, NB, H}) : -1;
  // Output rows in lanes: the widest power-of-two share of the GEMM panel width that divides H
  // (so every product's row count, a multiple of H); fewer than 4 lanes keep the dot products.
  const int64_t NR = std::max<int64_t>(1, ctx.options().gemm_nr);
  int64_t row_lanes = NR;
  while (row_lanes > 1 && H % row_lanes != 0) row_lanes /= 2;
  const bool rows_in_lanes = ctx.options().recurrent_rows_in_lanes && row_lanes >= 4;
  const int rt = rows_in_lanes ? k.AddWorkspace("rnn_rt", ir::DType::kF32, {D, H, GH}) : -1;
  std::vector<Stmt> body;

  // 1. Input projection.
  {
    codegen::GemmOperands g;
    g.m = T * NB;
    g.n = D * GH;
    g.k = I;
    IndexFn x_at = X->at, w_at = W->at;
    const RnnSpec* sp = &s;
    g.a = [x_at, sp, NB](Expr m, Expr kk) { return x_at(RnnXIndex(*sp, m / NB, m % NB, kk)); };
    g.b = [w_at, GH](Expr kk, Expr n) { return w_at({n / GH, n % GH, kk}); };
    g.b_unit_k = W->buffer >= 0;
    g.store = [&, GH, H, gru_lbr](Expr m, Expr n, Expr acc) {
      Expr d = n / GH, row = n % GH;
      Expr bias = wbias(d, row) + (gru_lbr ? Select(row < 2 * H, rbias(d, row), C(0)) : rbias(d, row));
      return k.Store(xw, {m, n}, acc + bias);
    };
    KEEL_ASSIGN_OR_RETURN(Stmt proj, codegen::BuildBlockedGemm(ctx, g, "rnn_proj"));
    body.push_back(proj);
  }

  // 2. Initial states.
  body.push_back(codegen::LoopNest(ctx, {D, NB, H}, [&](const std::vector<Expr>& i) {
    std::vector<Stmt> st;
    st.push_back(k.Store(hbuf, i, H0 ? F(H0->at(RnnStateIndex(s, i[0], i[1], i[2]))) : C(0)));
    if (lstm) st.push_back(k.Store(cbuf, i, C0 ? F(C0->at(RnnStateIndex(s, i[0], i[1], i[2]))) : C(0)));
    return Block(std::move(st));
  }));

  // R^T for the products with output rows in lanes: rt[d, kk, row] = R[d, row, kk].
  if (rows_in_lanes) {
    body.push_back(codegen::LoopNest(ctx, {D, H, GH}, [&](const std::vector<Expr>& i) {
      return k.Store(rt, i, rmat(i[0], i[2], i[1]));
    }));
  }

  // 3. The steps.
  Expr step = k.NewVar("step");
  auto time_of = [&](Expr d) -> Expr {
    if (D == 1) return s.reverse[0] ? Expr(T - 1) - step : step;
    return Select(Eq(d, 1), Expr(T - 1) - step, step);
  };
  auto xw_at = [&](Expr d, Expr b, Expr col) { return k.Load(xw, {time_of(d) * NB + b, d * GH + col}); };
  const int64_t par_work = std::max<int64_t>(ctx.options().min_parallel_elements, 1 << 15);
  // out[d, b, j] (j < n) = init(d, b, j) + sum_kk vec(d, b, kk) * R[d, row0 + j, kk].
  auto recurrent_gemm = [&](const std::string& tag, int vec, int64_t row0, int64_t n, int out,
                            const std::function<Expr(Expr, Expr, Expr)>& init) {
    if (rows_in_lanes) {
      // L rows per iteration: part[l] += h[kk] * rt[kk, row + l] over kk, no horizontal sums.
      const int64_t L = row_lanes, blocks = n / L;
      const int part = k.AddLocal(tag + "_rows", ir::DType::kF32, {L});
      Expr r = k.NewVar("r"), kk = k.NewVar("kk"), l0 = k.NewVar("l"), l1 = k.NewVar("l"), l2 = k.NewVar("l");
      Expr d = r / (NB * blocks), b = (r / blocks) % NB, row = (r % blocks) * L + row0;
      std::vector<Stmt> rows;
      rows.push_back(For(l0, 0, L, LoopKind::kLanes, k.Store(part, {l0}, C(0))));
      rows.push_back(For(kk, 0, H, LoopKind::kNoVectorize,
                         For(l1, 0, L, LoopKind::kLanes,
                             k.Store(part, {l1}, k.Load(part, {l1}) + k.Load(vec, {d, b, kk}) * k.Load(rt, {d, kk, row + l1})))));
      rows.push_back(For(l2, 0, L, LoopKind::kLanes,
                         k.Store(out, {d, b, row + l2}, k.Load(part, {l2}) + init(d, b, row + l2))));
      const bool par = D * NB * n * H >= par_work && D * NB * blocks > 1;
      return For(r, 0, D * NB * blocks, par ? LoopKind::kParallel : LoopKind::kSerial, Block(std::move(rows)));
    }
    const int acc = k.AddLocal(tag, ir::DType::kF32, {1});
    Expr r = k.NewVar("r"), kk = k.NewVar("kk");
    Expr d = r / (NB * n), b = (r / n) % NB, j = r % n;
    Expr a = k.Load(acc, {Expr(0)});
    auto term = [&](Expr kx) { return k.Load(vec, {d, b, kx}) * rmat(d, j + row0, kx); };
    std::vector<Stmt> dot = {k.Store(acc, {Expr(0)}, C(0))};
    // Rows of R and h are unit-stride in kk: NR lanes of partial sums (explicit
    // SIMD, as the GEMM's dot-product path), then a horizontal sum and the tail.
    const int64_t KB = H / NR;
    int64_t tail = 0;
    if (KB > 0 && NR > 1) {
      const int part = k.AddLocal(tag + "_lanes", ir::DType::kF32, {NR});
      Expr j0 = k.NewVar("l"), j1 = k.NewVar("l"), j2 = k.NewVar("l"), kb = k.NewVar("kb");
      dot.push_back(For(j0, 0, NR, LoopKind::kLanes, k.Store(part, {j0}, C(0))));
      dot.push_back(For(kb, 0, KB, LoopKind::kNoVectorize,
                        For(j1, 0, NR, LoopKind::kLanes, k.Store(part, {j1}, k.Load(part, {j1}) + term(kb * NR + j1)))));
      dot.push_back(For(j2, 0, NR, LoopKind::kSerial, k.Store(acc, {Expr(0)}, a + k.Load(part, {j2}))));
      tail = KB * NR;
    }
    dot.push_back(For(kk, tail, H, LoopKind::kSerial, k.Store(acc, {Expr(0)}, a + term(kk))));
    dot.push_back(k.Store(out, {d, b, j + row0}, a + init(d, b, j + row0)));
    const bool par = D * NB * n * H >= par_work && D * NB * n > 1;
    return For(r, 0, D * NB * n, par ? LoopKind::kParallel : LoopKind::kSerial, Block(std::move(dot)));
  };
  std::vector<Stmt> st;
  // A: recurrent products of the first RG gates.
  st.push_back(recurrent_gemm("rnn_acc", hbuf, 0, RG * H, gates, [&](Expr d, Expr b, Expr col) {
    if (gru_lbr) return Select(col < 2 * H, xw_at(d, b, col), rbias(d, col));
    return xw_at(d, b, col);
  }));
  if (gru_reset) {
    // A2: rh = r * h;  A3: the h gate's pre-activation from rh.
    st.push_back(codegen::LoopNest(ctx, {D, NB, H}, [&](const std::vector<Expr>& i) {
      Expr r = act(0, i[0], k.Load(gates, {i[0], i[1], i[2] + H}));
      return k.Store(rh, i, r * k.Load(hbuf, i));
    }));
    st.push_back(recurrent_gemm("rnn_acc_h", rh, 2 * H, H, gates,
                                [&](Expr d, Expr b, Expr col) { return xw_at(d, b, col); }));
  }
  // B: cell update.
  st.push_back(codegen::LoopNest(ctx, {D, NB, H}, [&](const std::vector<Expr>& i) {
    Expr d = i[0], b = i[1], j = i[2];
    Expr t = time_of(d);
    Expr active = Lens ? t < Cast(Lens->at({b}), ir::DType::kI64) : Expr();
    auto masked = [&](Expr v, Expr keep) { return active.is_null() ? v : Select(active, v, keep); };
    auto gate = [&](int64_t g) { return k.Load(gates, {d, b, j + g * H}); };
    Expr hp = k.Load(hbuf, i);
    std::vector<Stmt> out;
    if (s.kind == RnnKind::kRnn) {
      out.push_back(k.Store(hbuf, i, masked(act(0, d, gate(0)), hp)));
    } else if (gru) {
      Expr z = act(0, d, gate(0));
      Expr pre = gru_lbr ? xw_at(d, b, j + 2 * H) + act(0, d, gate(1)) * gate(2) : gate(2);
      Expr hh = act(1, d, pre);
      out.push_back(k.Store(hbuf, i, masked((C(1) - z) * hh + z * hp, hp)));
    } else {
      auto peep = [&](int64_t g) { return P ? F(P->at({d, j + g * H})) : C(0); };
      Expr cp = k.Load(cbuf, i);
      Expr ig = act(0, d, gate(0) + peep(0) * cp);
      Expr fg = s.input_forget ? C(1) - ig : act(0, d, gate(2) + peep(2) * cp);
      Expr cc = act(1, d, gate(3));
      out.push_back(k.Store(cbuf, i, masked(fg * cp + ig * cc, cp)));
      // The new c is read back: where the mask is off, the (unused) h below
      // is computed from the kept c.
      Expr cn = k.Load(cbuf, i);
      Expr og = act(0, d, gate(1) + peep(1) * cn);
      out.push_back(k.Store(hbuf, i, masked(og * act(2, d, cn, false), hp)));
    }
    if (has_y) out.push_back(stores[0](RnnYIndex(s, t, d, b, j), masked(k.Load(hbuf, i), C(0))));
    return Block(std::move(out));
  }));
  body.push_back(For(step, 0, T, LoopKind::kSerial, Block(std::move(st))));

  // 4. Final states.
  if (stores.size() > 1 && node.outputs().size() > 1) {
    body.push_back(codegen::LoopNest(ctx, {D, NB, H}, [&](const std::vector<Expr>& i) {
      std::vector<Stmt> out;
      std::vector<Expr> o = RnnStateIndex(s, i[0], i[1], i[2]);
      // A sequence of length 0 has zero final states (as onnxruntime).
      Expr ran = Lens ? Cast(Lens->at({i[1]}), ir::DType::kI64) > 0 : Expr();
      auto final = [&](Expr v) { return ran.is_null() ? v : Select(ran, v, C(0)); };
      out.push_back(stores[1](o, final(k.Load(hbuf, i))));
      if (lstm && stores.size() > 2 && node.outputs().size() > 2) out.push_back(stores[2](o, final(k.Load(cbuf, i))));
      return Block(std::move(out));
    }));
  }
  return Block(std::move(body));
}

}  // namespace keel::ops
