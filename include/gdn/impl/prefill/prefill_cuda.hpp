#ifndef GDN_IMPL_PREFILL_CUDA_HPP
#define GDN_IMPL_PREFILL_CUDA_HPP

/// \file prefill_cuda.hpp
/// \brief The chunked prefill on CUDA: warp-level tensor-core products (mma.sync) in the
/// call's precision, two kernels on the execution space's stream.
///
/// PrefillChunkKernel, one block per (chunk slot, value head), all chunks in parallel: the
/// normalised queries and keys, the cumulative log-decays, the Gram K^ K^T and Q^ K^T on
/// tensor cores, the lower-triangular system (I + L) X = RHS solved for W and U by forward
/// substitution in float32 (a thread per column), and W, U, Kd, Qg, P and the chunk's decay
/// written to the chunk's workspace block (prefill_params.hpp).
///
/// PrefillStateKernel, one block per (row, value head, 32 state columns), its chunks in
/// order: the state's column tile in shared memory (float32), per chunk D = U - W S,
/// O = Qg S + P D (written to `out`) and S <- G_C S + Kd^T D, all on tensor cores, the
/// workspace operands read straight from global memory into fragments.
///
/// Preconditions: sm_80 or newer (mma.sync with bf16 and tf32); the call's arguments
/// validated; Dk == Dv == D in {64, 128}. Both kernels run 4 warps.

#include <gdn/bf16.hpp>
#include <gdn/impl/prefill/prefill_params.hpp>

