// compiler/codegen/winograd_matrices.h — the transform matrices of Winograd's
// minimal filtering F(m, 3) (Lavin & Gray, "Fast Algorithms for Convolutional
// Neural Networks", 2016) for m = 2 (4x4 tiles) and m = 4 (6x6 tiles), the one
// definition read by the compile-time weight transform (compiler/ops/winograd.h)
// and by the generated kernel (lower_winograd.cc).
//
// With n = m + 2, a 3x3 stride-1 convolution of an n x n input tile d by a
// 3x3 filter g gives the m x m output tile
//     Y = A^T [ (G g G^T) ⊙ (B^T d B) ] A.
// U = G g G^T is the transformed weight. `recover` (3 x n) is a left inverse
// of G (recover · G = I), so g = recover · U · recover^T gives the weight back
// (the reference evaluator's view of a transformed-weight convolution). Points:
// F(2,3) 0, ±1, ∞; F(4,3) 0, ±1, ±2, ∞ (every entry of B^T and A^T is a
// small integer, so the input and output transforms are exact up to rounding).
//
// Thread-safety: constant data.
#pragma once

#include <cstdint>

namespace keel::codegen {

struct WinogradMatrices {
  int64_t m = 0;           // output tile side
  int64_t n = 0;           // input tile side (m + 2)
  const double* bt;        // n x n, row-major: B^T
  const double* g;         // n x 3: G
  const double* at;        // m x n: A^T
  const double* recover;   // 3 x n: left inverse of G
};

namespace winograd_detail {
inline constexpr double kBt2[16] = {1, 0, -1, 0,  //
                                    0, 1, 1, 0,   //
                                    0, -1, 1, 0,  //
                                    0, 1, 0, -1};
inline constexpr double kG2[12] = {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1};
inline constexpr double kAt2[8] = {1, 1, 1, 0, 0, 1, -1, -1};
inline constexpr double kRecover2[12] = {1, 0, 0, 0, 0, 1, -1, 0, 0, 0, 0, 1};

inline constexpr double kBt4[36] = {4, 0, -5, 0, 1, 0,    //
                                    0, -4, -4, 1, 1, 0,   //
                                    0, 4, -4, -1, 1, 0,   //
                                    0, -2, -1, 2, 1, 0,   //
                                    0, 2, -1, -2, 1, 0,   //
                                    0, 4, 0, -5, 0, 1};
inline constexpr double kG4[18] = {1.0 / 4,  0,         0,          //
                                   -1.0 / 6, -1.0 / 6,  -1.0 / 6,   //
                                   -1.0 / 6, 1.0 / 6,   -1.0 / 6,   //
                                   1.0 / 24, 1.0 / 12,  1.0 / 6,    //
                                   1.0 / 24, -1.0 / 12, 1.0 / 6,    //
                                   0,        0,         1};
inline constexpr double kAt4[24] = {1, 1, 1, 1, 1, 0,    //
                                    0, 1, -1, 2, -2, 0,  //
                                    0, 1, 1, 4, 4, 0,    //
                                    0, 1, -1, 8, -8, 1};
inline constexpr double kRecover4[18] = {4, 0, 0, 0, 0, 0, 0, -3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 1};
}  // namespace winograd_detail

// The matrices of F(m, 3); m must be 2 or 4 (anything else: m == 0 in the result).
inline WinogradMatrices WinogradFor(int64_t m) {
  using namespace winograd_detail;
  if (m == 2) return {2, 4, kBt2, kG2, kAt2, kRecover2};
  if (m == 4) return {4, 6, kBt4, kG4, kAt4, kRecover4};
  return {0, 0, nullptr, nullptr, nullptr, nullptr};
}

}  // namespace keel::codegen
