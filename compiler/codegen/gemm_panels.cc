// compiler/codegen/gemm_panels.cc — see gemm_panels.h.
#include "compiler/codegen/gemm_panels.h"

#include <algorithm>
#include <cstring>

namespace keel::codegen {
namespace {

// Moves every element between the row-major and the panel layout: `pack`
// chooses the direction.
std::vector<uint8_t> Permute(const std::vector<uint8_t>& in, int64_t es, int64_t batch, int64_t m, int64_t k,
                             int64_t mr, bool pack) {
  std::vector<uint8_t> out(in.size());
  const int64_t full = mr > 0 ? m - m % mr : 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t base = b * m * k;
    for (int64_t row = 0; row < m; ++row) {
      const int64_t m0 = row < full ? row - row % mr : full;
      const int64_t rows = row < full ? mr : m - full;
      for (int64_t kk = 0; kk < k; ++kk) {
        const int64_t plain = base + row * k + kk;
        const int64_t panel = base + RowPanelOffset(m0, rows, k, kk, row - m0);
        const int64_t from = pack ? plain : panel, to = pack ? panel : plain;
        std::memcpy(&out[static_cast<size_t>(to * es)], &in[static_cast<size_t>(from * es)], static_cast<size_t>(es));
      }
    }
  }
  return out;
}

// Moves every element of one [K, N] matrix between the row-major layout (its
// transpose when `transposed`) and the column panels; `pack` chooses the
// direction. Packing zero-fills the padding columns past N.
std::vector<uint8_t> PermuteColumns(const std::vector<uint8_t>& in, int64_t es, int64_t k, int64_t n, int64_t nr,
                                    bool transposed, bool pack) {
  const int64_t panels = (n + nr - 1) / nr;
  std::vector<uint8_t> out(static_cast<size_t>((pack ? panels * nr : n) * k * es), 0);
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t col = 0; col < n; ++col) {
      const int64_t plain = transposed ? col * k + kk : kk * n + col;
      const int64_t panel = ColumnPanelOffset(0, panels, k, nr, col / nr, kk, col % nr);
      const int64_t from = pack ? plain : panel, to = pack ? panel : plain;
      std::memcpy(&out[static_cast<size_t>(to * es)], &in[static_cast<size_t>(from * es)], static_cast<size_t>(es));
    }
  }
  return out;
}

}  // namespace

int64_t GemmRowTile(const LowerOptions& o, int64_t m) {
  const int64_t mr = std::max<int64_t>(1, o.gemm_mr);
  return o.gemm_mr_alt > 0 && m % mr != 0 && m % o.gemm_mr_alt == 0 ? o.gemm_mr_alt : mr;
}

int64_t GemmPanelWidth(const LowerOptions& o) { return std::max<int64_t>(1, o.gemm_nr); }

int64_t GemmComputedColumns(const LowerOptions& o, int64_t n) {
  const int64_t nr = GemmPanelWidth(o), tail = n % nr;
  return n - tail + (tail == 0 ? 0 : nr % 2 == 0 && tail <= nr / 2 ? nr / 2 : nr);
}

bool GemmReadsRowPanelsAsB(const LowerOptions& o, int64_t n) {
  const int64_t nr = GemmPanelWidth(o), tail = n % nr;
  return tail == 0 || (nr % 4 == 0 && tail % (nr / 4) == 0);
}

int64_t RowPanelOffset(int64_t m0, int64_t mr, int64_t k_dim, int64_t k, int64_t i) { return m0 * k_dim + k * mr + i; }
Expr RowPanelOffset(const Expr& m0, int64_t mr, int64_t k_dim, const Expr& k, int64_t i) { return m0 * k_dim + k * mr + i; }

std::vector<uint8_t> PackRowPanels(const std::vector<uint8_t>& bytes, int64_t elem_size, int64_t batch, int64_t m,
                                   int64_t k, int64_t mr) {
  return Permute(bytes, elem_size, batch, m, k, mr, true);
}

std::vector<uint8_t> UnpackRowPanels(const std::vector<uint8_t>& bytes, int64_t elem_size, int64_t batch, int64_t m,
                                     int64_t k, int64_t mr) {
  return Permute(bytes, elem_size, batch, m, k, mr, false);
}

int64_t ColumnPanelOffset(int64_t batch, int64_t panels, int64_t k_dim, int64_t nr, int64_t p, int64_t k, int64_t j) {
  return ((batch * panels + p) * k_dim + k) * nr + j;
}
Expr ColumnPanelOffset(const Expr& batch, int64_t panels, int64_t k_dim, int64_t nr, const Expr& p, const Expr& k,
                       const Expr& j) {
  return ((batch * panels + p) * k_dim + k) * nr + j;
}

std::vector<uint8_t> PackColumnPanels(const std::vector<uint8_t>& bytes, int64_t es, int64_t k, int64_t n, int64_t nr,
                                      bool transposed) {
  return PermuteColumns(bytes, es, k, n, nr, transposed, true);
}

std::vector<uint8_t> UnpackColumnPanels(const std::vector<uint8_t>& bytes, int64_t es, int64_t k, int64_t n,
                                        int64_t nr) {
  return PermuteColumns(bytes, es, k, n, nr, false, false);
}

}  // namespace keel::codegen