#include <Kokkos_Core.hpp>

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gdn {
namespace Impl {

inline constexpr int kPrefillWarps = 4;
inline constexpr int kPrefillThreads = 32 * kPrefillWarps;
inline constexpr int kPrefillCols = 32;  // state columns per block of the state kernel

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

/// Kernel 1: one block per (chunk slot, value head). Shared memory: Q^, K^ (then the right
/// sides and solutions of W), V (then U) as [C][D + 4] floats, L as [C][C + 4], the
/// cumulative log-decays, betas and the decays from the chunk's start and to its end.
template <class ActT, class StateT, int D, bool Bf16>
__global__ void __launch_bounds__(kPrefillThreads)
    prefill_chunk_kernel(const PrefillParams<ActT, StateT, typename Kokkos::Cuda::memory_space> p) {
  constexpr int C = kPrefillChunk;
  constexpr int LD = D + 4;
  constexpr int LC = C + 4;
  extern __shared__ float smem[];
  float* Qs = smem;
  float* Ks = Qs + C * LD;
  float* Vs = Ks + C * LD;
  float* Ls = Vs + C * LD;
  float* gs = Ls + C * LC;
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
  const long qc = long(h / p.group) * D, kc = p.key_dim + qc, vc = 2 * p.key_dim + long(h) * D;

  for (int e = tid; e < C * D; e += kPrefillThreads) {
    const int r = e / D, c = e % D;
    const bool in = r < n;
    const int tok = static_cast<int>(t0 + r);
    Qs[r * LD + c] = in ? p.in.qkv(tok, qc + c) : 0.0f;
    Ks[r * LD + c] = in ? p.in.qkv(tok, kc + c) : 0.0f;
    Vs[r * LD + c] = in ? p.in.qkv(tok, vc + c) : 0.0f;
  }
  if (tid < C) {
    const int tok = static_cast<int>(t0 + tid);
    const float a = tid < n ? p.in.decay(tok, h) : 1.0f;
    gs[tid] = a > 0.0f ? fmaxf(logf(a), -80.0f) : -80.0f;  // as the host: decay 0 stays finite
    bs[tid] = tid < n ? p.in.beta(tok, h) : 0.0f;
  }
  __syncthreads();
  if (tid == 0) {
    float cum = 0.0f;
    for (int r = 0; r < C; ++r) {
      cum += r < n ? gs[r] : 0.0f;
      gs[r] = cum;
    }
  }
  // Norms: a warp per row.
  for (int r = warp; r < n; r += kPrefillWarps) {
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

  float* blk = p.ws + (s * p.nv + h) * PrefillBlock::floats(D, D);
  // Gram and Q^ K^T: warp w the rows [16 w, 16 w + 16), all C columns.
  {
    float kk[C / 8][4] = {}, qk[C / 8][4] = {};
    const int r0 = 16 * warp;
    const auto bk = [&](int k, int c) { return Ks[c * LD + k]; };
    prefill_warp_mma<Bf16, C / 8>(
        kk, D, [&](int r, int k) { return Ks[(r0 + r) * LD + k]; }, bk);
    prefill_warp_mma<Bf16, C / 8>(
        qk, D, [&](int r, int k) { return Qs[(r0 + r) * LD + k]; }, bk);
    const int g = lane >> 2, t = lane & 3;
    float* P = blk + PrefillBlock::p(D, D);
#pragma unroll
    for (int nt = 0; nt < C / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = r0 + g + (e >= 2 ? 8 : 0), c = nt * 8 + 2 * t + (e & 1);
        const float m = c <= r ? expf(gs[r] - gs[c]) : 0.0f;
        Ls[r * LC + c] = c < r ? bs[r] * m * kk[nt][e] : 0.0f;
        P[r * C + c] = m * qk[nt][e];
      }
    }
  }
  __syncthreads();
  // Qg, Kd to the workspace; the right sides diag(beta G) K^ and diag(beta) V in place.
  const float gl = gs[n - 1];
  if (tid < C) {
    es[tid] = expf(gs[tid]);
    ed[tid] = tid < n ? expf(gl - gs[tid]) : 0.0f;
  }
  if (tid == 0) blk[PrefillBlock::gc(D, D)] = expf(gl);
  __syncthreads();
  for (int e = tid; e < C * D; e += kPrefillThreads) {
    const int r = e / D, c = e % D;
    const float k = Ks[r * LD + c];
    blk[PrefillBlock::qg(D) + e] = es[r] * Qs[r * LD + c];
    blk[PrefillBlock::kd(D) + e] = ed[r] * k;
    Ks[r * LD + c] = bs[r] * es[r] * k;
    Vs[r * LD + c] *= bs[r];
  }
  __syncthreads();
  // Forward substitution, a thread per column of [W | U]: x_r -= sum_{i<r} L(r, i) x_i, in
  // blocks of 16 rows: first the rows before the block (16 independent sums, so the loads
  // and FMAs overlap), then the block's own triangle on its rows in registers.
  for (int col = tid; col < 2 * D; col += kPrefillThreads) {
    float* x = col < D ? Ks + col : Vs + (col - D);
    for (int j0 = 0; j0 < C; j0 += 16) {
      float v[16];
#pragma unroll
      for (int r = 0; r < 16; ++r) v[r] = x[(j0 + r) * LD];
      for (int i = 0; i < j0; ++i) {
        const float xi = x[i * LD];
#pragma unroll
        for (int r = 0; r < 16; ++r) v[r] = fmaf(-Ls[(j0 + r) * LC + i], xi, v[r]);
      }
#pragma unroll
      for (int r = 1; r < 16; ++r) {
#pragma unroll
        for (int i = 0; i < r; ++i) v[r] = fmaf(-Ls[(j0 + r) * LC + j0 + i], v[i], v[r]);
      }
#pragma unroll
      for (int r = 0; r < 16; ++r) x[(j0 + r) * LD] = v[r];
    }
  }
  __syncthreads();
  for (int e = tid; e < C * D; e += kPrefillThreads) {
    const int r = e / D, c = e % D;
    blk[PrefillBlock::w(D) + e] = Ks[r * LD + c];
    blk[PrefillBlock::u(D) + e] = Vs[r * LD + c];
  }
}

/// A 16-byte asynchronous copy from global to shared memory (cp.async, sm_80+), and the
/// group commit and wait around it.
__device__ __forceinline__ void prefill_cp16(float* smem, const float* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void prefill_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
/// Waits until at most `N` of this thread's committed groups are in flight.
template <int N>
__device__ __forceinline__ void prefill_cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/// Rows x Cols floats (Cols a multiple of 4, rows 16-byte aligned) from global memory (row
/// stride `gs`) to shared memory (row stride `ss`), asynchronously, by the whole block.
template <int Rows, int Cols>
__device__ __forceinline__ void prefill_stage(float* sm, int ss, const float* gm, long gs) {
  constexpr int V = Cols / 4;
  for (int e = threadIdx.x; e < Rows * V; e += kPrefillThreads) {
    const int r = e / V, c = (e % V) * 4;
    prefill_cp16(sm + r * ss + c, gm + r * gs + c);
  }
}

/// The shared memory of the state kernel, in floats: S [D][NC+4], D and U [C][NC+4], W, Qg
/// and Kd [C][D+4], P [C][C+4].
template <int D>
constexpr int prefill_state_smem_floats() {
  return (D + 2 * kPrefillChunk) * (kPrefillCols + 4) + 3 * kPrefillChunk * (D + 4) +
         kPrefillChunk * (kPrefillChunk + 4);
}

/// Kernel 2: one block per (row, value head, kPrefillCols state columns), the row's chunks
/// in order. The state tile stays in shared memory (float32) across the chunks; each
/// chunk's operands are staged into shared memory by cp.async in two groups, each issued as
/// soon as the previous chunk is done with its buffers: W and U (step a, D = U - W S) right
/// after step a, Qg, P and Kd (steps b and c) after the state update, so that the copies
/// overlap the other steps.
template <class ActT, class StateT, int D, bool Bf16>
__global__ void __launch_bounds__(kPrefillThreads)
    prefill_state_kernel(const PrefillParams<ActT, StateT, typename Kokkos::Cuda::memory_space> p) {
  constexpr int C = kPrefillChunk;
  constexpr int NC = kPrefillCols;
  constexpr int LS = NC + 4, LD = D + 4, LC = C + 4;
  constexpr int NT = NC / 8;                  // n-tiles per warp
  constexpr int SR = D / kPrefillWarps / 16;  // state m-tiles per warp
  extern __shared__ float smem[];
  float* Ss = smem;         // [D][LS]
  float* Dm = Ss + D * LS;  // [C][LS]
  float* Us = Dm + C * LS;  // [C][LS]
  float* Ws = Us + C * LS;  // [C][LD]
  float* Qs = Ws + C * LD;  // [C][LD]
  float* Ks = Qs + C * LD;  // [C][LD]
  float* Ps = Ks + C * LD;  // [C][LC]

  const int b = blockIdx.x, h = blockIdx.y, col0 = blockIdx.z * NC;
  long long start = 0, end = 0;
  if (!p.row(b, start, end)) return;
  const std::uint32_t slot = p.slots(b);
  const long long base = prefill_chunk_base(p.in.row_offsets(b), b);
  const long long chunks = (end - start + C - 1) / C;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const auto block = [&](long long c) {
    return p.ws + ((base + c) * p.nv + h) * PrefillBlock::floats(D, D);
  };
  const auto stage_wu = [&](long long c) {
    if (c < chunks) {
      const float* blk = block(c);
      prefill_stage<C, D>(Ws, LD, blk + PrefillBlock::w(D), D);
      prefill_stage<C, NC>(Us, LS, blk + PrefillBlock::u(D) + col0, D);
    }
    prefill_cp_commit();
  };
  const auto stage_qpk = [&](long long c) {
    if (c < chunks) {
      const float* blk = block(c);
      prefill_stage<C, D>(Qs, LD, blk + PrefillBlock::qg(D), D);
      prefill_stage<C, C>(Ps, LC, blk + PrefillBlock::p(D, D), C);
      prefill_stage<C, D>(Ks, LD, blk + PrefillBlock::kd(D), D);
    }
    prefill_cp_commit();
  };
  stage_wu(0);
  stage_qpk(0);
  for (int e = tid; e < D * NC; e += kPrefillThreads) {
    const int i = e / NC, j = e % NC;
    Ss[i * LS + j] = to_float(p.state(slot, h, i, col0 + j));
  }
  const auto bs = [&](int k, int c) { return Ss[k * LS + c]; };
  const auto bd = [&](int k, int c) { return Dm[k * LS + c]; };
  const int r0 = 16 * warp;
  for (long long c = 0; c < chunks; ++c) {
    const long long t0 = start + c * C;
    const int n = static_cast<int>(end - t0 < C ? end - t0 : C);
    prefill_cp_wait<1>();  // W and U of chunk c
    __syncthreads();
    // D = U - W S.
    {
      float acc[NT][4] = {};
      prefill_warp_mma<Bf16, NT>(
          acc, D, [&](int r, int k) { return Ws[(r0 + r) * LD + k]; }, bs);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = r0 + g + (e >= 2 ? 8 : 0), cc = nt * 8 + 2 * t + (e & 1);
          Dm[r * LS + cc] = Us[r * LS + cc] - acc[nt][e];
        }
      }
    }
    __syncthreads();  // D complete; W and U free
    stage_wu(c + 1);
    prefill_cp_wait<1>();  // Qg, P and Kd of chunk c
    __syncthreads();
    // O = Qg S + P D.
    {
      float acc[NT][4] = {};
      prefill_warp_mma<Bf16, NT>(
          acc, D, [&](int r, int k) { return Qs[(r0 + r) * LD + k]; }, bs);
      prefill_warp_mma<Bf16, NT>(
          acc, C, [&](int r, int k) { return Ps[(r0 + r) * LC + k]; }, bd);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = r0 + g + (e >= 2 ? 8 : 0), cc = nt * 8 + 2 * t + (e & 1);
          if (r < n) p.out.write(static_cast<int>(t0 + r), long(h) * D + col0 + cc, acc[nt][e]);
        }
      }
    }
    // S <- G_C S + Kd^T D: warp w the state rows [w D / 4, (w + 1) D / 4). The product
    // from zero, then added to the decayed state in float32 (a thread owns its elements).
    const float gc = block(c)[PrefillBlock::gc(D, D)];
    float acc[SR][NT][4] = {};
#pragma unroll
    for (int mt = 0; mt < SR; ++mt) {
      const int s0 = (warp * SR + mt) * 16;
      prefill_warp_mma<Bf16, NT>(
          acc[mt], C, [&](int r, int k) { return Ks[k * LD + s0 + r]; }, bd);
    }
    __syncthreads();  // every warp is done reading S, Qg, P, Kd and D
    stage_qpk(c + 1);
#pragma unroll
    for (int mt = 0; mt < SR; ++mt) {
      const int s0 = (warp * SR + mt) * 16;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = s0 + g + (e >= 2 ? 8 : 0), cc = nt * 8 + 2 * t + (e & 1);
          Ss[r * LS + cc] = fmaf(gc, Ss[r * LS + cc], acc[mt][nt][e]);
        }
      }
    }
  }
  prefill_cp_wait<0>();
  __syncthreads();
  for (int e = tid; e < D * NC; e += kPrefillThreads) {
    const int i = e / NC, j = e % NC;
    p.state(slot, h, i, col0 + j) = from_float<StateT>(Ss[i * LS + j]);
  }
}

