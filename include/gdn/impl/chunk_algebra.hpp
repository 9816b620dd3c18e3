#ifndef GDN_IMPL_CHUNK_ALGEBRA_HPP
#define GDN_IMPL_CHUNK_ALGEBRA_HPP

/// \file chunk_algebra.hpp
/// \brief The chunked recurrence of docs/design.md (steps 1-4) in the canonical
/// order of SPEC.md section 2, shared by every kernel on every backend. This
/// file is the exactness argument.
///
/// A chunk of `n <= chunk_tokens` tokens from state `S0`:
/// 1. `P[:, j] = S0^T k_j`, `R[:, j] = S0^T q_j` (`project`).
/// 2. decay products `g(j, i) = a_{i+1} * ... * a_j` and `Gam_j = a_0 * ... * a_j`,
///    multiplied left to right (`chunk_coefficients`).
/// 3. `u_j` and `out_j` in token order (`delta_readout`, any number of columns
///    at once: one per GPU thread, a SIMD block on the host).
/// 4. the state after the chunk: `S = fma(k_j, u_j, S * a_j)` for j in order
///    (`fold_record`, also the fold kernel's update).
///
/// **The canonical order.** Every sum over a head dimension (step 1, the Gram
/// entries, the squared norms) splits its `D` terms into blocks of
/// kBlockRows = 16 consecutive rows; each block is an fma chain from 0 in
/// ascending rows (`block_chain`), and the block sums are combined by one
/// fixed tree (`block_tree`: b[e] + b[e + NB/2] for e < NB/2, then halving
/// again; eight blocks give ((b0+b4)+(b2+b6))+((b1+b5)+(b3+b7))). The tree is
/// the xor butterfly over lanes that each hold one block (a + b and b + a
/// round alike), so a GPU lane group, a cross-warp reduction and a host loop
/// over the blocks all compute the same bits. Step 3's sums run over earlier
/// tokens in ascending order, one fma each; step 2's products left to right.
///
/// Every operation here is an explicit `fmaf`, or a single multiply, add,
/// square root or division whose result does not feed an add, so contraction
/// by the compiler (`-ffp-contract`, nvcc `--fmad`) has nothing to change:
/// the bits depend only on the order written here, the same on every backend.

#include <gdn/impl/backend.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>

