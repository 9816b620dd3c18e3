#ifndef GDN_IMPL_PREFILL_CUDA_HPP
#define GDN_IMPL_PREFILL_CUDA_HPP

/// \file prefill_cuda.hpp
/// \brief The chunked prefill on CUDA: warp-level tensor-core products (mma.sync) in the
/// call's precision, two kernels on the execution space's stream.
///
/// prefill_chunk_kernel, one block of 8 warps per (chunk slot, value head), every chunk in
/// parallel, two blocks per SM: the normalised queries and keys and the cumulative log-decays
/// in shared memory (q, k and v read 8 columns a thread, by 16-byte loads where qkv's layout
/// allows); the Gram K^ K^T and Q^ K^T on tensor cores (warp w: rows [16 (w % 4), +16),
/// columns [32 (w / 4), +32), skipped above the diagonal); the inverse A = (I + L)^-1 of the
/// chunk's unit lower-triangular system in float32 (the 16 x 16 diagonal blocks by forward
/// substitution, a thread per column, then the blocks below them by their distance from the
/// diagonal, A_ij = -A_ii sum_k L_ik A_kj); W = A diag(beta G) K^ and U = A diag(beta) V on
/// tensor cores (warp w: rows [16 (w % 4), +16), columns [D/2 (w / 4), +D/2)); the state kernel's
/// operands written to the chunk's workspace block (PrefillBlock, prefill_params.hpp).
///
/// prefill_state_kernel, one block of 2 CG warps per (row, value head, 16 CG state columns),
/// the row's chunks in order; CG = 4 column groups (64 columns, 8 warps) when the grid fills
/// the GPU, 2 (32 columns, 4 warps, twice the blocks) when B x nv x D / 32 blocks fit its SMs
/// (prefill_state_col_groups). Warp w carries the transposed state tile S^T of the 16 columns
/// [col0 + 16 (w % CG), +16) and the key half [D/2 (w / CG), +D/2) in registers, in mma's
/// accumulator layout, which is also the layout of an A operand: the products' A operands
/// (S^T, D^T) never leave the registers. Per chunk: D^T = U^T - S^T W^T (each key half's share,
/// the two added through shared memory), O^T = S^T Qg^T + D^T P^T (the same; a warp writes half
/// of the chunk's outputs to `out`), S^T <- G_C S^T + D^T Kd on the warp's own key half. The B
/// operands (W, Qg, P, Kd^T, stored as the rows of B's columns) and the block's U^T come from
/// shared memory, staged by cp.async in two groups, each issued as soon as the previous chunk
/// is done with its buffer, so the copies overlap the other group's products.
///
/// Precisions: bf16, m16n8k16 on bf16 operands with float32 accumulation; tf32x3, m16n8k8 with
/// each float operand split into TF32 high and low parts, the three products of a k-step summed
/// from zero (the tensor cores accumulate with truncation) and added to the accumulator in
/// float32. The tf32 A operand taken from an accumulator tile puts the columns 2t and 2t + 1 in
/// the fragment's slots t and t + 4, and its B operand the same rows: a permutation of the sum.
///
/// Preconditions: sm_80 or newer (mma.sync with bf16 and tf32, cp.async); the call's arguments
/// validated; Dk == Dv == D in {64, 128}.

#include <gdn/bf16.hpp>
#include <gdn/impl/backend/backend.hpp>
#include <gdn/impl/prefill/prefill_params.hpp>