template <class ActT, class StateT, int D, bool Bf16>
void launch_prefill_cuda_kernels(
    const Kokkos::Cuda& space,
    const PrefillParams<ActT, StateT, typename Kokkos::Cuda::memory_space>& p) {
  constexpr int C = kPrefillChunk;
  const std::size_t smem = sizeof(float) * (3 * C * (D + 4) + C * (C + 4) + 4 * C);
  const auto chunk = prefill_chunk_kernel<ActT, StateT, D, Bf16>;
  cudaError_t err =
      cudaFuncSetAttribute(chunk, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  const cudaStream_t stream = space.cuda_stream();
  if (err == cudaSuccess && p.chunk_slots > 0) {
    chunk<<<dim3(static_cast<unsigned>(p.chunk_slots), static_cast<unsigned>(p.nv)),
            kPrefillThreads, smem, stream>>>(p);
    err = cudaGetLastError();
  }
  const auto state = prefill_state_kernel<ActT, StateT, D, Bf16>;
  const std::size_t state_smem = sizeof(float) * prefill_state_smem_floats<D>();
  if (err == cudaSuccess) {
    err = cudaFuncSetAttribute(state, cudaFuncAttributeMaxDynamicSharedMemorySize, int(state_smem));
  }
  if (err == cudaSuccess) {
    state<<<dim3(static_cast<unsigned>(p.batch), static_cast<unsigned>(p.nv), D / kPrefillCols),
            kPrefillThreads, state_smem, stream>>>(p);
    err = cudaGetLastError();
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
