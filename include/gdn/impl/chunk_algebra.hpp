#ifndef GDN_IMPL_CHUNK_ALGEBRA_HPP
#define GDN_IMPL_CHUNK_ALGEBRA_HPP

/// \file chunk_algebra.hpp
/// \brief The chunked recurrence of docs/design.md (steps 1-4), shared by the
/// forward, verify and the fold. This file is the exactness argument.
///
/// A chunk of `n <= chunk_tokens` tokens from state `S0`:
/// 1. `P[:, j] = S0^T k_j`, `R[:, j] = S0^T q_j` (`project`: the only sum
///    whose order depends on the backend, through the team shape).
/// 2. decay products `g(j, i) = a_{i+1} * ... * a_j` and `Gam_j = a_0 * ... * a_j`,
///    multiplied left to right (`chunk_coefficients`).
/// 3. `u_j` and `out_j` in token order (`delta_readout` a column at a time on
///    GPUs; on the host a triangular solve and products over the whole tile,
///    host_dense.hpp).
/// 4. the state after the chunk: `S = fma(k_j, u_j, S * a_j)` for j in order
///    (`fold_record`, also the fold kernel's update).
///
/// Every operation here is an explicit `fmaf`, or a single multiply, add,
/// square root or division whose result does not feed an add, so contraction
/// by the compiler (`-ffp-contract`, nvcc `--fmad`) has nothing to change: the
/// bits depend only on the order written here (the host's step 3,
/// host_dense.hpp, states its own order). The sums over a head dimension
/// (step 1, the Gram entries, the norms) are split over a lane group, an
/// order fixed per backend by TeamShape; everything else is one thread per
/// value, the same code on every backend but for the host's step 3.

#include <gdn/impl/backend.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>

namespace gdn {
namespace Impl {

/// `sum_i x[i] * y[i]` over `D` floats by a lane group, every lane of the
/// group ending with the same bits; the Gram entries and the norms. Several
/// lanes (GPU): lane `l` sums its rows `lane_row<Lanes>(l, i)` (i ascending,
/// element i into partial i % 4, partials combined as (p0 + p1) + (p2 + p3)),
/// then lane_all_sum. One lane (host): element i into partial i % 16 (one
/// 512-bit vector), partials combined in halves (p[e] + p[e + 8], then
/// + 4, + 2, + 1).
template <int Lanes, int D>
KOKKOS_FORCEINLINE_FUNCTION float group_dot(const float* x, const float* y, int lane,
                                            unsigned mask) {
  if constexpr (Lanes == 1 && D % 16 == 0) {
    (void)lane;
    (void)mask;
    float p[16];
    GDN_SIMD
    for (int e = 0; e < 16; ++e) p[e] = 0.0f;
    for (int i = 0; i < D; i += 16) {
      GDN_SIMD
      for (int e = 0; e < 16; ++e) p[e] = fmaf(x[i + e], y[i + e], p[e]);
    }
    for (int w = 8; w >= 1; w /= 2) {
      for (int e = 0; e < w; ++e) p[e] = p[e] + p[e + w];
    }
    return p[0];
  } else {
    constexpr int kRows = D / Lanes;
    static_assert(kRows % 4 == 0, "four partial sums");
    float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    GDN_UNROLL
    for (int i = 0; i < kRows; i += 4) {
      float a[4], b[4];
      load4(x + lane_row<Lanes>(lane, i), a);
      load4(y + lane_row<Lanes>(lane, i), b);
      GDN_UNROLL
      for (int e = 0; e < 4; ++e) p[e] = fmaf(a[e], b[e], p[e]);
    }
    return lane_all_sum<Lanes>((p[0] + p[1]) + (p[2] + p[3]), mask);
  }
}

/// `num / sqrt(sum_sq + 1e-6)`: a key's inverse norm (num = 1) or a query's
/// factor (num = 1/sqrt(Dk)); one correctly rounded square root and division.
KOKKOS_FORCEINLINE_FUNCTION float norm_factor(float sum_sq, float num) {
  return num / sqrtf(sum_sq + 1e-6f);
}

/// u = beta * (v - kv*kinv) * kinv, with v - kv*kinv as one fma.
KOKKOS_FORCEINLINE_FUNCTION float delta_factor(float v, float kv, float beta, float kinv) {
  return (beta * fmaf(-kv, kinv, v)) * kinv;
}

/// Step 4 for one state element and one record: `fma(k, u, S * a)`.
KOKKOS_FORCEINLINE_FUNCTION float fold_record(float s, float k, float u, float a) {
  return fmaf(k, u, s * a);
}

/// \brief Staged inputs and intermediates of one chunk in team scratch.
///
/// Row-major, `C = chunk_tokens` rows: `k`, `q` [C][Dk] (raw), `v`, `p`, `r`,
/// `u` [C][kTileCols] (the team's tile of columns), per-token scalars [C]
/// (`a` decay, `beta`, `kinv`, `qf`, `gam` = Gam_j), and the step-3
/// coefficients [C][C]: `akk(j, i) = g(j, i) * (k_i . k_j)` for i < j,
/// `akq(j, i) = g(j, i) * (k_i . q_j)` for i <= j.
template <int Dk, int C>
struct ChunkScratch {
  static constexpr int kVec = C * Dk;
  static constexpr int kTile = C * kTileCols;
  static constexpr int kPad4 = (C + 3) / 4 * 4;
  static constexpr int kCoef = C * C;
  /// Floats of scratch used (every region starts 16-byte aligned).
  static constexpr int kFloats = 2 * kVec + 4 * kTile + 5 * kPad4 + 2 * ((kCoef + 3) / 4 * 4);