#include <Kokkos_Core.hpp>

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace gdn {
namespace Impl {

inline constexpr int kPrefillChunkThreads = 256;  // 8 warps
inline constexpr int kPrefillWarpCols = 16;       // state columns per warp of the state kernel

/// The state kernel's operand type: bf16 bits or float.
template <bool Bf16>
using PrefillOp = std::conditional_t<Bf16, std::uint16_t, float>;

/// A float rounded to TF32 (round to nearest, ties away), as the b32 an mma operand takes.
__device__ __forceinline__ std::uint32_t prefill_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

/// Two floats as a bf16x2 operand register: `lo` (the lower index) in the low half.
__device__ __forceinline__ std::uint32_t prefill_bf16x2(float lo, float hi) {
  std::uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ void prefill_mma_tf32(float (&d)[4], const std::uint32_t (&a)[4],
                                                 const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void prefill_mma_bf16(float (&d)[4], const std::uint32_t (&a)[4],
                                                 const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/// The place of accumulator element e (0..3) of lane (g, t) = (lane / 4, lane % 4) in mma's
/// m16n8 tile: row g + 8 [e >= 2], column 2 t + (e & 1).
__device__ __forceinline__ int prefill_acc_row(int g, int e) { return g + (e >= 2 ? 8 : 0); }
__device__ __forceinline__ int prefill_acc_col(int t, int e) { return 2 * t + (e & 1); }

/// acc[nt] += A (16 x K) B (K x 8 NT columns) for one warp: `a(r, k)` for r < 16 and
/// `b(k, n)` for n < 8 NT give the float operands (r, n relative to the warp's tile).
/// tf32x3: a = ah + al, b = bh + bl rounded to TF32 each, three products: the two small
/// ones (al bh + ah bl) in accumulators of their own added at the end, the large one (ah bh)
/// of each k-step of 8 from zero and added to `acc` in float32, since the tensor cores
/// accumulate with truncation (a bias that grows with K if the sum stays in them); bf16:
/// one product on operands rounded to bf16. The
/// accumulator layout is mma's: acc[nt][0..3] at (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1)
/// of n-tile nt, g = lane / 4, t = lane % 4.
template <bool Bf16, int NT, class FA, class FB>
__device__ __forceinline__ void prefill_warp_mma(float (&acc)[NT][4], int K, const FA& a,
                                                 const FB& b) {
  const int lane = threadIdx.x & 31;
  const int g = lane >> 2, t = lane & 3;
  if constexpr (Bf16) {
    for (int k0 = 0; k0 < K; k0 += 16) {
      std::uint32_t af[4];
      af[0] = prefill_bf16x2(a(g, k0 + 2 * t), a(g, k0 + 2 * t + 1));
      af[1] = prefill_bf16x2(a(g + 8, k0 + 2 * t), a(g + 8, k0 + 2 * t + 1));
      af[2] = prefill_bf16x2(a(g, k0 + 2 * t + 8), a(g, k0 + 2 * t + 9));
      af[3] = prefill_bf16x2(a(g + 8, k0 + 2 * t + 8), a(g + 8, k0 + 2 * t + 9));
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int n = nt * 8 + g;
        std::uint32_t bf[2];
        bf[0] = prefill_bf16x2(b(k0 + 2 * t, n), b(k0 + 2 * t + 1, n));
        bf[1] = prefill_bf16x2(b(k0 + 2 * t + 8, n), b(k0 + 2 * t + 9, n));
        prefill_mma_bf16(acc[nt], af, bf);
      }
    }
  } else {
    float small[NT][4] = {};
    for (int k0 = 0; k0 < K; k0 += 8) {
      const float av[4] = {a(g, k0 + t), a(g + 8, k0 + t), a(g, k0 + t + 4), a(g + 8, k0 + t + 4)};
      std::uint32_t ah[4], al[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        ah[e] = prefill_tf32(av[e]);
        al[e] = prefill_tf32(av[e] - __uint_as_float(ah[e]));
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int n = nt * 8 + g;
        const float bv[2] = {b(k0 + t, n), b(k0 + t + 4, n)};
        std::uint32_t bh[2], bl[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          bh[e] = prefill_tf32(bv[e]);
          bl[e] = prefill_tf32(bv[e] - __uint_as_float(bh[e]));
        }
        prefill_mma_tf32(small[nt], al, bh);
        prefill_mma_tf32(small[nt], ah, bl);
        float big[4] = {};
        prefill_mma_tf32(big, ah, bh);
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[nt][e] += big[e];
      }
    }
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[nt][e] += small[nt][e];
    }
  }
}

/// The row owning chunk slot `s`: the last row whose first slot is at most `s` (the first
/// slots are non-decreasing in the row).
template <class P>
__device__ __forceinline__ int prefill_slot_row(const P& p, long long s) {
  int lo = 0, hi = p.batch - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (prefill_chunk_base(p.in.row_offsets(mid), mid) <= s) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

/// Two adjacent operands (index even) as float2, or packed as bf16x2.
template <bool Bf16>
__device__ __forceinline__ void prefill_store2(PrefillOp<Bf16>* dst, float a, float b) {
  if constexpr (Bf16) {
    *reinterpret_cast<std::uint32_t*>(dst) = prefill_bf16x2(a, b);
  } else {
    *reinterpret_cast<float2*>(dst) = make_float2(a, b);
  }
}

/// Whether every run of 8 consecutive columns of `qkv` at a multiple of 8 is one aligned
/// 16-byte (bf16) or 32-byte (float) block: unit column stride, a row stride that is a
/// multiple of 8 and a 16-byte aligned base.
template <class View>
__device__ __forceinline__ bool prefill_vector_rows(const View& qkv) {
  return qkv.stride_1() == 1 && qkv.stride_0() % 8 == 0 &&
         reinterpret_cast<std::uintptr_t>(qkv.data()) % 16 == 0;
}

/// x[0, 8) from `src` (global or shared memory, 16-byte aligned): two 16-byte loads.
__device__ __forceinline__ void prefill_load8_aligned(const float* src, float* x) {
  const float4 a = reinterpret_cast<const float4*>(src)[0];
  const float4 b = reinterpret_cast<const float4*>(src)[1];
  x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w;
  x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
}

/// qkv(t, c + u) for u < 8 into x[u], as float: two 16-byte loads (float) or one (bf16,
/// widened exactly) when `vec` (prefill_vector_rows, c a multiple of 8), else 8 reads.
template <class Reader>
__device__ __forceinline__ void prefill_load8(const Reader& in, bool vec, int t, long c, float* x) {
  using A =
      typename std::remove_cv<typename std::remove_reference<decltype(in.m_qkv(0, 0))>::type>::type;
  if (vec) {
    const void* src = &in.m_qkv(t, c);
    if constexpr (std::is_same<A, float>::value) {
      prefill_load8_aligned(static_cast<const float*>(src), x);
    } else {
      static_assert(sizeof(A) == 2, "float or bf16 activations");
      const uint4 w = *static_cast<const uint4*>(src);
      const unsigned h[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        x[2 * u] = __uint_as_float(h[u] << 16);  // bf16 widened: its bits in the high half
        x[2 * u + 1] = __uint_as_float(h[u] & 0xffff0000u);
      }
    }
  } else {
#pragma unroll
    for (int u = 0; u < 8; ++u) x[u] = in.qkv(t, c + u);
  }
}

/// x[0, 8) to shared memory at `dst` (16-byte aligned): two 16-byte stores.
__device__ __forceinline__ void prefill_store8(float* dst, const float* x) {
  reinterpret_cast<float4*>(dst)[0] = make_float4(x[0], x[1], x[2], x[3]);
  reinterpret_cast<float4*>(dst)[1] = make_float4(x[4], x[5], x[6], x[7]);
}

/// The shared memory of the chunk kernel, in floats: Q^ (then diag(beta) V) and K^ (then
/// diag(beta G) K^) as [C][D + 4], L and A as [C][C + 4], the inverse's block products
/// [3][16][16], and four per-token vectors.
template <int D>
constexpr int prefill_chunk_smem_floats() {
  return 2 * kPrefillChunk * (D + 4) + 2 * kPrefillChunk * (kPrefillChunk + 4) + 3 * 256 +
         4 * kPrefillChunk;
}

/// Kernel 1: one block per (chunk slot, value head); see the file's comment.
template <class ActT, class StateT, int D, bool Bf16>
__global__ void __launch_bounds__(kPrefillChunkThreads, 2)
    prefill_chunk_kernel(const PrefillParams<ActT, StateT, typename Kokkos::Cuda::memory_space> p) {
  constexpr int C = kPrefillChunk;
  constexpr int T = kPrefillChunkThreads;
  constexpr int LD = D + 4;
  constexpr int LC = C + 4;
  constexpr int PER = C * D / T;  // elements of a [C][D] tile per thread
  constexpr int NV = PER / 8;     // ... in runs of 8 consecutive columns
  constexpr long SW = PrefillBlock::row(D), SC = PrefillBlock::crow();
  using E = PrefillOp<Bf16>;
  extern __shared__ float smem[];
  float* Qs = smem;         // Q^, then diag(beta) V
  float* Ks = Qs + C * LD;  // K^, then diag(beta G) K^
  float* Ls = Ks + C * LD;  // L: beta_t M(t, i) k^_t . k^_i below the diagonal
  float* As = Ls + C * LC;  // A = (I + L)^-1
  float* Ts = As + C * LC;  // block products of the inverse
  float* gs = Ts + 3 * 256;
  float* bs = gs + C;
  float* es = bs + C;  // G_r = exp(g_r)
  float* ed = es + C;  // G_C / G_r (0 past the chunk)

  const long long s = blockIdx.x;
  const int h = blockIdx.y;
  const int b = prefill_slot_row(p, s);
  long long start = 0, end = 0;
  if (!p.row(b, start, end)) return;
  const long long t0 = start + (s - prefill_chunk_base(p.in.row_offsets(b), b)) * C;
  if (t0 < start || t0 >= end) return;
  const int n = static_cast<int>(end - t0 < C ? end - t0 : C);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const long qc = long(h / p.group) * D, kc = p.key_dim + qc, vc = 2 * p.key_dim + long(h) * D;
  // A [C][D] tile of qkv columns [col, col + D) of the chunk's tokens into registers (zero
  // past the chunk), all loads in flight together: run j of a thread is the 8 columns
  // [tile_c(j), +8) of row tile_r(j), read by 16-byte loads where qkv allows.
  const bool vec = prefill_vector_rows(p.in.m_qkv);
  const auto tile_r = [&](int j) { return (tid + j * T) / (D / 8); };
  const auto tile_c = [&](int j) { return 8 * ((tid + j * T) % (D / 8)); };
  const auto load = [&](float(&x)[PER], long col) {
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int r = tile_r(j), c = tile_c(j);
      if (r < n) {
        prefill_load8(p.in, vec, static_cast<int>(t0 + r), col + c, x + 8 * j);
      } else {
#pragma unroll
        for (int u = 0; u < 8; ++u) x[8 * j + u] = 0.0f;
      }
    }
  };
  {
    float q[PER], k[PER];
    load(q, qc);
    load(k, kc);
    if (tid < C) {
      const float a = tid < n ? p.in.decay(static_cast<int>(t0 + tid), h) : 1.0f;
      gs[tid] = a > 0.0f ? fmaxf(logf(a), -80.0f) : -80.0f;  // as the host: decay 0 stays finite
      bs[tid] = tid < n ? p.in.beta(static_cast<int>(t0 + tid), h) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int o = tile_r(j) * LD + tile_c(j);
      prefill_store8(Qs + o, q + 8 * j);
      prefill_store8(Ks + o, k + 8 * j);
    }
  }
  __syncthreads();
  if (warp == 0) {  // the cumulative log-decays: two tokens a lane, a scan over the lanes
    const float a0 = gs[2 * lane], a1 = gs[2 * lane + 1];
    float sum = a0 + a1;
    for (int o = 1; o < 32; o <<= 1) {
      const float x = __shfl_up_sync(0xffffffffu, sum, o);
      if (lane >= o) sum += x;
    }
    gs[2 * lane] = sum - a1;
    gs[2 * lane + 1] = sum;
  }
  // Norms: a warp per row.
  for (int r = warp; r < n; r += T / 32) {
    float qq = 0.0f, kk = 0.0f;
    for (int c = lane; c < D; c += 32) {
      qq = fmaf(Qs[r * LD + c], Qs[r * LD + c], qq);
      kk = fmaf(Ks[r * LD + c], Ks[r * LD + c], kk);
    }
    for (int o = 16; o > 0; o >>= 1) {
      qq += __shfl_xor_sync(0xffffffffu, qq, o);
      kk += __shfl_xor_sync(0xffffffffu, kk, o);
    }
    const float qf = p.q_scale / sqrtf(qq + 1e-6f);
    const float kinv = 1.0f / sqrtf(kk + 1e-6f);
    for (int c = lane; c < D; c += 32) {
      Qs[r * LD + c] *= qf;
      Ks[r * LD + c] *= kinv;
    }
  }
  __syncthreads();
  const float gl = gs[n - 1];
  if (tid < C) {
    es[tid] = expf(gs[tid]);
    ed[tid] = tid < n ? expf(gl - gs[tid]) : 0.0f;
  }
  float* blk = p.ws + (s * p.nv + h) * PrefillBlock::floats(D, D);
  E* const op = reinterpret_cast<E*>(blk);
  // Gram and Q^ K^T: L to shared memory, P to the workspace (zero above the diagonal).
  {
    const int r0 = 16 * (warp & 3), c0 = 32 * (warp >> 2);
    float kk[4][4] = {}, qk[4][4] = {};
    if (c0 <= r0 + 15) {
      const auto bk = [&](int k, int c) { return Ks[(c0 + c) * LD + k]; };
      prefill_warp_mma<Bf16, 4>(
          kk, D, [&](int r, int k) { return Ks[(r0 + r) * LD + k]; }, bk);
      prefill_warp_mma<Bf16, 4>(
          qk, D, [&](int r, int k) { return Qs[(r0 + r) * LD + k]; }, bk);
    }
    E* P = op + PrefillBlock::p(D);
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = r0 + prefill_acc_row(g, 2 * half), c = c0 + nt * 8 + prefill_acc_col(t, 0);
        float pv[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const float m = c + j <= r ? expf(gs[r] - gs[c + j]) : 0.0f;
          Ls[r * LC + c + j] = c + j < r ? bs[r] * m * kk[nt][2 * half + j] : 0.0f;
          pv[j] = m * qk[nt][2 * half + j];
        }
        prefill_store2<Bf16>(P + r * SC + c, pv[0], pv[1]);
      }
    }
  }
  __syncthreads();
  // Qg and Kd^T to the workspace.
  for (int e = tid; e < C * D / 2; e += T) {
    const int r = e / (D / 2), c = 2 * (e % (D / 2));
    prefill_store2<Bf16>(op + PrefillBlock::qg(D) + r * SW + c, es[r] * Qs[r * LD + c],
                         es[r] * Qs[r * LD + c + 1]);
  }
  for (int e = tid; e < C * D / 2; e += T) {
    const int c = e / (C / 2), r = 2 * (e % (C / 2));
    prefill_store2<Bf16>(op + PrefillBlock::kdt(D) + c * SC + r, ed[r] * Ks[r * LD + c],
                         ed[r + 1] * Ks[(r + 1) * LD + c]);
  }
  {
    float v[PER];
    load(v, vc);
    // The inverse's diagonal blocks, a thread per (block, column): x = (I + L_bb)^-1 e_j.
    if (tid < C) {
      const int o = 16 * (tid >> 4), j = tid & 15;
      float x[16];
#pragma unroll
      for (int r = 0; r < 16; ++r) {
        float acc = r == j ? 1.0f : 0.0f;
#pragma unroll
        for (int i = 0; i < r; ++i) acc = fmaf(-Ls[(o + r) * LC + o + i], x[i], acc);
        x[r] = acc;
      }
#pragma unroll
      for (int r = 0; r < 16; ++r) As[(o + r) * LC + o + j] = x[r];
    }
    __syncthreads();  // Q^ and K^ read by every thread
#pragma unroll
    for (int j = 0; j < NV; ++j) {
      const int r = tile_r(j), o = r * LD + tile_c(j);
      const float fq = bs[r], fk = bs[r] * es[r];
      float kx[8];
      prefill_load8_aligned(Ks + o, kx);
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        v[8 * j + u] *= fq;
        kx[u] *= fk;
      }
      prefill_store8(Qs + o, v + 8 * j);
      prefill_store8(Ks + o, kx);
    }
  }
  // The blocks below the diagonal, by distance d: T_ij = sum_{k=j}^{i-1} L_ik A_kj, then
  // A_ij = -A_ii T_ij (A_ii is lower triangular: m up to r). The loops stay rolled: unrolled,
  // they take the Dk = 128 bf16 instantiations past their 128 registers (spills).
  for (int d = 1; d < 4; ++d) {
    const int nb = 4 - d;
    for (int e = tid; e < nb * 256; e += T) {
      const int j = e >> 8, i = j + d, r = (e >> 4) & 15, c = e & 15;
      float acc = 0.0f;
      for (int k = 16 * j; k < 16 * i; ++k) {
        acc = fmaf(Ls[(16 * i + r) * LC + k], As[k * LC + 16 * j + c], acc);
      }
      Ts[e] = acc;
    }
    __syncthreads();
    for (int e = tid; e < nb * 256; e += T) {
      const int j = e >> 8, i = j + d, r = (e >> 4) & 15, c = e & 15;
      float acc = 0.0f;
      for (int m = 0; m <= r; ++m) {
        acc = fmaf(As[(16 * i + r) * LC + 16 * i + m], Ts[(e & ~255) + m * 16 + c], acc);
      }
      As[(16 * i + r) * LC + 16 * j + c] = -acc;
    }
    __syncthreads();
  }
  // W = A diag(beta G) K^ and U = A diag(beta) V (A lower triangular: the k-steps up to the
  // row tile's diagonal).
  {
    constexpr int NT = D / 16;
    const int rt = warp & 3, r0 = 16 * rt, c0 = (D / 2) * (warp >> 2);
    const auto a = [&](int r, int k) { return As[(r0 + r) * LC + k]; };
    float acc[NT][4] = {};
    prefill_warp_mma<Bf16, NT>(acc, 16 * (rt + 1), a,
                               [&](int k, int c) { return Ks[k * LD + c0 + c]; });
    E* W = op + PrefillBlock::w(D);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int r = r0 + prefill_acc_row(g, 2 * half), c = c0 + nt * 8 + prefill_acc_col(t, 0);
        prefill_store2<Bf16>(W + r * SW + c, acc[nt][2 * half], acc[nt][2 * half + 1]);
        acc[nt][2 * half] = 0.0f;
        acc[nt][2 * half + 1] = 0.0f;
      }
    }
    prefill_warp_mma<Bf16, NT>(acc, 16 * (rt + 1), a,
                               [&](int k, int c) { return Qs[k * LD + c0 + c]; });
    float* UT = blk + PrefillBlock::ut(D);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = r0 + prefill_acc_row(g, e), c = c0 + nt * 8 + prefill_acc_col(t, e);
        UT[c * C + r] = acc[nt][e];
      }
    }
  }
  if (tid == 0) blk[PrefillBlock::gc(D, D)] = expf(gl);
}

