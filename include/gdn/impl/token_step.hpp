#ifndef GDN_IMPL_TOKEN_STEP_HPP
#define GDN_IMPL_TOKEN_STEP_HPP

/// \file token_step.hpp
/// \brief The one per-token update that forward, verify and fold share.
///
/// The rounding contract of SPEC.md section 2 lives in `decay_state` and
/// `delta_update`: the decay product is rounded, then one fused multiply-add.
/// Every other operation here is either an explicit `fmaf` or a single
/// multiply, add, square root or division whose result does not feed an add,
/// so compiler contraction (`-ffp-contract`, nvcc `--fmad`) has nothing to
/// change and the bits do not depend on how a kernel was inlined or scheduled.
/// Forward and verify run `token_step` through the same kernel; the fold
/// replays `decay_state` + `delta_update` with the `k`, `u` and decay that
/// verify recorded, which is why it reproduces the forward's state exactly.

#include <gdn/impl/mapping.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>

namespace gdn {
namespace Impl {

/// S * decay, rounded once (the first half of the rounding contract).
KOKKOS_FORCEINLINE_FUNCTION float decay_state(float s, float decay) { return s * decay; }

/// fma(k, u, S*decay) (the second half: one fused multiply-add).
KOKKOS_FORCEINLINE_FUNCTION float delta_update(float k, float u, float s_decayed) {
  return fmaf(k, u, s_decayed);
}

/// u = beta * (v - kv*kinv) * kinv, with v - kv*kinv as one fma.
KOKKOS_FORCEINLINE_FUNCTION float delta_factor(float v, float kv, float beta, float kinv) {
  return (beta * fmaf(-kv, kinv, v)) * kinv;
}

/// num / sqrt(sum_sq + 1e-6): a key's inverse norm (num = 1) or a query's
/// factor (num = 1/sqrt(Dk)); one correctly rounded square root and division.
KOKKOS_FORCEINLINE_FUNCTION float norm_factor(float sum_sq, float num) {
  return num / sqrtf(sum_sq + 1e-6f);
}

/// 1 / sqrt(sum k^2 + 1e-6)
KOKKOS_FORCEINLINE_FUNCTION float key_inv_norm(float sum_sq) { return norm_factor(sum_sq, 1.0f); }

/// (1/sqrt(Dk)) / sqrt(sum q^2 + 1e-6)
KOKKOS_FORCEINLINE_FUNCTION float query_factor(float sum_sq, float q_scale) {
  return norm_factor(sum_sq, q_scale);
}

/// \brief Which rows of a state column a lane owns, and where it finds them
/// in the staged key and query (natural channel order in team scratch).
///
/// With one lane, all rows in order. With `Lanes` lanes, rows go to lanes
/// in runs of four: lane `l`'s fragment row `r` is state row
/// `lane_row<Lanes>(l, r) = (r/4)*4*Lanes + 4*l + r%4`, so a lane reads four
/// of its rows of k or q with one 16-byte load (at `x + r*Lanes`, `x` = its
/// base `staged_lane_base`), the lanes of a group read consecutive 16-byte
/// words (no bank conflicts), and the inputs are staged in their natural
/// order (16-byte copies from global memory).
template <int Lanes>
KOKKOS_FORCEINLINE_FUNCTION constexpr int lane_row(int lane, int r) {
  return (r / 4) * (4 * Lanes) + 4 * lane + r % 4;
}

/// Offset of lane `lane`'s first staged row (the `x` that the functions below take).
template <int Lanes>
KOKKOS_FORCEINLINE_FUNCTION constexpr int staged_lane_base(int lane) {
  return Lanes == 1 ? lane : lane * 4;
}

/// Rows per fetch from scratch: 4 (one 16-byte load) with several lanes, A with one.
template <int Lanes, int A>
constexpr int staged_fetch = Lanes == 1 ? A : 4;

/// Load this lane's rows r .. r+V-1 (r a multiple of V) from staged scratch.
template <int Lanes, int V>
KOKKOS_FORCEINLINE_FUNCTION void load_lane_rows(const float* x, int r, float (&d)[V]) {
  if constexpr (Lanes == 1) {
    GDN_UNROLL
    for (int e = 0; e < V; ++e) d[e] = x[r + e];
  } else {
    static_assert(V == 4, "lanes read their rows four at a time");
    load_scratch<4>(x + r * Lanes, d);
  }
}

/// Combine A partial sums per column in a fixed tree order into acc[0].
template <int A, int C>
KOKKOS_FORCEINLINE_FUNCTION void combine_partials(float (&acc)[A][C]) {
  static_assert(A > 0 && (A & (A - 1)) == 0, "the number of partial sums must be a power of two");
  GDN_UNROLL
  for (int w = A / 2; w >= 1; w /= 2) {
    GDN_UNROLL
    for (int a = 0; a < w; ++a) {
      GDN_UNROLL
      for (int c = 0; c < C; ++c) acc[a][c] += acc[a + w][c];
    }
  }
}

/// Sum of squares of this lane's `Rows` staged rows (`x` = its staged base), then over the lane
/// group. Row r feeds partial sum r % A, rows in order, then combine_partials.
template <int Rows, int Lanes, int A, int Stride = 1>
KOKKOS_FORCEINLINE_FUNCTION float lane_sum_squares(const float* x) {
  constexpr int V = staged_fetch<Lanes, A>;  // rows per fetch
  static_assert(Rows % V == 0 && V % A == 0, "norm accumulators must divide the rows per lane");
  float acc[A][1];
  GDN_UNROLL
  for (int a = 0; a < A; ++a) acc[a][0] = 0.0f;
  GDN_UNROLL
  for (int r = 0; r < Rows; r += V) {
    float d[V];
    load_lane_rows<Lanes>(x, r, d);
    GDN_UNROLL
    for (int e = 0; e < V; ++e) acc[e % A][0] = fmaf(d[e], d[e], acc[e % A][0]);
  }
  combine_partials<A, 1>(acc);
  float tot[1] = {acc[0][0]};
  lane_group_sum<Lanes, Stride>(tot);
  return tot[0];
}

/// \brief Sum of squares of the `Dk` floats at `x` (16-byte aligned, team
/// scratch) by a quad: 4 consecutive warp lanes, lane `j` (0..3) of the quad
/// summing the 16-byte chunks 4i + j, i < Dk/16, then quad_sum.
///
/// The order does not depend on `swz` or on which quad runs it, so every
/// kernel of the backend gets the same bits for the same vector. Step i
/// loads chunk 4*(i ^ swz) + j, so the two quads of a quarter warp (`swz`,
/// the quad's parity) read opposite 64-byte halves of a 128-byte line
/// (vectors lie 512 or 256 bytes apart: without it they would hit the same
/// banks). A lane keeps 8 partial sums, acc[e][s] for element e of the
/// chunks it loads at steps of parity s: with swz = 0 the even chunks in
/// acc[.][0], with swz = 1 in acc[.][1], in increasing order either way.
/// Each set of 4 is combined in a fixed tree (combine_partials) and the two
/// results added: a + b and b + a are the same bits, so `swz` changes
/// nothing in the sum.
template <int Dk>
KOKKOS_FORCEINLINE_FUNCTION float quad_sum_squares(const float* x, int j, int swz) {
  static_assert(Dk % 32 == 0, "a quad reads pairs of 16-byte chunks per lane");
  constexpr int kSteps = Dk / 16;                       // 16-byte chunks per lane
  const float* const even = x + 4 * j + 16 * swz;       // even steps: chunk 4*(i+swz) + j
  const float* const odd = x + 4 * j + 16 * (1 - swz);  // odd steps: chunk 4*(i-swz) + j
  float acc[4][2];                                      // [element][step parity]
  GDN_UNROLL
  for (int e = 0; e < 4; ++e) acc[e][0] = acc[e][1] = 0.0f;
  GDN_UNROLL
  for (int i = 0; i < kSteps; ++i) {
    float d[4];
    load_scratch<4>((i % 2 == 0 ? even : odd) + 32 * (i / 2), d);
    GDN_UNROLL
    for (int e = 0; e < 4; ++e) acc[e][i % 2] = fmaf(d[e], d[e], acc[e][i % 2]);
  }
  combine_partials<4, 2>(acc);
  return quad_sum(acc[0][0] + acc[0][1]);
}

/// \brief quad_sum_squares's sum by an octet: 8 consecutive warp lanes, lane
/// `o` (0..7) of the octet reading 16-byte chunks o, o + 8, o + 16, ..., and
/// the same bits.
///
/// Lane o = j + 4p does what quad lane j does for the chunks 4k + j of parity
/// k % 2 = p (acc[.][p] there, with swz = 0): the same fma chains in the same
/// order, combined over the elements in the same tree (combine_partials); the
/// two parities are then added (pair_sum<4>: a + b and b + a are the same
/// bits) and the quad's lanes j by quad_sum, as in quad_sum_squares. Half the
/// loads and fmas per lane; each step an octet reads 128 contiguous bytes (no
/// bank conflicts).
template <int Dk>
KOKKOS_FORCEINLINE_FUNCTION float octet_sum_squares(const float* x, int o) {
  static_assert(Dk % 32 == 0, "an octet reads whole 128-byte lines");
  constexpr int kSteps = Dk / 32;  // 16-byte chunks per lane
  float acc[4][1];
  GDN_UNROLL
  for (int e = 0; e < 4; ++e) acc[e][0] = 0.0f;
  GDN_UNROLL
  for (int i = 0; i < kSteps; ++i) {
    float d[4];
    load_scratch<4>(x + 4 * o + 32 * i, d);  // chunk o + 8i = 4k + j, k = p + 2i
    GDN_UNROLL
    for (int e = 0; e < 4; ++e) acc[e][0] = fmaf(d[e], d[e], acc[e][0]);
  }
  combine_partials<4, 1>(acc);
  return quad_sum(pair_sum<4>(acc[0][0]));
}

/// Bytes of a cache line (the host prefetches line by line).
constexpr int kCacheLineBytes = 64;

// Prefetchers for fused_sweep: `group()` runs once per group of rows,
// `row(r)` before row r's arithmetic.

/// fused_sweep's default: no prefetch.
struct NoPrefetch {
  KOKKOS_FORCEINLINE_FUNCTION void group() {}
  KOKKOS_FORCEINLINE_FUNCTION void row(int) {}
};

/// For each row r of a sweep, the `Lines` lines from `row0 + r * row_bytes`.
template <int Lines>
struct RowPrefetch {
  const char* row0;
  long row_bytes;
  KOKKOS_FORCEINLINE_FUNCTION void group() {}
  KOKKOS_FORCEINLINE_FUNCTION void row(int r) {
    for (int l = 0; l < Lines; ++l) prefetch_line(row0 + r * row_bytes + l * kCacheLineBytes);
  }
};

/// Software prefetch of a tile of rows of `RowLines` cache lines each, row
/// r at `base + r * row_bytes`: `per_step` lines per `step()`, in order,
/// until all `lines` are done (one step per row group).
template <int RowLines>
struct PrefetchCursor {
  const char* base = nullptr;  // nullptr: nothing to prefetch
  long row_bytes = 0;
  int line = 0;  // next line
  int lines = 0;
  int per_step = 0;
  KOKKOS_FORCEINLINE_FUNCTION void step() {
    if (base == nullptr) return;
    const int end = line + per_step < lines ? line + per_step : lines;
    for (; line < end; ++line) {
      prefetch_line(base + (line / RowLines) * row_bytes + (line % RowLines) * kCacheLineBytes);
    }
  }
  KOKKOS_FORCEINLINE_FUNCTION void group() { step(); }
  KOKKOS_FORCEINLINE_FUNCTION void row(int) {}
};

/// One sweep of a fused token loop over a column block (columns
/// [c0, c0 + Block)) of a lane's fragment (rows `lane_row<Lanes>(lane, r)`): with
/// `Apply`, token t's update (fma(k, u, S), `kt`, `ub`) and readout sums
/// (`qt`, into `oacc`); with `Next`, then the following token's decay
/// (rounded product by `dn`) and key sums (`kn`, into `nacc`). `kt`, `qt` and
/// `kn` point at the lane's staged base (staged_lane_base). Each element is
/// loaded and stored once. Sums: the lane's row r into partial sum r % A,
/// rows in order, then combine_partials; the caller sums over the lane group.
/// The host runs it over 16-column blocks of one lane (token_steps_fused), a
/// GPU lane over its whole fragment (RecurrenceKernel::compute_stage).
/// `pf` (host) prefetches: `pf.group()` once per group of rows, `pf.row(r)` per row.
template <int Rows, int Cols, int Lanes, int A, int Block, bool Apply, bool Next,
          class Pf = NoPrefetch>
KOKKOS_FORCEINLINE_FUNCTION void fused_sweep(float (&s)[Rows][Cols], int c0, const float* kt,
                                             const float* qt, const float (&ub)[Block],
                                             float (&oacc)[A][Block], const float* kn, float dn,
                                             float (&nacc)[A][Block], Pf&& pf = Pf()) {
  constexpr int V = staged_fetch<Lanes, A>;  // rows per fetch
  static_assert(Rows % V == 0 && V % A == 0,
                "fetch width and accumulators must divide the rows per lane");
  GDN_UNROLL
  GDN_HOST_UNROLL
  for (int a = 0; a < A; ++a) {
    GDN_SIMD
    for (int c = 0; c < Block; ++c) {
      oacc[a][c] = 0.0f;
      nacc[a][c] = 0.0f;
    }
  }
  GDN_UNROLL
  for (int r = 0; r < Rows; r += V) {
    float kr[V];
    float qr[V];
    float knr[V];
    if constexpr (Apply) {
      load_lane_rows<Lanes>(kt, r, kr);
      load_lane_rows<Lanes>(qt, r, qr);
    }
    if constexpr (Next) load_lane_rows<Lanes>(kn, r, knr);
    pf.group();
    GDN_UNROLL
    GDN_HOST_UNROLL
    for (int e = 0; e < V; ++e) {
      const int a = e % A;
      pf.row(r + e);
      float* const row = s[r + e] + c0;
      GDN_SIMD
      for (int c = 0; c < Block; ++c) {
        float x = row[c];
        if constexpr (Apply) {
          x = delta_update(kr[e], ub[c], x);
          oacc[a][c] = fmaf(x, qr[e], oacc[a][c]);
        }
        if constexpr (Next) {
          x = decay_state(x, dn);
          nacc[a][c] = fmaf(x, knr[e], nacc[a][c]);
        }
        row[c] = x;
      }
    }
  }
  if constexpr (Apply) combine_partials<A, Block>(oacc);
  if constexpr (Next) combine_partials<A, Block>(nacc);
}

/// Host form of a chunk's token steps (one lane, `Block`-column blocks, one
/// 512-bit vector each, so a block's `A` partial sums stay in registers):
/// token t's update and readout and token t+1's decay and key sums are one
/// sweep over the state (fused_sweep): every element gets the decay product,
/// then one fma, per token. Token t's inputs: k and q at `t * kq_stride`, v
/// at `t * v_stride`, scalars (decay, beta, qf, kinv) at `t * sc_stride`; its
/// delta factors go to u[t], its un-scaled readout to o[t].
/// With `pf_tile` (else nullptr), the cache lines of a tile of Rows x Cols
/// values of type P at `pf_tile + r * pf_row` (the state a team will load
/// next) are prefetched while this computes: with one token a share per row
/// group of the two sweeps; with more, in the first applying sweep of each
/// column block, row r prefetches row r of the next tile at that block (the
/// faster one in each case, measured; a burst before each sweep stalled on
/// full miss buffers).
template <int Rows, int Cols, int A, int Block, int MaxT, class P>
KOKKOS_FORCEINLINE_FUNCTION void token_steps_fused(float (&s)[Rows][Cols], const float* k,
                                                   const float* q, int kq_stride, const float* v,
                                                   int v_stride, const float* sc, int sc_stride,
                                                   int nt, float (&u)[MaxT][Cols],
                                                   float (&o)[MaxT][Cols], const P* pf_tile,
                                                   long pf_row) {
  static_assert(Cols % Block == 0 && Rows % A == 0,
                "column blocks and accumulators must divide the tile");
  constexpr int kRowLines =
      (Cols * static_cast<int>(sizeof(P)) + kCacheLineBytes - 1) / kCacheLineBytes;
  // Lines of the next tile under one (line-aligned) column block.
  constexpr int kBlockLines =
      (Block * static_cast<int>(sizeof(P)) + kCacheLineBytes - 1) / kCacheLineBytes;
  const long tile_row_bytes = pf_row * static_cast<long>(sizeof(P));
  // One token: the prefetch is spread over the row groups of the two sweeps;
  // more tokens: the first applying sweep of each column block prefetches
  // the next tile's lines at that block, one per row (each the faster one).
  const bool spread = pf_tile != nullptr && nt == 1;
  const bool by_row = pf_tile != nullptr && nt > 1;
  PrefetchCursor<kRowLines> pf;
  if (spread) {
    const int steps =
        (Cols / Block) * 2 * (Rows / staged_fetch<1, A>);  // row groups of the two sweeps
    pf.base = reinterpret_cast<const char*>(pf_tile);
    pf.row_bytes = tile_row_bytes;
    pf.lines = Rows * kRowLines;
    pf.per_step = (pf.lines + steps - 1) / steps;
  }
  for (int c0 = 0; c0 < Cols; c0 += Block) {
    float ub[Block];  // u of the token being applied
    float oacc[A][Block];
    float nacc[A][Block];
    for (int t = -1; t < nt; ++t) {
      // t = -1: only the first token's decay and key sums.
      const bool next = t + 1 < nt;
      const int ta = t < 0 ? 0 : t;      // the token applied (none at t = -1)
      const int tn = next ? t + 1 : ta;  // the next token (none at the last)
      const float* const scn = sc + tn * sc_stride;
      const float* const kt = k + ta * kq_stride;
      const float* const qt = q + ta * kq_stride;
      const float* const kn = k + tn * kq_stride;
      if (spread) {  // one token: a prefetch step per row group
        if (t < 0) {
          fused_sweep<Rows, Cols, 1, A, Block, false, true>(s, c0, kt, qt, ub, oacc, kn, scn[0],
                                                            nacc, pf);
        } else {
          fused_sweep<Rows, Cols, 1, A, Block, true, false>(s, c0, kt, qt, ub, oacc, kn, 0.0f, nacc,
                                                            pf);
        }
      } else if (by_row && t == 0 && (c0 * static_cast<int>(sizeof(P))) % kCacheLineBytes == 0) {
        // Several tokens: while the first token is applied to this column
        // block, row r prefetches row r of the next tile at this block.
        RowPrefetch<kBlockLines> rp{reinterpret_cast<const char*>(pf_tile + c0), tile_row_bytes};
        if (next) {
          fused_sweep<Rows, Cols, 1, A, Block, true, true>(s, c0, kt, qt, ub, oacc, kn, scn[0],
                                                           nacc, rp);
        } else {
          fused_sweep<Rows, Cols, 1, A, Block, true, false>(s, c0, kt, qt, ub, oacc, kn, 0.0f, nacc,
                                                            rp);
        }
      } else if (t < 0) {
        fused_sweep<Rows, Cols, 1, A, Block, false, true>(s, c0, kt, qt, ub, oacc, kn, scn[0],
                                                          nacc);
      } else if (next) {
        fused_sweep<Rows, Cols, 1, A, Block, true, true>(s, c0, kt, qt, ub, oacc, kn, scn[0], nacc);
      } else {
        fused_sweep<Rows, Cols, 1, A, Block, true, false>(s, c0, kt, qt, ub, oacc, kn, 0.0f, nacc);
      }
      if (t >= 0) {
        GDN_SIMD
        for (int c = 0; c < Block; ++c) o[t][c0 + c] = oacc[0][c];
      }
      if (next) {
        const float* const vn = v + tn * v_stride;
        GDN_SIMD
        for (int c = 0; c < Block; ++c) {
          ub[c] = delta_factor(vn[c0 + c], nacc[0][c], scn[1], scn[3]);
          u[tn][c0 + c] = ub[c];
        }
      }
    }
  }
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_TOKEN_STEP_HPP