namespace gdn {
namespace Impl {

/// Rows of one canonical block of a head-dimension sum.
constexpr int kBlockRows = 16;

/// Block `b`'s sum: `sum_r x[r] * y[r]` over its 16 rows as one fma chain
/// from 0 (`x`, `y` point at the block's first row; `load4`-aligned).
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

/// The fixed tree over `NB` block sums (overwrites `b`): `b[e] += b[e + w]`
/// for `w = NB/2, NB/4, ..., 1`, `e < w`.
template <int NB>
KOKKOS_FORCEINLINE_FUNCTION float block_tree(float (&b)[NB]) {
  static_assert((NB & (NB - 1)) == 0, "a power of two of blocks");
  GDN_UNROLL
  for (int w = NB / 2; w >= 1; w /= 2) {
    GDN_UNROLL
    for (int e = 0; e < w; ++e) b[e] = b[e] + b[e + w];
  }
  return b[0];
}

/// `sum_i x[i] * y[i]` over `D` floats in the canonical order (the Gram
/// entries and the norms) by a GPU lane group of `D / 16` lanes: lane `l`
/// runs block `l`'s chain, then the xor butterfly of lane_all_sum (the same
/// tree); every lane of the group ends with the same bits. Block `l` starts
/// at `x + l * BlockLd` (ChunkScratch's staged layout). The host's
/// mapping: interleaved_dot (host_algebra.hpp).
template <int Lanes, int D, int BlockLd = kBlockRows>
KOKKOS_FORCEINLINE_FUNCTION float group_dot(const float* x, const float* y, int lane,
                                            unsigned mask) {
  static_assert(D % kBlockRows == 0 && Lanes == D / kBlockRows, "a lane per block");
  const float acc = block_chain(x + lane * BlockLd, y + lane * BlockLd);
  return lane_all_sum<Lanes>(acc, mask);
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
/// Row-major, `C = chunk_tokens` rows: `k`, `q` [C][kLd] (raw; the 16-row
/// blocks of a token `BlockLd` floats apart, `at`), `v`, `p`, `r`,
/// `u` [C][Cols] (the team's tile of columns), per-token scalars [C] (`a`
/// decay, `beta`, `kinv`, `qf`, `gam` = Gam_j), and the step-3 coefficients
/// [C][C]: `akk(j, i) = g(j, i) * (k_i . k_j)` for i < j,
/// `akq(j, i) = g(j, i) * (k_i . q_j)` for i <= j. With `KeyDots` (a team
/// that serves every value head of a key head): `u` shares `v`'s region
/// (step 3 reads `v_j[c]` just before the same thread writes `u_j[c]`), and
/// `dkk`, `dkq` [C][C] hold the key head's raw dot products `k_i . k_j` and
/// `k_i . q_j`, computed once for all of its value heads.
///
/// `BlockLd` > 16 pads each 16-row block of a staged key or query: where the
/// lanes of a column group each read their own block at once (the tiled
/// kernel's mapping), a stride of 20 floats puts the eight lanes' 16-byte
/// words in eight different groups of four banks instead of two. Only the
/// addresses change, never an operation or its order.
template <int Dk, int C, int Cols = kTiledCols, bool KeyDots = false, int BlockLd = kBlockRows>
struct ChunkScratch {
  static_assert(BlockLd >= kBlockRows && BlockLd % 4 == 0, "16-byte aligned blocks");
  static constexpr int kDk = Dk;
  static constexpr int kC = C;
  static constexpr int kCols = Cols;
  static constexpr int kBlockLd = BlockLd;
  /// Floats from one token's staged key (or query) to the next.
  static constexpr int kLd = Dk / kBlockRows * BlockLd;
  static constexpr int kVec = C * kLd;
  static constexpr int kTile = C * Cols;
  static constexpr int kPad4 = (C + 3) / 4 * 4;
  static constexpr int kCoef = (C * C + 3) / 4 * 4;
  /// Floats of scratch used (every region starts 16-byte aligned).
  static constexpr int kFloats =
      2 * kVec + (KeyDots ? 3 : 4) * kTile + 5 * kPad4 + (KeyDots ? 4 : 2) * kCoef;

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
  float* dkk = nullptr;
  float* dkq = nullptr;

  /// Offset of row `i` of token `j`'s staged key (or query) from `k` (`q`).
  KOKKOS_FORCEINLINE_FUNCTION static constexpr int at(int j, int i) {
    return j * kLd + i / kBlockRows * BlockLd + i % kBlockRows;
  }

  /// Carve the regions out of `base` (16-byte aligned, kFloats long).
  KOKKOS_INLINE_FUNCTION explicit ChunkScratch(float* base) {
    k = base;
    q = k + kVec;
    v = q + kVec;
    p = v + kTile;
    r = p + kTile;
    u = KeyDots ? v : r + kTile;
    a = r + (KeyDots ? 1 : 2) * kTile;
    beta = a + kPad4;
    kinv = beta + kPad4;
    qf = kinv + kPad4;
    gam = qf + kPad4;
    akk = gam + kPad4;
    akq = akk + kCoef;
    if (KeyDots) {
      dkk = akq + kCoef;
      dkq = dkk + kCoef;
    }
  }
};

/// The decay products of pair `(j, i)`, i <= j: `g = a_{i+1} * ... * a_j`
/// and `gam = a_0 * ... * a_j`, left to right (unrolled over the chunk, so
/// the decays are loaded together).
template <int C>
KOKKOS_FORCEINLINE_FUNCTION void decay_products(const float* a, int j, int i, float& g,
                                                float& gam) {
  g = 1.0f;
  gam = a[0];
  GDN_UNROLL
  for (int m = 1; m < C; ++m) {
    if (m > i && m <= j) g = g * a[m];
    if (m <= j) gam = gam * a[m];
  }
}

/// The key head's part of pair `(j, i)` (i <= j < n), by one lane group
/// (its lanes call it together): `kq = k_i . q_j`, `kk = k_i . k_j` (i < j,
/// else 0) and, for i == j, `kinv_j` and `qf_j` written to scratch by lane 0.
template <int Lanes, class S>
KOKKOS_FORCEINLINE_FUNCTION void key_pair_dots(const S& s, int j, int i, int lane, unsigned mask,
                                               float q_scale, float& kk, float& kq) {
  constexpr int Dk = S::kDk, Ld = S::kBlockLd;
  const float* kj = s.k + S::at(j, 0);
  const float* ki = s.k + S::at(i, 0);
  const float* qj = s.q + S::at(j, 0);
  kq = group_dot<Lanes, Dk, Ld>(ki, qj, lane, mask);
  kk = i < j ? group_dot<Lanes, Dk, Ld>(ki, kj, lane, mask) : 0.0f;
  if (i == j) {
    const float kn = group_dot<Lanes, Dk, Ld>(kj, kj, lane, mask);
    const float qn = group_dot<Lanes, Dk, Ld>(qj, qj, lane, mask);
    if (lane == 0) {
      s.kinv[j] = norm_factor(kn, 1.0f);
      s.qf[j] = norm_factor(qn, q_scale);
    }
  }
}

/// The key head's dots of every pair i <= j < n of a chunk into the KeyDots
/// scratch: `dkk(j, i) = k_i . k_j` (0 for i == j), `dkq(j, i) = k_i . q_j`,
/// and the norms `kinv_j`, `qf_j` (key_pair_dots), by the team's `Groups`
/// lane groups of `Lanes` lanes, a group per pair; `rank`: the thread's rank
/// in the team, every thread of which calls it. The host's mapping:
/// host_key_dots (host_algebra.hpp).
template <int Lanes, int Groups, class S>
KOKKOS_FORCEINLINE_FUNCTION void key_head_dots(const S& s, int n, int rank, float q_scale) {
  constexpr int C = S::kC;
  const int lane = rank % Lanes, group = rank / Lanes;
  const unsigned mask = group_mask<Lanes>(rank);
  for (int e = group; e < n * n; e += Groups) {
    const int j = e / n, i = e % n;
    if (i <= j) {
      float kk, kq;
      key_pair_dots<Lanes>(s, j, i, lane, mask, q_scale, kk, kq);
      if (lane == 0) {
        s.dkk[j * C + i] = kk;
        s.dkq[j * C + i] = kq;
      }
    }
  }
}

/// The value head's part of pair `(j, i)`: `akk(j, i) = g(j, i) * kk`
/// (i < j), `akq(j, i) = g(j, i) * kq`, and `Gam_j` for i == j, from the
/// staged decays.
template <class S>
KOKKOS_FORCEINLINE_FUNCTION void head_pair_coefficients(const S& s, int j, int i, float kk,
                                                        float kq) {
  constexpr int C = S::kC;
  float g, gam;
  decay_products<C>(s.a, j, i, g, gam);
  if (i < j) s.akk[j * C + i] = g * kk;
  s.akq[j * C + i] = g * kq;
  if (i == j) s.gam[j] = gam;
}

/// Step 2 and the norms for token pair `(j, i)` of a chunk (i <= j < n), by
/// one lane group (its lanes call it together), for one value head: lane 0
/// writes `akk(j, i)` (i < j) and `akq(j, i)`; for i == j also `kinv_j`,
/// `qf_j` and `Gam_j`. Reads the staged k, q, a.
template <int Lanes, class S>
KOKKOS_FORCEINLINE_FUNCTION void chunk_coefficients(const S& s, int j, int i, int lane,
                                                    unsigned mask, float q_scale) {
  float kk, kq;
  key_pair_dots<Lanes>(s, j, i, lane, mask, q_scale, kk, kq);
  if (lane == 0) head_pair_coefficients(s, j, i, kk, kq);
}

/// Columns a host thread reads out together (step 3: one 512-bit vector);
/// only the loop order depends on it, never a sum's order.
constexpr int kHostColBlock = 16;
/// Columns a host thread folds together (step 4): a row of a 64-column tile
/// stays in eight 256-bit registers while every record sweeps it.
constexpr int kHostFoldCols = 64;

/// Step 1 for the `J = Lanes / (2 Cols)` tokens `j0 .. j0 + J - 1` (those
/// below `n`) on a GPU thread's fragment, in the canonical order: the
/// fragment is lane `l`'s block, rows `[16 l, 16 l + 16)` of `Cols` columns
/// (`Lanes` = Dk / 16 lanes per column group); the lane runs the block's
/// chain for P and R of each column and token, then lane_reduce_scatter
/// applies the tree and leaves sum `l` in lane `l`: token `j0 + l / (2 Cols)`,
/// P of fragment column `l % (2 Cols)` below Cols, else R of column
/// `l % (2 Cols) - Cols`; the lane writes it to scratch. A 64-column tile
/// has J = 1; the narrow tiles (fewer columns per thread) take 2 or 4
/// tokens per call, so every lane still ends with one sum. The host's
/// mapping: host_project (host_algebra.hpp).
template <int Lanes, int Rows, int Cols, class S>
KOKKOS_FORCEINLINE_FUNCTION void project(const float (&st)[Rows][Cols], const S& s, int j0, int n,
                                         int lane, int col0) {
  constexpr int Dk = S::kDk;
  constexpr int kLd = S::kCols;
  constexpr int J = Lanes / (2 * Cols);
  static_assert(Rows == kBlockRows && Lanes == Dk / kBlockRows, "a lane per block");
  static_assert(J >= 1 && J * 2 * Cols == Lanes, "one of the J x 2 x Cols sums per lane");
  const float* kj[J];
  const float* qj[J];
  GDN_UNROLL
  for (int t = 0; t < J; ++t) {
    const int j = j0 + t < n ? j0 + t : j0;  // past the chunk: any staged token, not written
    kj[t] = s.k + S::at(j, 0) + lane * S::kBlockLd;
    qj[t] = s.q + S::at(j, 0) + lane * S::kBlockLd;
  }
  float acc[Lanes];
  GDN_UNROLL
  for (int c = 0; c < Lanes; ++c) acc[c] = 0.0f;
  GDN_UNROLL
  for (int i = 0; i < Rows; i += 4) {
    GDN_UNROLL
    for (int t = 0; t < J; ++t) {
      float kr[4], qr[4];
      load4(kj[t] + i, kr);
      load4(qj[t] + i, qr);
      GDN_UNROLL
      for (int e = 0; e < 4; ++e) {
        GDN_UNROLL
        for (int c = 0; c < Cols; ++c) {
          float& pa = acc[t * 2 * Cols + c];
          float& ra = acc[t * 2 * Cols + Cols + c];
          pa = fmaf(st[i + e][c], kr[e], pa);
          ra = fmaf(st[i + e][c], qr[e], ra);
        }
      }
    }
  }
  const float sum = lane_reduce_scatter<Lanes>(acc, lane);
  const int j = j0 + lane / (2 * Cols), v = lane % (2 * Cols);
  if (j < n) (v < Cols ? s.p : s.r)[j * kLd + col0 + v % Cols] = sum;
}

/// One canonical block of step 1 for `Cols` columns and `NT` tokens: the fma
/// chains of `P[t][c] = sum_r st[r][c] * k_t[r]` and `R[t][c] = sum_r
/// st[r][c] * q_t[r]` over the block's 16 rows, from 0 in ascending rows
/// (`k`, `q` point at the first token's key and query at the block's first
/// row; token t's are `t * ld` floats further; load4-aligned). Each state
/// value enters the 2 NT chains of its row at once. The streaming kernel's
/// warp runs it for its block and adds the blocks in block_tree's order.
template <int NT, int Cols>
KOKKOS_FORCEINLINE_FUNCTION void block_project(const float (&st)[kBlockRows][Cols], const float* k,
                                               const float* q, int ld, float (&pk)[NT][Cols],
                                               float (&pq)[NT][Cols]) {
  GDN_UNROLL
  for (int t = 0; t < NT; ++t) {
    GDN_UNROLL
    for (int c = 0; c < Cols; ++c) {
      pk[t][c] = 0.0f;
      pq[t][c] = 0.0f;
    }
  }
  GDN_UNROLL
  for (int i = 0; i < kBlockRows; i += 4) {
    GDN_UNROLL
    for (int t = 0; t < NT; ++t) {
      float kr[4], qr[4];
      load4(k + t * ld + i, kr);
      load4(q + t * ld + i, qr);
      GDN_UNROLL
      for (int e = 0; e < 4; ++e) {
        GDN_UNROLL
        for (int c = 0; c < Cols; ++c) {
          pk[t][c] = fmaf(st[i + e][c], kr[e], pk[t][c]);
          pq[t][c] = fmaf(st[i + e][c], qr[e], pq[t][c]);
        }
      }
    }
  }
}

/// Step 3 for `W` consecutive columns `c0 .. c0 + W - 1` of the staged tile
/// (a GPU thread: W = 1; the host: a SIMD block), delta factors and outputs
/// together, every column on its own in the same order. Delta factors:
/// `kv_j = Gam_j * P[c, j] + sum_{i<j} akk(j, i) * u_i[c]` (i ascending, one
/// fma each) and `u_j[c] = beta_j * (v_j[c] - kv_j * kinv_j) * kinv_j`,
/// computed right-looking: once u_i is known it enters every later kv_j,
/// which adds the same terms in the same order as the sum written above,
/// while the dependent chain is only n steps long. Each `u_i` also enters
/// every readout `o_j` (j >= i), which adds the terms of the readout in its
/// order (`Gam_j * R[c, j]` first, then i ascending, one fma each):
/// `out_j[c] = qf_j * o_j`. Writes `u_j` to scratch and hands each
/// `(j, w, u_j[c0 + w])` to `emit_u`, then each `(j, w, out_j[c0 + w])` to
/// `emit_out`. `NC >= n` bounds the token loops at compile time (the caller
/// picks the smallest of a few bounds, so short windows need few
/// registers); it changes no operation.
template <int NC, int W, class S, class EmitU, class EmitOut>
KOKKOS_FORCEINLINE_FUNCTION void delta_readout(const S& s, int n, int c0, const EmitU& emit_u,
                                               const EmitOut& emit_out) {
  constexpr int C = S::kC;
  constexpr int kLd = S::kCols;
  static_assert(NC <= C, "at most a chunk");
  float kv[NC][W], o[NC][W];
  GDN_UNROLL
  for (int j = 0; j < NC; ++j) {
    if (j < n) {
      const float gam = s.gam[j];
      GDN_SIMD
      for (int w = 0; w < W; ++w) {
        kv[j][w] = gam * s.p[j * kLd + c0 + w];
        o[j][w] = gam * s.r[j * kLd + c0 + w];
      }
    }
  }
  GDN_UNROLL
  for (int i = 0; i < NC; ++i) {
    if (i < n) {
      const float beta = s.beta[i], kinv = s.kinv[i];
      float ui[W];
      GDN_SIMD
      for (int w = 0; w < W; ++w) {
        ui[w] = delta_factor(s.v[i * kLd + c0 + w], kv[i][w], beta, kinv);
        s.u[i * kLd + c0 + w] = ui[w];
      }
      for (int w = 0; w < W; ++w) emit_u(i, w, ui[w]);
      GDN_UNROLL
      for (int j = i + 1; j < NC; ++j) {
        if (j < n) {
          const float a = s.akk[j * C + i];
          GDN_SIMD
          for (int w = 0; w < W; ++w) kv[j][w] = fmaf(a, ui[w], kv[j][w]);
        }
      }
      GDN_UNROLL
      for (int j = i; j < NC; ++j) {
        if (j < n) {
          const float a = s.akq[j * C + i];
          GDN_SIMD
          for (int w = 0; w < W; ++w) o[j][w] = fmaf(a, ui[w], o[j][w]);
        }
      }
    }
  }
  GDN_UNROLL
  for (int j = 0; j < NC; ++j) {
    if (j < n) {
      const float qf = s.qf[j];
      for (int w = 0; w < W; ++w) emit_out(j, w, qf * o[j][w]);
    }
  }
}

/// delta_readout for one column (`W` = 1, a GPU thread), left-looking: u_j
/// from kv_j = Gam_j * P[c, j] + sum_{i<j} akk(j, i) * u_i (i ascending),
/// then out_j from Gam_j * R[c, j] + sum_{i<=j} akq(j, i) * u_i (i
/// ascending) and emitted at once. The same operations on the same operands
/// in the same order as delta_readout (so the same bits); only u_0 .. u_j
/// are held, instead of every token's kv and o.
template <int NC, class S, class EmitU, class EmitOut>
KOKKOS_FORCEINLINE_FUNCTION void delta_readout_column(const S& s, int n, int c,
                                                      const EmitU& emit_u,
                                                      const EmitOut& emit_out) {
  constexpr int C = S::kC;
  constexpr int kLd = S::kCols;
  static_assert(NC <= C, "at most a chunk");
  float u[NC];
  GDN_UNROLL
  for (int j = 0; j < NC; ++j) {
    if (j < n) {
      const float gam = s.gam[j];
      float kv = gam * s.p[j * kLd + c];
      GDN_UNROLL
      for (int i = 0; i < j; ++i) kv = fmaf(s.akk[j * C + i], u[i], kv);
      u[j] = delta_factor(s.v[j * kLd + c], kv, s.beta[j], s.kinv[j]);
      s.u[j * kLd + c] = u[j];
      emit_u(j, 0, u[j]);
      float o = gam * s.r[j * kLd + c];
      GDN_UNROLL
      for (int i = 0; i <= j; ++i) o = fmaf(s.akq[j * C + i], u[i], o);
      emit_out(j, 0, s.qf[j] * o);
    }
  }
}

/// Step 4 on a thread's fragment: records j = 0 .. n-1 in order, key rows
/// from `k + j * k_stride + lane * lane_ld` (this lane's rows; `lane_ld`
/// defaults to `Rows`, ChunkScratch::kBlockLd for its staged keys), delta factors from
/// `u + j * u_stride` (this thread's columns), decays `a[j * a_stride]`.
/// Every element takes the records in the same order; a GPU thread sweeps
/// its registers once per record, the host applies all records to a row's
/// kHostFoldCols columns while they are in registers.
template <int Lanes, int Rows, int Cols>
KOKKOS_FORCEINLINE_FUNCTION void fold_fragment(float (&st)[Rows][Cols], int lane, int n,
                                               const float* k, int k_stride, const float* u,
                                               int u_stride, const float* a, int a_stride,
                                               int lane_ld = Rows) {
  if constexpr (Lanes == 1) {
    (void)lane;
    (void)lane_ld;
    constexpr int CB = Cols < kHostFoldCols ? Cols : kHostFoldCols;
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
        load4(k + j * k_stride + lane * lane_ld + i, kr);
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