/// `bytes` (a multiple of 16, both ends 16-byte aligned) from global to shared memory,
/// asynchronously, by the whole block of `Threads`.
template <int Threads>
__device__ __forceinline__ void prefill_copy(void* sm, const void* gm, int bytes) {
  for (int o = 16 * static_cast<int>(threadIdx.x); o < bytes; o += 16 * Threads) {
    async_copy<16>(static_cast<unsigned char*>(sm) + o, static_cast<const unsigned char*>(gm) + o);
  }
}

/// acc[nt] += sign A B for a warp's n-tiles nt < NT: A (16 x K) held in accumulator tiles
/// a[K / 8] (the layout the products leave), B (K x 8 NT) as the rows of its columns in shared
/// memory, B[k][n] at bs[n * ld + k]. `Lower`: B[k][n] = 0 for k > n, those k-steps skipped.
template <bool Bf16, int NT, int K, bool Lower = false>
__device__ __forceinline__ void prefill_tile_mma(float (&acc)[NT][4], const float (&a)[K / 8][4],
                                                 const PrefillOp<Bf16>* bs, int ld, float sign) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  if constexpr (Bf16) {
#pragma unroll
    for (int ks = 0; ks < K / 16; ++ks) {
      const float* lo = a[2 * ks];
      const float* hi = a[2 * ks + 1];
      const std::uint32_t af[4] = {
          prefill_bf16x2(sign * lo[0], sign * lo[1]), prefill_bf16x2(sign * lo[2], sign * lo[3]),
          prefill_bf16x2(sign * hi[0], sign * hi[1]), prefill_bf16x2(sign * hi[2], sign * hi[3])};
#pragma unroll
      for (int nt = Lower ? 2 * ks : 0; nt < NT; ++nt) {
        const std::uint16_t* b = bs + (8 * nt + g) * ld + 16 * ks + 2 * t;
        const std::uint32_t bf[2] = {*reinterpret_cast<const std::uint32_t*>(b),
                                     *reinterpret_cast<const std::uint32_t*>(b + 8)};
        prefill_mma_bf16(acc[nt], af, bf);
      }
    }
  } else {
#pragma unroll
    for (int ks = 0; ks < K / 8; ++ks) {
      const float av[4] = {sign * a[ks][0], sign * a[ks][2], sign * a[ks][1], sign * a[ks][3]};
      std::uint32_t ah[4], al[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        ah[e] = prefill_tf32(av[e]);
        al[e] = prefill_tf32(av[e] - __uint_as_float(ah[e]));
      }
#pragma unroll
      for (int nt = Lower ? ks : 0; nt < NT; ++nt) {
        const float2 bv = *reinterpret_cast<const float2*>(bs + (8 * nt + g) * ld + 8 * ks + 2 * t);
        const std::uint32_t bh[2] = {prefill_tf32(bv.x), prefill_tf32(bv.y)};
        const std::uint32_t bl[2] = {prefill_tf32(bv.x - __uint_as_float(bh[0])),
                                     prefill_tf32(bv.y - __uint_as_float(bh[1]))};
        float d[4] = {};
        prefill_mma_tf32(d, al, bh);
        prefill_mma_tf32(d, ah, bl);
        prefill_mma_tf32(d, ah, bh);
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[nt][e] += d[e];
      }
    }
  }
}

