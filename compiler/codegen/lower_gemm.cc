// compiler/codegen/lower_gemm.cc — the blocked GEMM shared by Gemm, MatMul and
// Conv (implicit GEMM); the Gemm and MatMul ops' lowerings onto it are lower_matmul.cc.
//
// Structure (BLIS-like, sized by LowerOptions):
//   1. pack B into NR-wide panels Bp[p][k][0..NR) in the workspace (zero padded
//      past N), in parallel over panels, or (one M block) inside each task: one
//      K block of one panel at a time into the task's one slot, right before
//      every row tile runs on it (still in L1; N whole panels, or a plain B
//      whose first row tile packs each full panel as it reads it in place),
//      else one K block of the task's panels at a time; this is where Conv does its im2col
//      and where transposed/broadcast B operands are resolved, so the hot loop
//      only sees unit-stride panels;
//   2. parallel over (M-block, N-block) tasks; inside, K is split into KC blocks
//      (partial sums of earlier K blocks go to a padded workspace C buffer), and
//      each MR x NR register tile is one micro-kernel: MR unrolled rows of one
//      NR-lane vector statement (LoopKind::kLanes, emitted as explicit SIMD:
//      broadcast A, vector load of B, FMA into accumulators that SROA keeps in
//      vector registers; no reliance on the SLP vectorizer, which turned some
//      tiles into shuffles and spills);
//   3. the last K block applies the epilogue (bias, activation, residual...) and
//      stores through `store`, with a guarded path for edge tiles; where the
//      store's columns are consecutive in memory (GemmOperands::c_rows), each
//      tile first prefetches the lines the next tile stores and reads there.
// Where B is packed a panel at a time from a plain buffer (b_in_place), the
// row tiles of a panel prefetch the rows of the next one for its packing.
// Where A is read in place with its k rows far apart (a_k_apart: pixels as rows), the K blocks
// are sized for L1 (LowerOptions::gemm_kc_k_apart) and the tiles prefetch A 16 k ahead; where A is
// a weight in row panels run row tile after row tile, the tiles prefetch the next row tile's panel.
// A tail panel (N % NR columns) of at most half a panel, or a narrow one packed
// at compile time (GemmOperands::b_packed_narrow_tail), has register tiles of
// its own width instead of computing NR columns.
// A batch of same-shape products (GemmOperands::batch) shares both parallel
// regions: the packing runs over (product, panel) pairs and the compute over
// (product, task) pairs. A caller that can write B's panels itself
// (GemmOperands::b_packed, e.g. Winograd's input transform) skips step 1, and
// so does a constant B packed at compile time into the same column panels (a
// MatMul's or Gemm's weight in B-panel form, ops/packed_weight.h). A
// constant A packed at compile time into MR-row panels (GemmOperands::a_panel,
// gemm_panels.h) is read as one contiguous stream per register tile instead of
// MR rows K elements apart; an A read through a tile reader (GemmOperands::
// a_tile) picks its own register tile rows. A B that is a plain unit-stride
// buffer (a pointwise convolution's input, GemmOperands::b_in_place) is read in
// place by the micro-kernel where few row tiles reuse it, only a tail panel packed;
// one read a vector at a time (GemmOperands::b_vector, a strided convolution's runs)
// always, with balanced column blocks.
#include <algorithm>

#include "compiler/codegen/lower_ops.h"

