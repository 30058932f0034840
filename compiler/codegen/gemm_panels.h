// compiler/codegen/gemm_panels.h — the panel layouts of the blocked GEMM's
// operands (lower_gemm.cc): the row panels of A (the weights of a convolution),
// in which the micro-kernel reads A as one contiguous stream, and the column
// panels of B (the weights of a MatMul or Gemm, and the layout the GEMM packs
// any other B into at run time).
//
// The micro-kernel computes an MR x NR register tile: per k step it broadcasts
// A(m0 + i, k) for its MR rows i. With A row-major [M, K] those are MR streams
// K floats apart (18 KB for a 512-channel 3x3 convolution), which the hardware
// prefetchers do not keep up with. In the panel layout the MR values of a step
// are adjacent and the steps follow each other:
//   rows [0, M - M % MR): panels of MR rows, panel t = rows [t*MR, t*MR + MR),
//     stored as [K][MR] at element offset t*MR*K;
//   the last M % MR rows (if any): one panel stored as [K][M % MR] at offset
//     (M - M % MR) * K.
// So the tile at row m0 with mr rows (MR, or M % MR for the last) reads
// A(m0 + i, k) at m0 * K + k * mr + i, and the layout has exactly M * K
// elements (no padding): a packed tensor keeps its shape and size. A stack of
// `batch` such matrices (a grouped convolution's groups, Winograd's (m+2)^2
// transformed filters) is packed matrix by matrix.
//
// Column panels of B [K, N] (NR columns per panel, the micro-kernel's width):
// panel p holds columns [p*NR, p*NR + NR) as [K][NR] at element offset
// p*K*NR, so a register tile's k step reads its NR values of B as one vector
// and the steps follow each other; the last panel is zero padded past N, so
// the layout has ceil(N / NR) * K * NR elements. A batch of such matrices is
// stored matrix after matrix.
//
// The compiler packs constant weights this way once (ops/packed_weight.h); the
// reference evaluator unpacks them. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/codegen/kernel_ir.h"
#include "compiler/codegen/lower.h"

namespace keel::codegen {

// The register tile's row count the blocked GEMM uses for an M-row product:
// options.gemm_mr, or gemm_mr_alt when that divides M and gemm_mr does not.
int64_t GemmRowTile(const LowerOptions& options, int64_t m);
// The B column panels' width: the register tile's column count (options.gemm_nr).
int64_t GemmPanelWidth(const LowerOptions& options);
// The columns the blocked GEMM computes for `n` (lower_gemm.cc): whole panels, except a tail of
// at most half a panel (N % NR <= NR / 2), which has register tiles of half a panel's width.
// (A narrow tail packed at compile time computes only its own columns; not counted here.)
int64_t GemmComputedColumns(const LowerOptions& options, int64_t n);
// Whether a constant B of `n` columns stored as the row panels of its [n, K]
// transpose (NR rows a panel, the last n % NR rows a narrow panel of their
// own) is what the GEMM reads in place (GemmOperands::b_packed_narrow_tail):
// n % NR == 0, or a tail of whole quarter panels (8, 16 or 24 lanes on AVX-512).
bool GemmReadsRowPanelsAsB(const LowerOptions& options, int64_t n);

// Element offset of A(m0 + i, k) inside one packed [M, K] matrix, for the
// register tile at row m0 that has `mr` rows (see above).
// The Expr form is what the micro-kernel's loads use (one definition of the layout).
int64_t RowPanelOffset(int64_t m0, int64_t mr, int64_t k_dim, int64_t k, int64_t i);
Expr RowPanelOffset(const Expr& m0, int64_t mr, int64_t k_dim, const Expr& k, int64_t i);

// `batch` row-major [M, K] matrices of `elem_size`-byte elements (bytes.size()
// must be batch * M * K * elem_size) into the panel layout with `mr` rows per
// panel, and back. Byte moves only: the values are unchanged.
std::vector<uint8_t> PackRowPanels(const std::vector<uint8_t>& bytes, int64_t elem_size, int64_t batch, int64_t m,
                                   int64_t k, int64_t mr);
std::vector<uint8_t> UnpackRowPanels(const std::vector<uint8_t>& bytes, int64_t elem_size, int64_t batch, int64_t m,
                                     int64_t k, int64_t mr);

// Element offset of B(k, p*NR + j) inside the column panels of product `batch`
// (see above; Np = ceil(N / NR) panels of K x NR). The Expr form is what the
// GEMM's packing and micro-kernel use (one definition of the layout).
int64_t ColumnPanelOffset(int64_t batch, int64_t panels, int64_t k_dim, int64_t nr, int64_t p, int64_t k, int64_t j);
Expr ColumnPanelOffset(const Expr& batch, int64_t panels, int64_t k_dim, int64_t nr, const Expr& p, const Expr& k,
                       const Expr& j);

// One [K, N] matrix of `elem_size`-byte elements (row-major; `transposed`: the
// bytes are its transpose, [N, K] row-major, as a Gemm's transB operand) into
// column panels of `nr` columns, zero padded past N; and column panels back
// into the row-major [K, N] matrix. Byte moves only: the values are unchanged.
// bytes.size() must be K * N * elem_size (pack) or ceil(N / nr) * K * nr *
// elem_size (unpack).
std::vector<uint8_t> PackColumnPanels(const std::vector<uint8_t>& bytes, int64_t elem_size, int64_t k, int64_t n,
                                      int64_t nr, bool transposed);
std::vector<uint8_t> UnpackColumnPanels(const std::vector<uint8_t>& bytes, int64_t elem_size, int64_t k, int64_t n,
                                        int64_t nr);

}  // namespace keel::codegen