/// The shared memory of the state kernel with CG column groups, in bytes: the operands
/// (PrefillBlock's first region), the block's U^T rows [16 CG][C + 8] floats, the warps'
/// exchange slots [2 CG][32][32 lanes] floats and the chunk's decay (16 bytes).
template <int D, bool Bf16, int CG>
constexpr int prefill_state_smem_bytes() {
  return static_cast<int>(sizeof(PrefillOp<Bf16>) * PrefillBlock::operands(D)) +
         4 * kPrefillWarpCols * CG * (kPrefillChunk + PrefillBlock::kPad) + 4 * 2 * CG * 32 * 32 +
         16;
}

/// Kernel 2: one block per (row, value head, 16 CG state columns); see the file's comment.
template <class ActT, class StateT, int D, bool Bf16, int CG>
__global__ void __launch_bounds__(64 * CG)
    prefill_state_kernel(const PrefillParams<ActT, StateT, typename Kokkos::Cuda::memory_space> p) {
  constexpr int C = kPrefillChunk;
  constexpr int T = 64 * CG;                 // 2 CG warps
  constexpr int NC = kPrefillWarpCols * CG;  // the block's state columns
  constexpr int LU = C + PrefillBlock::kPad;
  constexpr int SW = PrefillBlock::row(D), SC = PrefillBlock::crow();
  constexpr int DH = D / 2;   // the key rows of a warp
  constexpr int NS = DH / 8;  // its state tile's accumulator tiles (8 key rows each)
  constexpr int NO = C / 8;   // a chunk's accumulator tiles (8 tokens each)
  constexpr int NH = NO / 2;  // the tiles whose outputs a warp writes
  using E = PrefillOp<Bf16>;
  extern __shared__ __align__(16) unsigned char smem_bytes[];
  E* const ops = reinterpret_cast<E*>(smem_bytes);
  const E* const Ws = ops + PrefillBlock::w(D);
  const E* const Qs = ops + PrefillBlock::qg(D);
  const E* const Ks = ops + PrefillBlock::kdt(D);
  const E* const Ps = ops + PrefillBlock::p(D);
  float* const Us = reinterpret_cast<float*>(smem_bytes + sizeof(E) * PrefillBlock::operands(D));
  float* const Xs = Us + NC * LU;
  float* const gcs = Xs + 2 * CG * 32 * 32;

  const int b = blockIdx.x, h = blockIdx.y, col0 = blockIdx.z * NC;
  long long start = 0, end = 0;
  if (!p.row(b, start, end)) return;
  const std::uint32_t slot = p.slots(b);
  const long long base = prefill_chunk_base(p.in.row_offsets(b), b);
  const long long chunks = (end - start + C - 1) / C;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const int cw = kPrefillWarpCols * (warp % CG);   // the warp's first column in the block's tile
  const int kh = warp / CG;                        // the warp's key half [kh DH, kh DH + DH)
  float* const mine = Xs + warp * 32 * 32 + lane;  // this lane's exchange slots, 32 apart
  const float* const peer = Xs + (kh ? warp - CG : warp + CG) * 32 * 32 + lane;  // the peer's
  const auto block = [&](long long c) {
    return p.ws + ((base + c) * p.nv + h) * PrefillBlock::floats(D, D);
  };
  const auto stage_w = [&](long long c) {  // W, the block's U^T rows and the decay
    if (c < chunks) {
      const float* blk = block(c);
      prefill_copy<T>(ops, blk, static_cast<int>(sizeof(E) * C * SW));
      const float* ut = blk + PrefillBlock::ut(D) + long(col0) * C;
      for (int e = tid; e < NC * C / 4; e += T) {
        const int r = e / (C / 4), q = 4 * (e % (C / 4));
        async_copy<16>(Us + r * LU + q, ut + r * C + q);
      }
      if (tid == 0) async_copy<16>(gcs, blk + PrefillBlock::gc(D, D));
    }
    async_commit();
  };
  const auto stage_qkp = [&](long long c) {  // Qg, Kd^T and P
    if (c < chunks) {
      const E* blk = reinterpret_cast<const E*>(block(c));
      constexpr long first = PrefillBlock::qg(D);
      prefill_copy<T>(ops + first, blk + first,
                      static_cast<int>(sizeof(E) * (PrefillBlock::operands(D) - first)));
    }
    async_commit();
  };
  stage_w(0);
  stage_qkp(0);
  // S^T: element e of tile j at (column, key) = (col(e), key(j, e)).
  const auto key = [&](int j, int e) { return kh * DH + 8 * j + prefill_acc_col(t, e); };
  const auto col = [&](int e) { return col0 + cw + prefill_acc_row(g, e); };
  float S[NS][4];
#pragma unroll
  for (int j = 0; j < NS; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) S[j][e] = to_float(p.state(slot, h, key(j, e), col(e)));
  }
  for (long long c = 0; c < chunks; ++c) {
    const long long t0 = start + c * C;
    const int n = static_cast<int>(end - t0 < C ? end - t0 : C);
    async_wait_groups<1>();  // W, U^T and the decay of chunk c
    __syncthreads();
    // D^T = U^T - S^T W^T: each key half's share, then the two added through shared memory.
    float Dt[NO][4];
#pragma unroll
    for (int nt = 0; nt < NO; ++nt) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const float2 u = *reinterpret_cast<const float2*>(
            Us + (cw + prefill_acc_row(g, 2 * half)) * LU + 8 * nt + prefill_acc_col(t, 0));
        Dt[nt][2 * half] = kh == 0 ? u.x : 0.0f;
        Dt[nt][2 * half + 1] = kh == 0 ? u.y : 0.0f;
      }
    }
    const float gc = gcs[0];
    prefill_tile_mma<Bf16, NO, DH>(Dt, S, Ws + kh * DH, SW, -1.0f);
