#ifndef GDN_IMPL_CORE_TOKEN_STEP_HPP
#define GDN_IMPL_CORE_TOKEN_STEP_HPP

/// \file token_step.hpp
/// \brief The per-token recurrence of docs/design.md section 2 in its
/// canonical order: the one place the arithmetic of the exact path is
/// written. The forward, verify, lazy and fold kernels on every backend call
/// these functions; this file is the exactness argument.
///
/// One token (raw query q, raw key k, value v, decay a, beta) on a state S:
///
///     qf   = (1/sqrt(Dk)) / sqrt(sum_i q[i]^2 + 1e-6)     query_factor
///     kinv = 1 / sqrt(sum_i k[i]^2 + 1e-6)                 key_inv_norm
///     S    = S * a                                         decay_line
///     kv   = S^T k                                         (token_sweep)
///     u    = beta * (v - kv*kinv) * kinv                   delta_factor
///     S    = fma(k, u, S)                                  update_line
///     out  = qf * S^T q                                    (token_sweep)
///
/// The fold applies a record (k, u, a) with decay_line then update_line,
/// the same two roundings per element, so it replays the forward's state.
///
/// **The canonical order.** Every sum over the key dimension (kv, out, the
/// squared norms) splits its `Dk` terms into blocks of kBlockRows = 16
/// consecutive rows; each block is an fma chain from 0 in ascending rows;
/// the block sums meet in one fixed tree (b[e] + b[e + NB/2]
/// first, then halving; eight blocks give ((b0+b4)+(b2+b6))+((b1+b5)+(b3+b7))).
/// A thread may hold several consecutive blocks of a column (`BPL`, blocks
/// per lane) and a column's blocks may be spread over `Lanes` lanes (lane
/// `l` holds blocks [l*BPL, (l+1)*BPL)): the lanes' bits are the high bits
/// of a block's index, so the butterfly over the lanes (scatter_combine,
/// with lane_xor of backend.hpp) is the top of the tree and the local tree
/// its bottom.
/// Additions commute, so every lane that ends with a sum holds the same bits,
/// whatever the mapping: the bits depend on the mathematics only.
///
/// Every operation here is an explicit `fmaf`, or a single multiply, add,
/// square root or division whose result does not feed an add, so compiler
/// contraction (`-ffp-contract`, nvcc `--fmad`) has nothing to change.

#include <gdn/impl/backend/backend.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>

