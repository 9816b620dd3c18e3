#ifndef GDN_IMPL_HOST_ALGEBRA_HPP
#define GDN_IMPL_HOST_ALGEBRA_HPP

/// \file host_algebra.hpp
/// \brief The host's mapping of the chunk algebra's step 1 and Gram entries
/// (one thread holds a tile of every row, TeamShape's default), in the
/// canonical order of chunk_algebra.hpp.
///
/// SIMD lanes never split a sum: step 1 runs a lane per state column, each
/// lane computing its column's block chains and their tree; the Gram
/// entries and norms run a lane per canonical block over keys and queries
/// staged block-interleaved (`interleave_blocks`), then the tree. Every
/// accumulator is a scalar of the simd loop's body, so the compiler keeps it
/// in a vector register (an array accumulator would round-trip through
/// memory on every fma). The bits are those of the GPU's lane groups.

#include <gdn/impl/backend.hpp>
#include <gdn/impl/chunk_algebra.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>

namespace gdn {
namespace Impl {

/// block_tree's sum of the `NB` values `b[0], b[ld], b[2 ld], ...`, written
/// out without loops (the tree of the even-numbered half plus the tree of
/// the odd-numbered half: ((b0+b4)+(b2+b6))+((b1+b5)+(b3+b7)) for NB = 8), so
/// that it vectorises across the columns of a simd loop.
template <int Off, int Stride, int NB>
KOKKOS_INLINE_FUNCTION float strided_tree(const float* b, int ld) {
  if constexpr (Stride >= NB) {
    return b[Off * ld];
  } else {
    return strided_tree<Off, 2 * Stride, NB>(b, ld) + strided_tree<Off + Stride, 2 * Stride, NB>(b, ld);
  }
}

/// Step 1 for token `j` on a thread that holds all `Rows == Dk` rows of
/// `Cols` columns (`st`), writing `P` and `R` of columns `col0 ..` to
/// scratch. Per canonical block, a SIMD lane per column runs the block's
/// fma chains over its 16 rows (from 0, rows ascending) into the block
/// sums; then a lane per column adds the blocks in block_tree's order.
template <int Rows, int Cols, class S>
KOKKOS_INLINE_FUNCTION void host_project(const float (&st)[Rows][Cols], const S& s, int j,
                                         int col0) {
  constexpr int Dk = S::kDk;
  constexpr int kLd = S::kCols;
  constexpr int kNB = Dk / kBlockRows;
  static_assert(Rows == Dk, "the thread holds every row");
  static_assert(S::kLd == Dk, "keys and queries staged without padding");
  const float* const kj = s.k + j * Dk;
  const float* const qj = s.q + j * Dk;
  float bk[kNB][Cols], bq[kNB][Cols];
  for (int b = 0; b < kNB; ++b) {
    const float* const kb = kj + b * kBlockRows;
    const float* const qb = qj + b * kBlockRows;
    GDN_SIMD
    for (int c = 0; c < Cols; ++c) {
      float ak = 0.0f, aq = 0.0f;
      GDN_HOST_UNROLL
      for (int r = 0; r < kBlockRows; ++r) {
        ak = fmaf(st[b * kBlockRows + r][c], kb[r], ak);
        aq = fmaf(st[b * kBlockRows + r][c], qb[r], aq);
      }
      bk[b][c] = ak;
      bq[b][c] = aq;
    }
  }
  float* const pd = s.p + j * kLd + col0;
  float* const rd = s.r + j * kLd + col0;
  GDN_SIMD
  for (int c = 0; c < Cols; ++c) {
    pd[c] = strided_tree<0, 1, kNB>(&bk[0][c], Cols);
    rd[c] = strided_tree<0, 1, kNB>(&bq[0][c], Cols);
  }
}

/// `x` ([D] floats, blocks of 16 rows) block-interleaved into `xt`:
/// `xt[r * (D / 16) + b] = x[16 b + r]`, so that row `r` of every block is
/// one contiguous vector.
template <int D>
KOKKOS_INLINE_FUNCTION void interleave_blocks(const float* x, float* xt) {
  constexpr int kNB = D / kBlockRows;
  for (int b = 0; b < kNB; ++b) {
    for (int r = 0; r < kBlockRows; ++r) xt[r * kNB + b] = x[b * kBlockRows + r];
  }
}

/// `x . y` in the canonical order from block-interleaved `xt`, `yt`: a SIMD
/// lane per block runs its fma chain over the 16 rows, then block_tree.
template <int D>
KOKKOS_INLINE_FUNCTION float interleaved_dot(const float* xt, const float* yt) {
  constexpr int kNB = D / kBlockRows;
  float p[kNB];
  GDN_SIMD
  for (int b = 0; b < kNB; ++b) {
    float acc = 0.0f;
    GDN_HOST_UNROLL
    for (int r = 0; r < kBlockRows; ++r) acc = fmaf(xt[r * kNB + b], yt[r * kNB + b], acc);
    p[b] = acc;
  }
  return block_tree(p);
}

/// The key head's dots of every pair i <= j < n of a chunk and its norms:
/// the staged keys and queries are interleaved once, then each pair's dots
/// are interleaved_dot; `kinv_j` and `qf_j` go to scratch, and
/// `pair(j, i, kk, kq)` gets `kk = k_i . k_j` (0 for i == j) and `kq = k_i . q_j`.
template <class S, class Pair>
KOKKOS_INLINE_FUNCTION void host_chunk_dots(const S& s, int n, float q_scale, const Pair& pair) {
  constexpr int Dk = S::kDk;
  constexpr int C = S::kC;
  static_assert(S::kLd == Dk, "keys and queries staged without padding");
  float kt[C * Dk], qt[C * Dk];
  for (int j = 0; j < n; ++j) {
    interleave_blocks<Dk>(s.k + j * Dk, kt + j * Dk);
    interleave_blocks<Dk>(s.q + j * Dk, qt + j * Dk);
  }
  for (int j = 0; j < n; ++j) {
    const float* const kj = kt + j * Dk;
    const float* const qj = qt + j * Dk;
    for (int i = 0; i <= j; ++i) {
      const float* const ki = kt + i * Dk;
      const float kq = interleaved_dot<Dk>(ki, qj);
      const float kk = i < j ? interleaved_dot<Dk>(ki, kj) : 0.0f;
      if (i == j) {
        s.kinv[j] = norm_factor(interleaved_dot<Dk>(kj, kj), 1.0f);
        s.qf[j] = norm_factor(interleaved_dot<Dk>(qj, qj), q_scale);
      }
      pair(j, i, kk, kq);
    }
  }
}

/// Step 2 and the norms of a whole chunk of `n` tokens for one value head
/// (the host's chunk_coefficients over every pair i <= j < n): writes akk,
/// akq, kinv, qf and gam as chunk_coefficients.
template <class S>
KOKKOS_INLINE_FUNCTION void host_chunk_coefficients(const S& s, int n, float q_scale) {
  host_chunk_dots(s, n, q_scale,
                  [&](int j, int i, float kk, float kq) { head_pair_coefficients(s, j, i, kk, kq); });
}

/// The key head's dots and norms of a whole chunk (the host's key_pair_dots
/// over every pair) into the KeyDots scratch: `dkk(j, i)` (i < j), `dkq(j, i)`,
/// `kinv_j`, `qf_j`.
template <class S>
KOKKOS_INLINE_FUNCTION void host_key_dots(const S& s, int n, float q_scale) {
  constexpr int C = S::kC;
  host_chunk_dots(s, n, q_scale, [&](int j, int i, float kk, float kq) {
    s.dkk[j * C + i] = kk;
    s.dkq[j * C + i] = kq;
  });
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_HOST_ALGEBRA_HPP