#pragma unroll
    for (int i = 0; i < 4 * NO; ++i) mine[32 * i] = Dt[i / 4][i % 4];
    __syncthreads();  // the shares written; every warp is done with W and U^T
#pragma unroll
    for (int i = 0; i < 4 * NO; ++i) Dt[i / 4][i % 4] += peer[32 * i];
    stage_w(c + 1);
    async_wait_groups<1>();  // Qg, Kd^T and P of chunk c
    __syncthreads();         // (and every warp has read its peer's share of D)
    // O^T = S^T Qg^T + D^T P^T: each key half's share of S^T Qg^T (the upper half adds
    // D^T P^T); a warp writes the outputs of the tiles [NH kh, NH kh + NH), its peer's
    // share of those added.
    {
      float O[NO][4] = {};
      prefill_tile_mma<Bf16, NO, DH>(O, S, Qs + kh * DH, SW, 1.0f);
      if (kh == 1) prefill_tile_mma<Bf16, NO, C, true>(O, Dt, Ps, SC, 1.0f);
#pragma unroll
      for (int q = 0; q < NH; ++q) {
#pragma unroll
        for (int e = 0; e < 4; ++e) mine[32 * (4 * q + e)] = kh == 0 ? O[NH + q][e] : O[q][e];
      }
      __syncthreads();
#pragma unroll
      for (int q = 0; q < NH; ++q) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float v = (kh == 0 ? O[q][e] : O[NH + q][e]) + peer[32 * (4 * q + e)];
          const int r = 8 * (NH * kh + q) + prefill_acc_col(t, e);
          if (r < n) p.out.write(static_cast<int>(t0 + r), long(h) * D + col(e), v);
        }
      }
    }
    // S^T <- G_C S^T + D^T Kd on the warp's key half, the product from zero and added in
    // float32.
    {
      float acc[NS][4] = {};
      prefill_tile_mma<Bf16, NS, C>(acc, Dt, Ks + kh * DH * SC, SC, 1.0f);
#pragma unroll
      for (int j = 0; j < NS; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) S[j][e] = fmaf(gc, S[j][e], acc[j][e]);
      }
    }
    __syncthreads();  // every warp is done with Qg, Kd^T, P and its peer's share of O
    stage_qkp(c + 1);
  }
  async_wait_groups<0>();