  float* k;
  float* q;
  float* v;
  float* p;
  float* r;
  float* u;
  float* a;
  float* beta;
  float* kinv;
  float* qf;
  float* gam;
  float* akk;
  float* akq;

  /// Carve the regions out of `base` (16-byte aligned, kFloats long).
  KOKKOS_INLINE_FUNCTION explicit ChunkScratch(float* base) {
    k = base;
    q = k + kVec;
    v = q + kVec;
    p = v + kTile;
    r = p + kTile;
    u = r + kTile;
    a = u + kTile;
    beta = a + kPad4;
    kinv = beta + kPad4;
    qf = kinv + kPad4;
    gam = qf + kPad4;
    akk = gam + kPad4;
    akq = akk + (kCoef + 3) / 4 * 4;
  }
};

/// Step 2 and the norms for token pair `(j, i)` of a chunk (i <= j < n), by
/// one lane group (its lanes call it together): lane 0 writes `akk(j, i)`
/// (i < j) and `akq(j, i)`; for i == j also `kinv_j`, `qf_j` and `Gam_j`.
/// Reads the staged k, q, a.
template <int Lanes, int Dk, int C>
KOKKOS_FORCEINLINE_FUNCTION void chunk_coefficients(const ChunkScratch<Dk, C>& s, int j, int i,
                                                    int lane, unsigned mask, float q_scale) {
  const float* kj = s.k + j * Dk;
  const float* ki = s.k + i * Dk;
  const float* qj = s.q + j * Dk;
  const float kq = group_dot<Lanes, Dk>(ki, qj, lane, mask);
  const float kk = i < j ? group_dot<Lanes, Dk>(ki, kj, lane, mask) : 0.0f;
  float kn = 0.0f, qn = 0.0f;
  if (i == j) {
    kn = group_dot<Lanes, Dk>(kj, kj, lane, mask);
    qn = group_dot<Lanes, Dk>(qj, qj, lane, mask);
  }
  if (lane != 0) return;
  // g(j, i) = a_{i+1} * ... * a_j and Gam_j = a_0 * ... * a_j, left to right
  // (unrolled over the chunk, so the decays are loaded together).
  float g = 1.0f, gam = s.a[0];
  GDN_UNROLL
  for (int m = 1; m < C; ++m) {
    if (m > i && m <= j) g = g * s.a[m];
    if (m <= j) gam = gam * s.a[m];
  }
  if (i < j) s.akk[j * C + i] = g * kk;
  s.akq[j * C + i] = g * kq;
  if (i == j) {
    s.kinv[j] = norm_factor(kn, 1.0f);
    s.qf[j] = norm_factor(qn, q_scale);
    s.gam[j] = gam;
  }
}

/// Columns a thread sums or folds together: all of its columns on a GPU
/// (registers), blocks of 16 (one 512-bit vector) on the host, whose tile
/// lives in L1. Only the loop order depends on it, never a sum's order.
template <int Cols>
constexpr int kColBlock = Cols < 16 ? Cols : 16;

/// Step 1 for one token: this thread's partial sums of `P[:, j]` and
/// `R[:, j]` over its fragment rows (in row order), summed over the lane
/// group by lane_reduce_scatter. Lane `l` (CUDA) ends with P of fragment
/// column l (l < Cols) or R of column l - Cols and writes it to scratch; the
/// host's one lane writes all of them.
template <int Lanes, int Rows, int Cols, int Dk, int C>
KOKKOS_FORCEINLINE_FUNCTION void project(const float (&st)[Rows][Cols],
                                         const ChunkScratch<Dk, C>& s, int j, int lane, int col0) {
  constexpr int CB = kColBlock<Cols>;
  const float* kj = s.k + j * Dk;
  const float* qj = s.q + j * Dk;
  GDN_UNROLL
  for (int cb = 0; cb < Cols; cb += CB) {
    float acc[2 * CB];
    GDN_UNROLL
    GDN_SIMD
    for (int c = 0; c < 2 * CB; ++c) acc[c] = 0.0f;
    GDN_UNROLL
    for (int i = 0; i < Rows; i += 4) {
      float kr[4], qr[4];
      load4(kj + lane_row<Lanes>(lane, i), kr);
      load4(qj + lane_row<Lanes>(lane, i), qr);
      GDN_UNROLL
      for (int e = 0; e < 4; ++e) {
        GDN_UNROLL
        GDN_SIMD
        for (int c = 0; c < CB; ++c) {
          acc[c] = fmaf(st[i + e][cb + c], kr[e], acc[c]);
          acc[CB + c] = fmaf(st[i + e][cb + c], qr[e], acc[CB + c]);
        }
      }
    }
    if constexpr (Lanes == 1) {
      GDN_SIMD
      for (int c = 0; c < CB; ++c) {
        s.p[j * kTileCols + col0 + cb + c] = acc[c];
        s.r[j * kTileCols + col0 + cb + c] = acc[CB + c];
      }
    } else {
      static_assert(CB == Cols, "a GPU thread sums all of its columns at once");
      const float sum = lane_reduce_scatter<Lanes>(acc, lane);
      float* dst = lane < Cols ? s.p : s.r;
      dst[j * kTileCols + col0 + (lane % Cols)] = sum;
    }
  }
}

/// Step 3 for one tile column `c`, delta factors and outputs together (the
/// GPU mapping: a thread per column). Delta factors:
/// `kv_j = Gam_j * P[c, j] + sum_{i<j} akk(j, i) * u_i[c]` (i ascending, one fma
/// each) and `u_j[c] = beta_j * (v_j[c] - kv_j * kinv_j) * kinv_j`, computed
/// right-looking: once u_i is known it enters every later kv_j, which adds
/// the same terms in the same order as the sum written above, while the
/// dependent chain is only n steps long. Each `u_i` also enters every readout
/// `o_j` (j >= i), which adds the terms of the readout in its order
/// (`Gam_j * R[c, j]` first, then i ascending, one fma each):
/// `out_j[c] = qf_j * o_j`. Writes `u_j[c]` to scratch and hands each
/// `(j, u_j[c])` to `emit_u`, then each `(j, out_j[c])` to `emit_out`.
/// `NC >= n` bounds the token loops at compile time (the caller picks the
/// smallest of a few bounds, so short windows need few registers); it
/// changes no operation.
template <int NC, int Dk, int C, class EmitU, class EmitOut>
KOKKOS_FORCEINLINE_FUNCTION void delta_readout(const ChunkScratch<Dk, C>& s, int n, int c,
                                               const EmitU& emit_u, const EmitOut& emit_out) {
  static_assert(NC <= C, "at most a chunk");
  float kv[NC], o[NC];
  GDN_UNROLL
  for (int j = 0; j < NC; ++j) {
    if (j < n) {
      const float gam = s.gam[j];
      kv[j] = gam * s.p[j * kTileCols + c];
      o[j] = gam * s.r[j * kTileCols + c];
    }
  }
  GDN_UNROLL
  for (int i = 0; i < NC; ++i) {
    if (i < n) {
      const float ui = delta_factor(s.v[i * kTileCols + c], kv[i], s.beta[i], s.kinv[i]);
      s.u[i * kTileCols + c] = ui;
      emit_u(i, ui);
      GDN_UNROLL
      for (int j = i + 1; j < NC; ++j) {
        if (j < n) kv[j] = fmaf(s.akk[j * C + i], ui, kv[j]);
      }
      GDN_UNROLL
      for (int j = i; j < NC; ++j) {
        if (j < n) o[j] = fmaf(s.akq[j * C + i], ui, o[j]);
      }
    }
  }
  GDN_UNROLL
  for (int j = 0; j < NC; ++j) {
    if (j < n) emit_out(j, s.qf[j] * o[j]);
  }
}

/// Step 4 on a thread's fragment: records j = 0 .. n-1 in order, key rows
/// from `k + j * k_stride` (this lane's rows), delta factors from
/// `u + j * u_stride` (this thread's columns), decays `a[j * a_stride]`.
/// Every element takes the records in the same order; a GPU thread sweeps
/// its registers once per record, the host applies all records to one
/// row's block of 16 columns while it is in a register.
template <int Lanes, int Rows, int Cols>
KOKKOS_FORCEINLINE_FUNCTION void fold_fragment(float (&st)[Rows][Cols], int lane, int n,
                                               const float* k, int k_stride, const float* u,
                                               int u_stride, const float* a, int a_stride) {
  if constexpr (Lanes == 1) {
    constexpr int CB = kColBlock<Cols>;
    for (int cb = 0; cb < Cols; cb += CB) {
      for (int i = 0; i < Rows; ++i) {
        float x[CB];
        GDN_SIMD
        for (int c = 0; c < CB; ++c) x[c] = st[i][cb + c];
        for (int j = 0; j < n; ++j) {
          const float kj = k[j * k_stride + i], aj = a[j * a_stride];
          const float* uj = u + j * u_stride + cb;
          GDN_SIMD
          for (int c = 0; c < CB; ++c) x[c] = fold_record(x[c], kj, uj[c], aj);
        }
        GDN_SIMD
        for (int c = 0; c < CB; ++c) st[i][cb + c] = x[c];
      }
    }
  } else {
    for (int j = 0; j < n; ++j) {
      const float aj = a[j * a_stride];
      float uj[Cols];
      GDN_UNROLL
      for (int c = 0; c < Cols; ++c) uj[c] = u[j * u_stride + c];
      GDN_UNROLL
      for (int i = 0; i < Rows; i += 4) {
        float kr[4];
        load4(k + j * k_stride + lane_row<Lanes>(lane, i), kr);
        GDN_UNROLL
        for (int e = 0; e < 4; ++e) {
          GDN_UNROLL
          for (int c = 0; c < Cols; ++c) st[i + e][c] = fold_record(st[i + e][c], kr[e], uj[c], aj);
        }
      }
    }
  }
}

/// `N` consecutive floats of team scratch (16-byte aligned) in load4 steps.
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void load_scratch(const float* p, float (&d)[N]) {
  static_assert(N % 4 == 0, "whole 16-byte words");
  GDN_UNROLL
  for (int i = 0; i < N; i += 4) {
    float t[4];
    load4(p + i, t);
    GDN_UNROLL
    for (int e = 0; e < 4; ++e) d[i + e] = t[e];
  }
}

/// Step 4 on a block of `Rows` x `Cols` state values held by one thread
/// (rows `k` .. of the staged keys, columns `u` .. of the staged delta
/// factors): records j = 0 .. n-1 in order, each swept over the whole block
/// (the fold kernel's GPU mapping; the same fold_record per element as
/// fold_fragment).
template <int Rows, int Cols>
KOKKOS_FORCEINLINE_FUNCTION void fold_block(float (&st)[Rows][Cols], int n, const float* k,
                                            int k_stride, const float* u, int u_stride,
                                            const float* a) {
  static_assert(Rows % 4 == 0 && Cols % 4 == 0, "16-byte scratch loads");
  for (int j = 0; j < n; ++j) {
    const float aj = a[j];
    float uj[Cols], kr[Rows];
    load_scratch(u + j * u_stride, uj);
    load_scratch(k + j * k_stride, kr);
    GDN_UNROLL
    for (int i = 0; i < Rows; ++i) {
      GDN_UNROLL
      for (int c = 0; c < Cols; ++c) st[i][c] = fold_record(st[i][c], kr[i], uj[c], aj);
    }
  }
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_CHUNK_ALGEBRA_HPP