namespace keel::codegen {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

int64_t GemmPanels(const LowerOptions& o, int64_t n) { return CeilDiv(n, GemmPanelWidth(o)); }

Result<Stmt> BuildBlockedGemm(LowerContext& ctx, const GemmOperands& g, const std::string& tag) {
  KernelFunc& k = ctx.kernel();
  const LowerOptions& o = ctx.options();
  const int64_t M = g.m, N = g.n, K = g.k;
  const int64_t NR = GemmPanelWidth(o);
  const int64_t batch = std::max<int64_t>(1, g.batch);
  const bool batched = batch > 1;
  if (batched && g.batch_var.is_null()) return InvalidArgument(tag + ": batched GEMM without a batch variable");
  // The batch index in the packed B and partial-sum buffers' layouts (0 when there is one product).
  const Expr xi = batched ? g.batch_var : Expr(0);
  // Binds the batch variable to one value around `body` (a one-iteration loop).
  auto bind_batch = [&](Expr value, Stmt body) {
    return batched ? For(g.batch_var, value, value + 1, LoopKind::kSerial, std::move(body)) : body;
  };
  const bool a_panels = g.a_panel_rows > 0;
  if (a_panels != static_cast<bool>(g.a_panel)) return InvalidArgument(tag + ": A panel rows without a panel reader");
  if ((g.row_tile > 0) != static_cast<bool>(g.a_tile) || (g.row_tile > 0 && a_panels))
    return InvalidArgument(tag + ": a row tile needs a tile reader and no A panels");
  if (g.in_region && g.b_packed < 0) return InvalidArgument(tag + ": a GEMM in the caller's parallel region needs B packed");
  const int64_t MR = a_panels ? g.a_panel_rows : g.row_tile > 0 ? g.row_tile : GemmRowTile(o, M);
  if (M <= 0 || N <= 0) return Block({});
  if (K <= 0) {
    // Empty reduction: every output is the epilogue of 0.
    Expr m = k.NewVar("m"), n = k.NewVar("n");
    Stmt zeros = For(m, 0, M, LoopKind::kSerial, For(n, 0, N, LoopKind::kSerial, g.store(m, n, FloatConst(0))));
    return batched ? For(g.batch_var, 0, batch, LoopKind::kSerial, zeros) : zeros;
  }
  if (M == 1 && g.b_unit_k && !batched && g.b_packed < 0 && !a_panels && K >= NR) {
    // Dot products: NR lanes of partial sums over K, then a horizontal sum.
    const int64_t KB = K / NR;
    int part = k.AddLocal(tag + "_dot", DType::kF32, {NR});
    int sum = k.AddLocal(tag + "_sum", DType::kF32, {1});
    Expr n = k.NewVar("n"), kb = k.NewVar("kb"), j0 = k.NewVar("j"), j1 = k.NewVar("j"), j2 = k.NewVar("j"),
         kt = k.NewVar("kk");
    Expr kk = kb * NR + j1;
    Expr s = k.Load(sum, {Expr(0)});
    Stmt body = Block({
        For(j0, 0, NR, LoopKind::kLanes, k.Store(part, {j0}, FloatConst(0))),
        For(kb, 0, KB, LoopKind::kNoVectorize,
            For(j1, 0, NR, LoopKind::kLanes,
                k.Store(part, {j1}, k.Load(part, {j1}) + Cast(g.a(Expr(0), kk), DType::kF32) * Cast(g.b(kk, n), DType::kF32)))),
        k.Store(sum, {Expr(0)}, FloatConst(0)),
        For(j2, 0, NR, LoopKind::kSerial, k.Store(sum, {Expr(0)}, s + k.Load(part, {j2}))),
        For(kt, KB * NR, K, LoopKind::kSerial,
            k.Store(sum, {Expr(0)}, s + Cast(g.a(Expr(0), kt), DType::kF32) * Cast(g.b(kt, n), DType::kF32))),
        g.store(Expr(0), n, s),
    });
    bool par = N > 1 && N * K >= ctx.options().min_parallel_elements;
    return For(n, 0, N, par ? LoopKind::kParallel : LoopKind::kSerial, body);
  }
  const int64_t Np = CeilDiv(N, NR), Mt = CeilDiv(M, MR);
  // K blocking: one block when K is small, else balanced blocks of about 256, or of about
  // LowerOptions::gemm_kc_k_apart where A's k rows are far apart (GemmOperands::a_k_apart).
  const int64_t kc_target = g.a_k_apart && o.gemm_kc_k_apart > 0 ? o.gemm_kc_k_apart : 256;
  const int64_t nKC = K <= kc_target * 5 / 4 ? 1 : CeilDiv(K, kc_target);
  const int64_t KC = CeilDiv(K, nKC);
  // Cache blocking: the A block (MC x KC) and the B panels of a task (NCP x KC x NR) fit half of L2.
  const int64_t half_l2_floats = std::max<int64_t>(1024, o.l2_bytes / 8);
  int64_t MCT = std::clamp<int64_t>(half_l2_floats / (KC * MR), 1, Mt);
  int64_t NCP = std::clamp<int64_t>(half_l2_floats / (KC * NR), 1, Np);
  // Enough tasks to spread over threads (per product even in a batch: the
  // smaller blocks also keep a task's B panels in L1, which measured faster).
  // A plain unit-stride B (a pointwise convolution's input) that its first row tile can pack a
  // panel at a time (first_tile_packs below): output rows of whole cache lines (N % 16), and
  // more row tiles times K than an in-place read takes. Its tasks keep one M block (column
  // blocks only), so that every panel is packed once, by one task, into L1, instead of by a
  // pass of its own through L2 for two M blocks (ResNet-50's 1x1 layers at 28x28 and 64 -> 256
  // at 56x56, docs/MEASUREMENTS.md, cpu37). Only where at most 32 row tiles share a panel: with
  // more the pack was a small share (2% of 128 -> 512 at 28x28, 64 row tiles), and that layer
  // took 1.02x the time at one thread so.
  const bool plain_b = o.gemm_first_tile_packs && g.b_in_place && g.b && !g.b_fast && !batched;
  const bool tile_packed_b = plain_b && o.gemm_panel_at_a_time && !g.b_vector && g.b_packed < 0 && Mt > 1 &&
                             Mt <= 32 && N % 16 == 0 && Mt * K > o.gemm_b_in_place_rows;
  // A MatMul's or Gemm's weight packed at compile time as B (GemmOperands::b_weight), of at least
  // LowerOptions::gemm_weight_column_tasks_bytes, with all of A in one block: column blocks only,
  // so that each thread streams its own share of the weight, which is read from memory once per
  // run, instead of all of it for half the rows; their count is set below. (Not the pixels-as-rows
  // convolutions' weights: with those too MobileNetV2, MNASNet and ResNet-18 took 1.04-1.05x the
  // time at two threads; docs/MEASUREMENTS.md, cpu53.)
  const int64_t weight_bytes = o.gemm_weight_column_tasks_bytes;
  const bool weight_columns = weight_bytes > 0 && g.b_weight && g.b_packed >= 0 && !batched && !g.in_region &&
                              MCT >= Mt && Np >= 8 && K * N * 4 >= weight_bytes;
  if (weight_columns) MCT = Mt;
  while (!weight_columns && CeilDiv(Mt, MCT) * CeilDiv(Np, NCP) < 8 && (NCP > 1 || MCT > 1)) {
    if ((NCP >= MCT || tile_packed_b) && NCP > 1) NCP = CeilDiv(NCP, 2); else MCT = CeilDiv(MCT, 2);
  }
  const int64_t nMB = CeilDiv(Mt, MCT);
  // M block b's row tiles: [b * Mt / nMB, (b + 1) * Mt / nMB), sizes differing by at most one
  // (ResNet-50's 1x1 convolutions on 14x14 pixels as rows have 17 row tiles in 4 blocks: 4, 4, 4,
  // 5 instead of MCT's 5, 5, 5, 2, which gave the first of 2 threads 10 of the 17; measured 0.96
  // of the time for resnet50, 0.97 for bert_base and convnext_tiny at 2 threads).
  auto mb_start = [&](Expr b) { return b * Mt / nMB; };
  auto mb_end = [&](Expr b) { return (b + 1) * Mt / nMB; };
  const bool prepacked = g.b_packed >= 0;
  // Where one product's B is packed by a parallel pass of its own (several M
  // blocks, B not prepacked), the tasks run column blocks outermost, (nb, mb)
  // instead of (mb, nb): the pool's contiguous chunks (vm/cpu/thread_pool.h)
  // then give each thread the panels its own core packed (the pack hands out
  // panels in order) and the output columns (a convolution's pixels) that the
  // next layer's pass over columns gives it, instead of every panel, half of
  // them from the other core's cache. One panel per column block, so that the
  // halves of a 2-thread split differ by at most one task (with blocks of
  // several panels, 7 panels split 4 : 3). Only where all of A fits the cache
  // budget of one A block, since a thread then streams A once per panel
  // (ResNet-50's 1x1 convolutions, with up to 4 MB of weights, measured
  // slower so). docs/MEASUREMENTS.md, "Tasks in panel order".
  // (B packed at compile time with column blocks outermost too, each thread streaming its own
  // share of the weight, measured slower on a quiet machine: docs/MEASUREMENTS.md, "Weight
  // panels outermost, off again".)
  const bool columns_outer = !batched && !prepacked && !g.rows_outer && nMB > 1 && M * K <= half_l2_floats;
  if (columns_outer) NCP = 1;
  // Full panels read in place a vector at a time (GemmOperands::b_vector): no packing pass at all
  // but a tail panel's, by the task that has it (into its M block's slot). A convolution's
  // workspace image is read by every row tile, as packed panels would be, without the copy of each
  // panel's K rows (an eighth of a 224x224 7x7 stem's time; docs/MEASUREMENTS.md, cpu34).
  const bool vectors_in_place = g.b_vector && !prepacked && !batched && NR % 2 == 0;
  // Their column blocks (no packed panels to size) are of balanced sizes, [b * Np / nNB, (b + 1) *
  // Np / nNB), a multiple of 8 of them: ResNet's stem had 31 blocks of 13 panels (the last of 2),
  // 208 : 184 panels between 2 threads (0.96-0.97 of the stem's time at 2 threads so).
  // So are those of a weight split by columns alone, at least 8 and a multiple of 8 where there are
  // that many panels: a contiguous share of the tasks is then the same number of panels for 2, 4
  // or 8 threads (QKV projections of 72 panels made 9 blocks of 8, 5 : 4 between two threads).
  int64_t nNB = CeilDiv(Np, NCP);
  const bool balanced_columns = (vectors_in_place && !columns_outer && nNB > 1) || weight_columns;
  if (balanced_columns) nNB = std::min(Np, CeilDiv(nNB, 8) * 8);
  const int64_t NCP_most = balanced_columns ? CeilDiv(Np, nNB) : NCP;  // panels in the largest block
  auto nb_start = [&](Expr b) { return balanced_columns ? b * Np / nNB : b * NCP; };
  auto nb_end = [&](Expr b) { return balanced_columns ? (b + 1) * Np / nNB : Min(b * NCP + NCP, Np); };

  // With one M block, every task owns its panels: it packs each K block of
  // them right before using it (still in L2), instead of a separate pass over
  // all of B through memory.
  const bool fused_pack = nMB == 1 && !prepacked;
  // Fused and with several row tiles, optionally a panel at a time: each panel is packed into the
  // task's one slot (slot nb) right before all row tiles use it, so it stays in L1 instead of a
  // task's panels going through L2 and back, and the workspace holds a panel per column block
  // instead of all of B (LowerOptions::gemm_panel_at_a_time). Only where N is whole panels: with
  // a ragged N (a 111x111 output) the rows' vector stores split cache lines, which the next
  // panel's stores complete right away in the task-at-a-time order but a whole column of row
  // tiles later here (measured 1.06-1.10x on such a stem; docs/MEASUREMENTS.md, "B packed a
  // panel at a time").
  // (And with a tail panel where the first tile packs the full ones: rows of whole lines do not
  // split their stores.)
  const bool panel_at_a_time = fused_pack && o.gemm_panel_at_a_time && Mt > 1 && !vectors_in_place &&
                               (N % NR == 0 || tile_packed_b);
  // A panel at a time from a plain unit-stride B (GemmOperands::b_in_place): the panel's first
  // row tile reads B in place, as an in-place tile does, and stores each vector it loads into
  // the slot; the other row tiles read the slot. The copy loop before the tiles loaded every
  // vector once more and its loads waited on the source rows with no FMAs to overlap
  // (LowerOptions::gemm_first_tile_packs).
  const bool first_tile_packs = panel_at_a_time && plain_b;  // (every tile_packed_b one with one M block)
  // Full panels read in place (GemmOperands::b_in_place): packing only a tail panel, if any. Not
  // where a panel at a time keeps the packed panel in L1 for every row tile: in place, the second
  // tile reads it again from L2 (MnasNet's 32 -> 16 at 112x112, 1.5x slower so).
  const bool in_place = vectors_in_place || (g.b_in_place && g.b && fused_pack && !panel_at_a_time && !batched &&
                                             !columns_outer && Mt * K <= o.gemm_b_in_place_rows);
  // (Panels per product in the packed B: a tail panel per M block where only that is packed.)
  const int64_t slots = in_place ? (vectors_in_place ? nMB : 1) : panel_at_a_time ? nNB : Np;
  // (None at all where every panel is read in place.)
  int bp = prepacked                   ? g.b_packed
           : in_place && N % NR == 0 ? -1
                                     : k.AddWorkspace(tag + "_bpack", DType::kF32, {batch * slots * K * NR});
  const Expr b_product = prepacked && g.b_packed_shared ? Expr(0) : xi;
  const bool base = prepacked && !g.b_packed_base.is_null();
  const bool strided = prepacked && g.b_packed_stride > 0;
  auto bp_at = [&](Expr p, Expr kk, Expr j) {
    Expr at = strided ? b_product * g.b_packed_stride + ColumnPanelOffset(Expr(0), slots, K, NR, p, kk, j)
                      : ColumnPanelOffset(b_product, slots, K, NR, p, kk, j);
    return base ? g.b_packed_base + at : at;
  };
  const bool region_slot = g.in_region && g.region_slots > 1 && !g.region_slot.is_null();
  int cpart = nKC > 1 ? k.AddWorkspace(tag + "_cpart", DType::kF32,
                                       {(region_slot ? g.region_slots : 1) * batch * Mt * MR, Np * NR})
                      : -1;
  auto cpart_row = [&](Expr row) {
    return (region_slot ? g.region_slot * batch + xi : xi) * (Mt * MR) + row;
  };
  int acc = k.AddLocal(tag + "_acc", DType::kF32, {MR * NR});

  // 1. Pack B: full panels read B unguarded (unit-stride B rows become vector
  // loads), the tail panel (N % NR != 0) is zero padded. pack_panels packs rows
  // [k_lo, k_hi) of panels [p_lo, p_hi).
  // With `slot`, every panel goes to that panel's place instead of its own.
  auto pack_panels = [&](Expr p_lo, Expr p_hi, Expr k_lo, Expr k_hi, LoopKind kind, Expr slot = Expr()) {
    Expr p = k.NewVar("p");
    auto panel = [&](bool tail, bool fast) {
      Expr kk = k.NewVar("kk"), j = k.NewVar("j");
      Expr n = p * NR + j;
      Expr v = fast   ? Cast(g.b_fast(kk, p, j), DType::kF32)
               : !tail ? Cast(g.b(kk, n), DType::kF32)
                       : Select(n < N, Cast(g.b(kk, Min(n, N - 1)), DType::kF32), FloatConst(0));
      return For(kk, k_lo, k_hi, LoopKind::kSerial,
                 For(j, 0, NR, LoopKind::kLanes, k.Store(bp, {bp_at(slot.is_null() ? p : slot, kk, j)}, v)));
    };
    Stmt full = !g.b_fast     ? panel(false, false)
                : g.b_fast_ok ? If(g.b_fast_ok(p), panel(false, true), panel(false, false))
                              : panel(false, true);
    Stmt body = N % NR == 0 ? full : If(p < N / NR, full, panel(true, false));
    return For(p, p_lo, p_hi, kind, body);
  };
  Stmt pack;
  if (!fused_pack && !prepacked && !in_place) {
    bool par = batch * Np > 1 && batch * Np * K * NR >= (1 << 14);
    LoopKind kind = par ? LoopKind::kParallel : LoopKind::kSerial;
    if (!batched) {
      pack = pack_panels(0, Np, 0, K, kind);
    } else {
      // One region over (product, panel) pairs.
      Expr pt = k.NewVar("pt");
      pack = For(pt, 0, batch * Np, kind, bind_batch(pt / Np, pack_panels(pt % Np, pt % Np + 1, 0, K, LoopKind::kSerial)));
    }
  }

  // 2. Compute.
  Expr t = k.NewVar("t"), kc = k.NewVar("kc"), mt = k.NewVar("mt"), p = k.NewVar("p");
  const int64_t tasks = nMB * nNB;
  Expr tt = batched ? t % tasks : t;
  Expr mb = columns_outer ? tt % nMB : tt / nNB, nb = columns_outer ? tt / nMB : tt % nNB;
  Expr m0 = mt * MR, n0 = p * NR;
  Expr k0 = kc * KC, k1 = Min(k0 + KC, K);
  const Expr in_place_slot = vectors_in_place && nMB > 1 ? mb : Expr(0);  // of a packed tail panel

  // One register tile of `mr` rows (MR, or the M % MR rows of the last row
  // tile: rows are never clamped, so A's row addresses stay constant offsets of
  // one base and no garbage rows are computed).
  // The row tiles of a task's K block prefetch what the task reads next from B, each a share:
  // the same rows of its panel's next K block, or in the last K block the first K block of the
  // panel NCP further on (the next task's). B packed at compile time is a
  // large weight that streams from memory; without this its lines arrive at the pace of the
  // first tile's loads (and issued all by that tile, 512 lines at once, they measured 10-14%
  // slower in BERT-base).
  const bool prefetch_b = o.gemm_prefetch_b && prepacked && !panel_at_a_time;
  // The tail panel (N % NR columns) gets register tiles of its own width TW where that is less
  // than NR: the N % NR columns of a narrow packed B (GemmOperands::b_packed_narrow_tail), else
  // half a panel (the narrower vector) where the tail fits it. A 13x13 image's 169 pixels were
  // computed as 192 columns (six panels of 32) and 176 so; a pointwise convolution to 40 or 80
  // channels computed 64 or 96.
  const int64_t n_tail = N % NR, n_full = N / NR;
  const bool narrow_tail = prepacked && g.b_packed_narrow_tail && n_tail != 0;
  // (In a batch, each product's panels start b_packed_stride apart: a grouped convolution's groups.)
  if (narrow_tail && batched && !g.b_packed_shared && !strided)
    return InvalidArgument(tag + ": a narrow B tail in a batch without a product stride");
  const int64_t TW = narrow_tail ? n_tail : n_tail != 0 ? GemmComputedColumns(o, N) - n_full * NR : NR;
  // A tail panel whose tiles have a piece narrower than a vector (NR / 2 lanes: an 8-column
  // tail on AVX-512, 4 on AVX2) keeps its accumulators in a local of its own. In the one it
  // shared with the full panels' tiles, such a piece is part of a full-width slice there: LLVM
  // kept it in a zmm and re-inserted the low half after every FMA (a vmovapd and a vinsertf64x4
  // in the FMA's chain; MnasNet's 1x1 layers to 40 and 72 channels, docs/MEASUREMENTS.md, cpu39).
  // Tails of whole vectors are whole registers of that slice and keep sharing it.
  const int acc_tail = TW < NR && TW % std::max<int64_t>(1, NR / 2) != 0
                           ? k.AddLocal(tag + "_acc_tail", DType::kF32, {MR * NR})
                           : -1;
  // A half-panel tail (one vector) after 1 to 8 full panels, B packed by a pass of its own: the
  // last full panel and the tail run as one tile of NR + TW columns, where MR x 3 accumulators, 3 B
  // vectors and a broadcast fit the registers (MR <= 9 with AVX-512's 32). The tail's own tile does
  // one FMA per broadcast (~0.89 of the FMA rate; 2x its share of SqueezeNet's classifier, 169
  // pixels). With more panels the tail is too small a share: ResNet-50's 28x28 layers (24 panels
  // and 16 columns) measured 1.00-1.01x (LowerOptions::gemm_merged_tail; MEASUREMENTS.md, cpu43).
  const bool merged_tail = o.gemm_merged_tail && TW == NR / 2 && NR % 2 == 0 && !narrow_tail && n_full >= 1 &&
                           n_full <= 8 && !fused_pack && !in_place && !prepacked && !batched &&
                           MR * 3 + 4 <= o.vector_registers;
  const int acc_merged = merged_tail ? k.AddLocal(tag + "_acc_merged", DType::kF32, {MR * (NR + TW)}) : -1;
  // The output lines of the next register tile (and what the epilogue reads at the same places,
  // a fused residual) prefetched, a share per k iteration: a tile's MR rows are streams a whole
  // output row apart, each only a task's panels long, which the hardware prefetchers do not
  // follow in time, and the stores of every tile missed (docs/MEASUREMENTS.md, "Output lines
  // prefetched"). Only where the product's output is at least the cache budget (l2_bytes), which
  // smaller ones may still be in (with every size: the same time for ResNet-18 and -50, 0.98 and
  // 1.00, and more code). Where B is prefetched those tiles keep that alone.
  std::vector<std::pair<int, std::vector<Expr>>> c_lines;  // (buffer, indices in mv, nv)
  Expr mv, nv;
  if (g.c_rows && o.gemm_prefetch_c && !prefetch_b && batch * M * N * 4 >= o.l2_bytes) {
    mv = k.NewVar("pm");
    nv = k.NewVar("pn");
    // The probe's stores, and its loads that depend on the column: one line each per 16 columns.
    std::function<bool(const Stmt&)> walk;
    std::function<void(const Expr&)> loads = [&](const Expr& e) {
      if (e.is_null()) return;
      if (e->kind == ExprKind::kLoad && k.buffer(e->buffer).scope != BufferScope::kLocal &&
          k.buffer(e->buffer).scope != BufferScope::kConstant &&
          std::any_of(e->operands.begin(), e->operands.end(), [&](const Expr& x) { return UsesVar(x, nv->int_value); }))
        c_lines.emplace_back(e->buffer, e->operands);
      for (const Expr& x : e->operands) loads(x);
    };
    walk = [&](const Stmt& st) {
      if (!st) return true;
      if (st->kind == StmtKind::kBlock) return std::all_of(st->body.begin(), st->body.end(), walk);
      if (st->kind != StmtKind::kStore) return false;
      if (k.buffer(st->buffer).scope == BufferScope::kLocal) return false;
      c_lines.emplace_back(st->buffer, st->indices);
      loads(st->value);
      return true;
    };
    if (!walk(g.store(mv, nv, FloatConst(0)))) c_lines.clear();
  }
  // B packed a panel at a time from a plain buffer (a pointwise convolution's input rows, N apart):
  // the row tiles of one panel prefetch the rows of the next, each a share, where the packing
  // would otherwise read its K rows as K streams of NR columns, more than the hardware prefetchers
  // track (LowerOptions::gemm_prefetch_pack).
  int b_source = -1;
  std::vector<Expr> b_source_at;  // in bkv, bnv
  Expr bkv, bnv;
  if (o.gemm_prefetch_pack && panel_at_a_time && g.b_in_place && g.b && !batched) {
    bkv = k.NewVar("pk");
    bnv = k.NewVar("pn");
    Expr e = g.b(bkv, bnv);
    if (e->kind == ExprKind::kCast) e = e->operands[0];
    if (e->kind == ExprKind::kLoad) {
      b_source = e->buffer;
      b_source_at = e->operands;
    }
  }
  // A read in place with its k rows far apart (GemmOperands::a_k_apart, through a tile reader):
  // every k iteration prefetches the tile's A lines 16 k ahead into L2, where A is at least half
  // the cache budget (LowerOptions::gemm_prefetch_a).
  const bool prefetch_a = o.gemm_prefetch_a && g.a_k_apart && g.a_tile && batch * M * K * 4 >= o.l2_bytes / 2;
  // A packed at compile time in row panels (a convolution's weight) and run row tile by row tile,
  // each over the task's panels (not a panel at a time, where every row tile's panel is reused
  // by each panel): a tile's A panel is read from memory by its first panel's loads, MR x KC
  // floats of a weight that the layers before evicted. So the tiles of one row tile prefetch
  // the next row tile's panel (its K block) into L2, each panel's tile a share, one line per k
  // iteration, where A is at least half the cache budget (LowerOptions::gemm_prefetch_a_panels).
  int a_source = -1;
  std::vector<Expr> a_source_at;  // in apv
  Expr apv;
  // (A panel at a time packed by its first tile runs every row tile on the task's first panel
  // right away: each tile of a panel prefetches the whole next row tile's panel instead, which
  // reaches the lines of the task's first panel from memory and those of the others from L2.
  // Without it ResNet-50's 512 -> 256 at 28x28 took 1.03x the time in the model, not alone.)
  if (o.gemm_prefetch_a_panels && a_panels && (!panel_at_a_time || first_tile_packs) && Mt > 1 &&
      batch * M * K * 4 >= o.l2_bytes / 2) {
    apv = k.NewVar("pa");
    Expr e = g.a_panel(apv);
    if (e->kind == ExprKind::kCast) e = e->operands[0];
    if (e->kind == ExprKind::kLoad) {
      a_source = e->buffer;
      a_source_at = e->operands;
    }
  }
  // The next row tile's A panel rows [k0, k1) (MR floats a k, 16 a line), in shares of Ra lines
  // for each of the task's panels: the line of k iteration kk of this panel's tile.
  const int64_t La = a_source >= 0 ? CeilDiv(KC * MR, 16) : 0;
  const int64_t Ra_all = a_source < 0 ? 0 : panel_at_a_time ? La : CeilDiv(La, NCP_most);
  auto a_ahead = [&](Expr kk) {
    const Expr line = panel_at_a_time ? Min(kk - k0, La - 1) : Min((p - nb_start(nb)) * Ra_all + (kk - k0), La - 1);
    const Expr at = Min((m0 + MR) * K + k0 * MR + line * 16, M * K - 1);
    std::vector<Expr> idx;
    for (const Expr& x : a_source_at)
      idx.push_back(SubstituteVars(x, [&](int64_t id) { return id == apv->int_value ? at : Expr(); }));
    return k.Prefetch(a_source, std::move(idx));
  };
  // `width` lanes of the tile (NR, or TW for the tail panel's own tiles); `tail`: the tile runs
  // only on the tail panel. Otherwise it runs on the full panels where the tail has tiles of its
  // own, else on every panel (its stores guarded where it meets a tail panel).
  // `packs`: B is read in place (as `direct`) and every vector read is also stored into the
  // task's panel slot (first_tile_packs).
  // `merged`: the merged_tail tile, NR + TW lanes, run at p = n_full - 1 (lanes NR.. read panel p + 1).
  auto make_tile = [&](int64_t mr, bool prefetch, bool direct, int64_t width = 0, bool tail = false,
                       bool packs = false, bool a_pf = true, bool merged = false) {
    if (width == 0) width = NR;
    if (merged) width = NR + TW;
    const int64_t Ra = a_pf ? Ra_all : 0;  // (`a_pf` false: no A prefetch in this tile)
    direct = direct || packs;
    const int tile_acc = merged ? acc_merged : tail && acc_tail >= 0 ? acc_tail : acc;
    const int64_t stride = merged ? NR + TW : NR;  // accumulator lanes per tile row
    auto acc_at = [&](int64_t i, int64_t j) { return k.Load(tile_acc, {Expr(i * stride + j)}); };
    auto acc_lane = [&](int64_t i, Expr j) { return k.Load(tile_acc, {i * stride + j}); };
    // One vector statement per tile row (rows(f(i, j)) = mr unrolled kLanes loops), a narrower
    // tile's in pieces of powers of two (24 lanes as 16 + 8: LLVM assembled a 24-lane vector
    // accumulator element by element, 50x slower).
    // (B read in place a vector at a time: one piece per vector, each its own load.)
    const bool by_vector = direct && vectors_in_place && width == NR;
    std::vector<std::pair<int64_t, int64_t>> pieces;  // [begin, end) of each lane run
    for (int64_t j0 = 0, w = NR; j0 < width; w /= 2)
      if (j0 + w <= width) { pieces.emplace_back(j0, j0 + w); j0 += w; }
    if (by_vector) pieces = {{0, NR / 2}, {NR / 2, NR}};
    auto rows_at = [&](const std::function<Stmt(int64_t i, Expr j, int64_t lo)>& f) {
      std::vector<Stmt> out;
      for (int64_t i = 0; i < mr; ++i) {
        for (const auto& [lo, hi] : pieces) {
          Expr j = k.NewVar("j");
          out.push_back(For(j, lo, hi, LoopKind::kLanes, f(i, j, lo)));
        }
      }
      return Block(std::move(out));
    };
    auto rows = [&](const std::function<Stmt(int64_t i, Expr j)>& f) {
      return rows_at([&](int64_t i, Expr j, int64_t) { return f(i, j); });
    };
    std::vector<Stmt> tile;
    // init
    {
      Stmt zero = rows([&](int64_t i, Expr j) { return k.Store(tile_acc, {i * stride + j}, FloatConst(0)); });
      Stmt reload = cpart >= 0 ? rows([&](int64_t i, Expr j) {
        return k.Store(tile_acc, {i * stride + j}, k.Load(cpart, {cpart_row(m0 + i), n0 + j}));
      }) : nullptr;
      tile.push_back(cpart >= 0 ? If(Binary(BinaryOp::kEq, kc, 0), zero, reload) : zero);
    }
    // k loop: acc[i][j] += A(m0+i, kk) * Bp[p][kk][j]
    {
      Expr kk = k.NewVar("kk");
      Stmt body = rows_at([&](int64_t i, Expr j, int64_t lo) {
        Expr a = Cast(a_panels ? g.a_panel(RowPanelOffset(m0, mr, K, kk, i)) : g.a_tile ? g.a_tile(m0, i, kk) : g.a(m0 + i, kk),
                      DType::kF32);
        // A narrow tail panel is [K][TW] after the full panels (at the offset of panel n_full).
        Expr b = merged        ? k.Load(bp, {lo >= NR ? bp_at(p + 1, kk, j - NR) : bp_at(p, kk, j)})
                 : by_vector   ? Cast(g.b_vector(kk, p, lo / (NR / 2), j - lo), DType::kF32)
                 : direct      ? Cast(g.b(kk, n0 + j), DType::kF32)
                 : tail && narrow_tail ? k.Load(bp, {bp_at(p, Expr(0), Expr(0)) + kk * TW + j})
                                 : k.Load(bp, {bp_at(in_place ? in_place_slot : panel_at_a_time ? nb : p, kk, j)});
        return k.Store(tile_acc, {i * stride + j}, acc_lane(i, j) + a * b);
      });
      if (packs) {
        // After the rows' FMAs, the same loads (one each after CSE) into the slot.
        std::vector<Stmt> to_slot{body};
        for (const auto& [lo, hi] : pieces) {
          Expr j = k.NewVar("j");
          to_slot.push_back(For(j, lo, hi, LoopKind::kLanes,
                                k.Store(bp, {bp_at(nb, kk, j)}, Cast(g.b(kk, n0 + j), DType::kF32))));
        }
        body = Block(std::move(to_slot));
      }
      if (prefetch_a && !tail) {
        // The A lines of k + 16 for the tile's first and last row (its rows are adjacent).
        std::vector<Stmt> ahead;
        for (int64_t i : {int64_t(0), mr - 1}) {
          Expr e = g.a_tile(m0, i, Min(kk + 16, K - 1));
          if (e->kind == ExprKind::kCast) e = e->operands[0];
          if (e->kind == ExprKind::kLoad) ahead.push_back(k.Prefetch(e->buffer, e->operands));
        }
        ahead.push_back(body);
        body = Block(std::move(ahead));
      }
      if (prefetch) {
        // This row tile's share of the rows to prefetch, one row an iteration in its first R.
        const int64_t T = Mt / nMB, R = CeilDiv(KC, T);  // the smallest block's tiles
        const Expr last = kc >= nKC - 1;
        // (Never a narrow tail panel, whose rows are TW apart: the last full one instead.)
        const Expr next_p = Select(last, Min(p + (balanced_columns ? nb_end(nb) - nb_start(nb) : Expr(NCP)), narrow_tail ? std::max<int64_t>(n_full - 1, 0) : Np - 1), p);
        const Expr row = Min(Select(last, Expr(0), k0 + KC) + (mt - mb_start(mb)) * R + (kk - k0), K - 1);
        std::vector<Stmt> ahead;  // each 64-byte line of that row
        for (int64_t j = 0; j < NR; j += 16) ahead.push_back(k.Prefetch(bp, {bp_at(next_p, row, Expr(j))}));
        // (And the next row tile's A panel, where it applies: Winograd's transformed weights.)
        if (Ra > 0 && !tail) ahead.push_back(a_ahead(kk));
        ahead.push_back(body);
        const Expr split = Min(k0 + std::max(R, tail ? 0 : Ra), k1);
        tile.push_back(For(kk, k0, split, LoopKind::kNoVectorize, Block(std::move(ahead))));
        tile.push_back(For(kk, split, k1, LoopKind::kNoVectorize, body));
      } else if ((!c_lines.empty() || b_source >= 0 || a_source >= 0) && !tail) {
        // Each a share per k iteration of the first R: the lines of the next tile in this task's
        // order (or the first of the next task's), its MR rows of NR / 16 lines per stream; and
        // this tile's share of the next panel's rows that its pack reads.
        const int64_t L = CeilDiv(NR, 16);
        const int64_t shortest = K - (nKC - 1) * KC;  // the last K block's length
        const int64_t lines = MR * L, per = CeilDiv(lines, std::max<int64_t>(1, shortest));
        const int64_t Rc = c_lines.empty() ? 0 : CeilDiv(lines, per);
        const int64_t Rb = b_source >= 0 ? CeilDiv(KC, Mt) : 0;
        auto substitute = [&](const std::vector<Expr>& idx, const Expr& v0, const Expr& e0, const Expr& v1, const Expr& e1) {
          std::vector<Expr> at;
          for (const Expr& x : idx)
            at.push_back(SubstituteVars(x, [&](int64_t id) { return id == v0->int_value ? e0 : id == v1->int_value ? e1 : Expr(); }));
          return at;
        };
        std::vector<Stmt> ahead_c, ahead_b, ahead_a;
        if (Ra > 0) ahead_a.push_back(a_ahead(kk));
        if (Rc > 0) {
          const Expr p_end = nb_end(nb);
          Expr mt_next, p_next;
          if (panel_at_a_time) {
            mt_next = Select(mt + 1 >= Mt, Expr(0), mt + 1);
            p_next = Select(mt + 1 >= Mt, p + 1, p);
          } else {
            mt_next = Select(p + 1 >= p_end, mt + 1, mt);
            p_next = Select(p + 1 >= p_end, nb_start(nb), p + 1);
          }
          for (int64_t s = 0; s < per; ++s) {
            const Expr q = Min((kk - k0) * per + s, lines - 1);
            const Expr row = Min(mt_next * MR + q / L, M - 1), col = Min(p_next * NR + (q % L) * 16, N - 1);
            for (const auto& [buf, idx] : c_lines) ahead_c.push_back(k.Prefetch(buf, substitute(idx, mv, row, nv, col)));
          }
        }
        if (Rb > 0) {
          const Expr row = Min(k0 + mt * Rb + Min(kk - k0, Rb - 1), K - 1);
          for (int64_t l = 0; l < L; ++l)
            ahead_b.push_back(k.Prefetch(b_source, substitute(b_source_at, bkv, row, bnv, Min((p + 1) * NR + l * 16, N - 1))));
        }
        auto loops = [&](std::vector<Stmt> ahead, int64_t R) {
          ahead.push_back(body);
          const Expr split = Min(k0 + R, k1);
          return Block({For(kk, k0, split, LoopKind::kNoVectorize, Block(std::move(ahead))),
                        For(kk, split, k1, LoopKind::kNoVectorize, body)});
        };
        std::vector<Stmt> both = ahead_c, not_c = ahead_b;
        both.insert(both.end(), ahead_b.begin(), ahead_b.end());
        both.insert(both.end(), ahead_a.begin(), ahead_a.end());
        not_c.insert(not_c.end(), ahead_a.begin(), ahead_a.end());
        Stmt pf = loops(both, std::max({Rc, Rb, Ra}));
        // The output's lines only before the K block that stores.
        Stmt others = Rb > 0 || Ra > 0 ? loops(not_c, std::max(Rb, Ra)) : For(kk, k0, k1, LoopKind::kNoVectorize, body);
        tile.push_back(nKC > 1 && Rc > 0 ? If(Binary(BinaryOp::kEq, kc, nKC - 1), pf, others) : pf);
      } else {
        tile.push_back(For(kk, k0, k1, LoopKind::kNoVectorize, body));
      }
    }
    // store
    {
      Stmt full = rows([&](int64_t i, Expr j) { return g.store(m0 + i, n0 + j, acc_lane(i, j)); });
      Stmt partial = cpart >= 0 ? rows([&](int64_t i, Expr j) { return k.Store(cpart, {cpart_row(m0 + i), n0 + j}, acc_lane(i, j)); })
                                : nullptr;
      Stmt final_store = full;
      if (merged) {
        std::vector<std::pair<int64_t, int64_t>> store_pieces{{0, NR}};  // then n_tail lanes in powers of two
        for (int64_t lo = NR, w = TW; lo < NR + n_tail; w /= 2)
          if (lo + w <= NR + n_tail) { store_pieces.emplace_back(lo, lo + w); lo += w; }
        std::vector<Stmt> out;
        for (int64_t i = 0; i < mr; ++i) {
          for (const auto& [lo, hi] : store_pieces) {
            Expr j = k.NewVar("j");
            out.push_back(For(j, lo, hi, LoopKind::kLanes, g.store(m0 + i, n0 + j, acc_lane(i, j))));
          }
        }
        final_store = Block(std::move(out));
      } else if (tail ? width > n_tail : N % NR != 0 && TW == NR) {
        // Guarded where the tile's lanes pass N: a shared tile on the tail panel, a tail tile wider than the tail.
        std::vector<Stmt> edge;
        for (int64_t i = 0; i < mr; ++i)
          for (int64_t j = 0; j < width; ++j) edge.push_back(If(n0 + j < N, g.store(m0 + i, n0 + j, acc_at(i, j))));
        final_store = tail ? Block(std::move(edge)) : If(n0 + NR <= N, full, Block(std::move(edge)));
      }
      tile.push_back(cpart >= 0 ? If(Binary(BinaryOp::kEq, kc, nKC - 1), final_store, partial) : final_store);
    }
    return Block(std::move(tile));
  };
  const int64_t m_tail = M % MR;
  auto row_tile = [&](bool prefetch, bool direct = false, int64_t width = 0, bool tail = false, bool packs = false,
                      bool a_pf = true, bool merged = false) {
    return m_tail == 0 ? make_tile(MR, prefetch, direct, width, tail, packs, a_pf, merged)
                       : If(mt < M / MR, make_tile(MR, prefetch, direct, width, tail, packs, a_pf, merged),
                            make_tile(m_tail, prefetch, direct, width, tail, packs, a_pf, merged));
  };
  Stmt tile = !in_place     ? row_tile(false)
              : N % NR == 0 ? row_tile(false, true)
                            : If(p < N / NR, row_tile(false, true), row_tile(false));  // the tail panel packed
  if (prefetch_b) tile = row_tile(true);
  if (TW < NR) {
    // The tail panel's own tiles (packed, never prefetched: they are the last of their task).
    Stmt full = in_place ? row_tile(false, true) : row_tile(prefetch_b);
    Stmt tail = row_tile(false, false, TW, true);
    tile = n_full == 0 ? tail : If(p < n_full, full, tail);
    if (merged_tail)  // the last full panel with the tail; the tail panel has nothing left to run
      tile = If(p < n_full - 1, full, If(p < n_full, row_tile(false, false, 0, false, false, true, true), Block({})));
  }
  Stmt tiles;
  if (first_tile_packs) {
    // (Row tile 0 packs: Mt > 1 here, so the other tiles are never empty.)
    // (Where A is prefetched, only the tiles of the task's first panel do: the next ones find it in L2.)
    auto panel = [&](bool a_pf) {
      // (`tile` with the A prefetch on or off: B is neither in place nor prepacked here.)
      Stmt rest = row_tile(false, false, 0, false, false, a_pf);
      if (TW < NR) rest = If(p < n_full, rest, row_tile(false, false, TW, true));
      Stmt packed_by_tile = Block({For(mt, 0, 1, LoopKind::kSerial, row_tile(false, true, 0, false, true, a_pf)),
                                   For(mt, 1, Mt, LoopKind::kSerial, rest)});
      Stmt tail_panel = Block({pack_panels(p, p + 1, k0, k1, LoopKind::kSerial, nb), For(mt, 0, Mt, LoopKind::kSerial, rest)});
      return N % NR == 0 ? packed_by_tile : If(p < N / NR, packed_by_tile, tail_panel);
    };
    tiles = For(p, nb_start(nb), nb_end(nb), LoopKind::kSerial,
                Ra_all > 0 ? If(Binary(BinaryOp::kEq, p, nb_start(nb)), panel(true), panel(false)) : panel(false));
  } else if (panel_at_a_time) {
    tiles = For(p, nb_start(nb), nb_end(nb), LoopKind::kSerial,
                Block({pack_panels(p, p + 1, k0, k1, LoopKind::kSerial, nb),
                       For(mt, 0, Mt, LoopKind::kSerial, tile)}));
  } else {
    tiles = For(mt, mb_start(mb), mb_end(mb), LoopKind::kSerial,
                For(p, nb_start(nb), nb_end(nb), LoopKind::kSerial, tile));
  }
  if (in_place && N % NR != 0) {
    // Only the tail panel, by the task that has it.
    tiles = Block({pack_panels(Max(nb_start(nb), Expr(N / NR)), nb_end(nb), k0, k1, LoopKind::kSerial, in_place_slot),
                   tiles});
  } else if (fused_pack && !panel_at_a_time && !in_place) {
    tiles = Block({pack_panels(nb_start(nb), nb_end(nb), k0, k1, LoopKind::kSerial), tiles});
  }
  Stmt compute = For(t, 0, batch * tasks, g.in_region ? LoopKind::kSerial : LoopKind::kParallel,
                     bind_batch(t / tasks, For(kc, 0, nKC, LoopKind::kSerial, tiles)));
  return pack ? Block({pack, compute}) : compute;
}

}  // namespace keel::codegen