#pragma unroll
  for (int j = 0; j < NS; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      p.state(slot, h, key(j, e), col(e)) = from_float<StateT>(S[j][e]);
    }
  }
}

/// The state kernel's column groups for a call: 2 when its B x nv x D / 32 blocks of 4 warps
/// fit the SMs one each (a grid of 8-warp blocks would leave half of them idle), else 4: the
/// smaller blocks are faster only while the grid leaves SMs free (docs/performance.md).
inline int prefill_state_col_groups(long long batch, int nv, int D, int sms) {
  return batch * nv * (D / 32) <= sms ? 2 : 4;
}

template <class ActT, class StateT, int D, bool Bf16, int CG>
cudaError_t launch_prefill_state(cudaStream_t stream,
                                 const PrefillParams<ActT, StateT, Kokkos::CudaSpace>& p) {
  static_assert(D % (kPrefillWarpCols * CG) == 0, "the state kernel's column blocks tile D");
  const auto state = prefill_state_kernel<ActT, StateT, D, Bf16, CG>;
  const int smem = prefill_state_smem_bytes<D, Bf16, CG>();
  cudaError_t err = cudaFuncSetAttribute(state, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err == cudaSuccess) {
    state<<<dim3(static_cast<unsigned>(p.batch), static_cast<unsigned>(p.nv),
                 D / (kPrefillWarpCols * CG)),
            64 * CG, smem, stream>>>(p);
    err = cudaGetLastError();
  }
  return err;
}