namespace gdn {
namespace Impl {

/// Rows of one canonical block of a key-dimension sum.
constexpr int kBlockRows = 16;

/// `num / sqrt(sum_sq + 1e-6)`: one correctly rounded square root and division.
KOKKOS_FORCEINLINE_FUNCTION float norm_factor(float sum_sq, float num) {
  return num / sqrtf(sum_sq + 1e-6f);
}

/// kinv = 1 / sqrt(sum k^2 + 1e-6)
KOKKOS_FORCEINLINE_FUNCTION float key_inv_norm(float sum_sq) { return norm_factor(sum_sq, 1.0f); }

/// qf = (1/sqrt(Dk)) / sqrt(sum q^2 + 1e-6) (`q_scale` = 1/sqrt(Dk) as a float)
KOKKOS_FORCEINLINE_FUNCTION float query_factor(float sum_sq, float q_scale) {
  return norm_factor(sum_sq, q_scale);
}

/// u = beta * (v - kv*kinv) * kinv, with v - kv*kinv as one fma.
KOKKOS_FORCEINLINE_FUNCTION float delta_factor(float v, float kv, float beta, float kinv) {
  return (beta * fmaf(-kv, kinv, v)) * kinv;
}

/// S * a, one rounded product.
KOKKOS_FORCEINLINE_FUNCTION float decay_line(float s, float a) { return s * a; }

/// fma(k, u, S): the update of a decayed state element.
KOKKOS_FORCEINLINE_FUNCTION float update_line(float k, float u, float s_decayed) {
  return fmaf(k, u, s_decayed);
}

/// A record (k, u, a) applied to one state element: update_line(k, u, decay_line(S, a)).
KOKKOS_FORCEINLINE_FUNCTION float fold_record(float s, float k, float u, float a) {
  return update_line(k, u, decay_line(s, a));
}

/// Block sum `sum_r x[r] * y[r]` over one block's 16 rows as one fma chain
/// from 0 (`x`, `y` at the block's first row; 16-byte aligned).
KOKKOS_FORCEINLINE_FUNCTION float block_chain(const float* x, const float* y) {
  float acc = 0.0f;
  GDN_UNROLL
  for (int r = 0; r < kBlockRows; r += 4) {
    float a[4], b[4];
    load4(x + r, a);
    load4(y + r, b);
    GDN_UNROLL
    for (int e = 0; e < 4; ++e) acc = fmaf(a[e], b[e], acc);
  }
  return acc;
}

/// Columns a lane holds after scatter_combine: `CB / Lanes` when the lanes
/// outnumber no columns, otherwise one column that `Lanes / CB` lanes share.
template <int Lanes, int CB>
KOKKOS_FORCEINLINE_FUNCTION constexpr int own_cols() {
  return CB >= Lanes ? CB / Lanes : 1;
}

/// The butterfly steps of scatter_combine at lane distances D, D/2, ..., 1
/// with `W` columns still held, over one or more arrays of partial sums in
/// step (so that their shuffles overlap). While a lane holds several
/// columns it keeps one half (the upper half where bit D of its lane is set)
/// and sends the other to the lane D away, which sends it the matching half
/// of its own: a reduce-scatter. With one column left the step is a plain
/// butterfly. Each step adds the same two partial sums as the butterfly of
/// every column would, so every result has the bits of the canonical tree.
template <int Stride, int D, int W, int BPL, int CB>
KOKKOS_FORCEINLINE_FUNCTION void scatter_step(float (&acc)[BPL][CB], bool upper) {
  GDN_UNROLL
  for (int lb = 0; lb < BPL; ++lb) {
    if constexpr (W > 1) {
      constexpr int H = W / 2;
      GDN_UNROLL
      for (int c = 0; c < H; ++c) {
        const float send = upper ? acc[lb][c] : acc[lb][c + H];
        const float keep = upper ? acc[lb][c + H] : acc[lb][c];
        acc[lb][c] = keep + lane_xor<Stride>(send, D);
      }
    } else {
      acc[lb][0] = acc[lb][0] + lane_xor<Stride>(acc[lb][0], D);
    }
  }
}

template <int Stride, int D, int W, int BPL, int CB, class... More>
KOKKOS_FORCEINLINE_FUNCTION void scatter_steps(int lane, float (&acc)[BPL][CB], More&... more) {
  if constexpr (D >= 1) {
    const bool upper = (lane & D) != 0;
    scatter_step<Stride, D, W>(acc, upper);
    (scatter_step<Stride, D, W>(more, upper), ...);
    scatter_steps<Stride, D / 2, (W > 1 ? W / 2 : 1)>(lane, acc, more...);
  } else {
    (void)lane;
  }
}

/// The local tree over a lane's `BPL` blocks of its `Own` columns, into `sum`.
template <int Own, int BPL, int CB>
KOKKOS_FORCEINLINE_FUNCTION void local_tree(float (&acc)[BPL][CB], float (&sum)[Own]) {
  GDN_UNROLL
  GDN_HOST_UNROLL
  for (int w = BPL / 2; w >= 1; w /= 2) {
    GDN_UNROLL
    GDN_HOST_UNROLL
    for (int e = 0; e < w; ++e) {
      GDN_SIMD
      for (int c = 0; c < Own; ++c) acc[e][c] = acc[e][c] + acc[e + w][c];
    }
  }
  GDN_SIMD
  for (int c = 0; c < Own; ++c) sum[c] = acc[0][c];
}

/// The first of the `own_cols` consecutive columns that lane `lane` holds
/// after scatter_combine.
template <int Lanes, int CB>
KOKKOS_FORCEINLINE_FUNCTION constexpr int own_col0(int lane) {
  int base = 0, w = CB;
  for (int d = Lanes / 2; d >= 1; d /= 2) {
    if (w > 1) {
      w /= 2;
      if ((lane & d) != 0) base += w;
    }
  }
  return base;
}

/// The lowest lane that holds column `c` after scatter_combine.
template <int Lanes, int CB>
KOKKOS_FORCEINLINE_FUNCTION constexpr int owner_lane(int c) {
  int lane = 0, base = 0, w = CB;
  for (int d = Lanes / 2; d >= 1; d /= 2) {
    if (w > 1) {
      w /= 2;
      if (c >= base + w) {
        lane |= d;
        base += w;
      }
    }
  }
  return lane;
}

/// The canonical combination of a column block's partial sums: `acc[lb][c]`
/// is this lane's block `lb` of column `c`. First the butterfly over the
/// `Lanes` lanes that share the columns (a reduce-scatter, scatter_steps;
/// nothing with one lane), then the fixed tree over the local blocks.
/// `sum[i]` ends with the canonical sum of column own_col0(lane) + i, for
/// i < own_cols. Overwrites `acc`.
template <int Lanes, int Stride, int BPL, int CB>
KOKKOS_FORCEINLINE_FUNCTION void scatter_combine(float (&acc)[BPL][CB], int lane,
                                                 float (&sum)[own_cols<Lanes, CB>()]) {
  static_assert((BPL & (BPL - 1)) == 0 && (Lanes & (Lanes - 1)) == 0 && (CB & (CB - 1)) == 0,
                "powers of two of blocks, lanes and columns");
  scatter_steps<Stride, Lanes / 2, CB>(lane, acc);
  local_tree<own_cols<Lanes, CB>()>(acc, sum);
}

/// scatter_combine of two sets of sums at once (their shuffles overlap).
template <int Lanes, int Stride, int BPL, int CB>
KOKKOS_FORCEINLINE_FUNCTION void scatter_combine(float (&a)[BPL][CB], float (&b)[BPL][CB], int lane,
                                                 float (&sa)[own_cols<Lanes, CB>()],
                                                 float (&sb)[own_cols<Lanes, CB>()]) {
  static_assert((BPL & (BPL - 1)) == 0 && (Lanes & (Lanes - 1)) == 0 && (CB & (CB - 1)) == 0,
                "powers of two of blocks, lanes and columns");
  scatter_steps<Stride, Lanes / 2, CB>(lane, a, b);
  local_tree<own_cols<Lanes, CB>()>(a, sa);
  local_tree<own_cols<Lanes, CB>()>(b, sb);
}

/// Every column's value from the lane holding it after scatter_combine:
/// `all[c]` = the `own` entry for column c of its owner lane, whose warp lane
/// is `owner * Stride + group_lane0` (`group_lane0`: the warp lane of this
/// group's lane 0). With one lane a copy.
template <int Lanes, int Stride, int CB>
KOKKOS_FORCEINLINE_FUNCTION void gather_columns(const float (&own)[own_cols<Lanes, CB>()],
                                                float (&all)[CB], int group_lane0) {
  GDN_UNROLL
  for (int c = 0; c < CB; ++c) {
    const int src = owner_lane<Lanes, CB>(c);
    all[c] = lane_read(own[c - own_col0<Lanes, CB>(src)], src * Stride + group_lane0);
  }
}

/// `sum_i x[i] * y[i]` over the `D` staged floats at `x`, `y` in the
/// canonical order, by the `Lanes` lanes of a lane group (this lane: `lane`,
/// holding blocks [lane*BPL, (lane+1)*BPL)). The squared norms. Every lane
/// of the group calls it together and ends with the same bits.
template <int Lanes, int Stride, int D>
KOKKOS_FORCEINLINE_FUNCTION float canonical_dot(const float* x, const float* y, int lane) {
  constexpr int BPL = D / kBlockRows / Lanes;
  static_assert(BPL >= 1 && BPL * Lanes * kBlockRows == D, "whole blocks per lane");
  float acc[BPL][1];
  GDN_UNROLL
  for (int lb = 0; lb < BPL; ++lb) {
    const int i0 = (lane * BPL + lb) * kBlockRows;
    acc[lb][0] = block_chain(x + i0, y + i0);
  }
  float sum[1];
  scatter_combine<Lanes, Stride, BPL, 1>(acc, lane, sum);
  return sum[0];
}

/// \brief One pass of a token loop over columns [c0, c0 + CB) of a thread's
/// fragment `st` (its `BPL` blocks of rows, all the rows of its lane).
///
/// With `Apply`: token t's update with its delta factors `u` and key `k`
/// (update_line), then its readout partial sums `o` with query `q` (on the
/// updated state). With `Next`: then the following token's decay `an`
/// (decay_line) and its key sums `kv` with key `kn` (on the decayed state).
/// Each element is read and written once per pass; `k`, `q`, `kn` point at
/// this lane's first staged row. Every partial sum is its block's fma chain
/// in ascending rows (scatter_combine finishes them).
template <int BPL, int Cols, int CB, bool Apply, bool Next>
KOKKOS_FORCEINLINE_FUNCTION void token_sweep(float (&st)[BPL * kBlockRows][Cols], int c0,
                                             const float* k, const float* q, const float (&u)[CB],
                                             float an, const float* kn, float (&o)[BPL][CB],
                                             float (&kv)[BPL][CB]) {
  GDN_UNROLL
  GDN_HOST_UNROLL
  for (int lb = 0; lb < BPL; ++lb) {
    GDN_SIMD
    for (int c = 0; c < CB; ++c) {
      o[lb][c] = 0.0f;
      kv[lb][c] = 0.0f;
    }
  }
  GDN_UNROLL
  for (int r = 0; r < kBlockRows; r += 4) {
    GDN_UNROLL
    GDN_HOST_UNROLL
    for (int lb = 0; lb < BPL; ++lb) {
      const int i0 = lb * kBlockRows + r;
      float kr[4] = {}, qr[4] = {}, knr[4] = {};
      if constexpr (Apply) {
        load4(k + i0, kr);
        load4(q + i0, qr);
      }
      if constexpr (Next) load4(kn + i0, knr);
      GDN_UNROLL
      GDN_HOST_UNROLL
      for (int e = 0; e < 4; ++e) {
        float* const row = st[i0 + e] + c0;
        GDN_SIMD
        for (int c = 0; c < CB; ++c) {
          float x = row[c];
          if constexpr (Apply) {
            x = update_line(kr[e], u[c], x);
            o[lb][c] = fmaf(x, qr[e], o[lb][c]);
          }
          if constexpr (Next) {
            x = decay_line(x, an);
            kv[lb][c] = fmaf(x, knr[e], kv[lb][c]);
          }
          row[c] = x;
        }
      }
    }
  }
}

/// Records j = 0 .. n-1 applied in order to a thread's fragment (fold_record
/// per element): keys at `k + j * k_stride` (this thread's first row, 16-byte
/// aligned), delta factors at `u + j * u_stride` (its first column; 16-byte aligned
/// where `Cols` is a multiple of 4), decays
/// `a[j]`. `RowsOuter` (a backend's choice, FoldShape / TokenShape): each row
/// takes every record while its columns are in registers (a CPU thread whose
/// fragment is a large tile); otherwise each record sweeps the whole fragment
/// (a GPU thread's fragment is in registers anyway). Every element sees the
/// same operations in the same order either way.
template <bool RowsOuter, int Rows, int Cols>
KOKKOS_FORCEINLINE_FUNCTION void fold_fragment(float (&st)[Rows][Cols], int n, const float* k,
                                               int k_stride, const float* u, int u_stride,
                                               const float* a) {
  if constexpr (RowsOuter) {
    constexpr int CB = Cols < 64 ? Cols : 64;
    static_assert(Cols % CB == 0, "whole column blocks");
    for (int cb = 0; cb < Cols; cb += CB) {
      for (int i = 0; i < Rows; ++i) {
        float x[CB];
        GDN_SIMD
        for (int c = 0; c < CB; ++c) x[c] = st[i][cb + c];
        for (int j = 0; j < n; ++j) {
          const float kj = k[j * k_stride + i], aj = a[j];
          const float* const uj = u + j * u_stride + cb;
          GDN_SIMD
          for (int c = 0; c < CB; ++c) x[c] = fold_record(x[c], kj, uj[c], aj);
        }
        GDN_SIMD
        for (int c = 0; c < CB; ++c) st[i][cb + c] = x[c];
      }
    }
  } else {
    static_assert(Rows % 4 == 0, "16-byte key loads");
    for (int j = 0; j < n; ++j) {
      const float aj = a[j];
      float uj[Cols];
      if constexpr (Cols % 4 == 0) {
        GDN_UNROLL
        for (int c = 0; c < Cols; c += 4) {
          float w[4];
          load4(u + j * u_stride + c, w);
          GDN_UNROLL
          for (int e = 0; e < 4; ++e) uj[c + e] = w[e];
        }
      } else {
        GDN_UNROLL
        for (int c = 0; c < Cols; ++c) uj[c] = u[j * u_stride + c];
      }
      GDN_UNROLL
      for (int i = 0; i < Rows; i += 4) {
        float kr[4];
        load4(k + j * k_stride + i, kr);
        GDN_UNROLL
        for (int e = 0; e < 4; ++e) {
          GDN_UNROLL
          for (int c = 0; c < Cols; ++c) st[i + e][c] = fold_record(st[i + e][c], kr[e], uj[c], aj);
        }
      }
    }
  }
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_CORE_TOKEN_STEP_HPP