template <class ActT, class StateT, int D, bool Bf16>
void launch_prefill_cuda_kernels(
    const Kokkos::Cuda& space,
    const PrefillParams<ActT, StateT, typename Kokkos::Cuda::memory_space>& p) {
  const cudaStream_t stream = space.cuda_stream();
  const auto chunk = prefill_chunk_kernel<ActT, StateT, D, Bf16>;
  const int chunk_smem = static_cast<int>(sizeof(float)) * prefill_chunk_smem_floats<D>();
  cudaError_t err =
      cudaFuncSetAttribute(chunk, cudaFuncAttributeMaxDynamicSharedMemorySize, chunk_smem);
  if (err == cudaSuccess && p.chunk_slots > 0) {
    chunk<<<dim3(static_cast<unsigned>(p.chunk_slots), static_cast<unsigned>(p.nv)),
            kPrefillChunkThreads, chunk_smem, stream>>>(p);
    err = cudaGetLastError();
  }
  if (err == cudaSuccess) {
    const int sms = space.cuda_device_prop().multiProcessorCount;
    err = prefill_state_col_groups(p.batch, p.nv, D, sms) == 2
              ? launch_prefill_state<ActT, StateT, D, Bf16, 2>(stream, p)
              : launch_prefill_state<ActT, StateT, D, Bf16, 4>(stream, p);
  }
  if (err != cudaSuccess) {
    throw std::runtime_error(std::string("gdn::recurrence_prefill: CUDA launch failed: ") +
                             cudaGetErrorString(err));
  }
}

/// The prefill on CUDA in the call's precision.
template <class ActT, class StateT, int D>
void launch_prefill_cuda(
    const Kokkos::Cuda& space,
    const PrefillParams<ActT, StateT, typename Kokkos::Cuda::memory_space>& p) {
  if (p.precision == PrefillPrecision::bf16) {
    launch_prefill_cuda_kernels<ActT, StateT, D, true>(space, p);
  } else {
    launch_prefill_cuda_kernels<ActT, StateT, D, false>(space, p);
  }
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_PREFILL_CUDA_HPP
