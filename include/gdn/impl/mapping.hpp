#ifndef GDN_IMPL_MAPPING_HPP
#define GDN_IMPL_MAPPING_HPP

/// \file mapping.hpp
/// \brief The backend seam: how a kernel's work is laid onto one execution space.
///
/// The kernels (recurrence_kernel.hpp, fold_kernel.hpp) are written once for
/// every backend. What differs between a GPU and a CPU is collected here and
/// only here:
///   - the team shape: how many hardware lanes split the rows of one state
///     column (`row_lanes`, the Kokkos vector length), how many columns each
///     lane owns (`cols_per_lane`), how many lane groups a team has, and
///     whether teams are persistent (loop over work items, prefetching the
///     next one into L2 while computing the current one);
///   - how many independent partial sums one lane keeps (instruction-level
///     parallelism on a CPU core);
///   - the lane index, sums across the lanes of one group, wide (16-byte)
///     global and shared-memory loads and stores, and the L2 prefetch.
/// A new backend adds a specialisation here and nothing else.
///
/// Reduction order: a lane sums its own rows in a fixed order; the lane group
/// is then combined by a reduce-scatter (each round halves the columns a lane
/// carries and adds its partner's half), after which a lane pair holds one
/// column's total, bit-identical in both lanes because floating-point
/// addition is commutative; an all-gather gives every lane every column. The
/// order depends only on the mapping, which forward and verify share.

#include <gdn/bf16.hpp>

#include <Kokkos_Core.hpp>

#include <climits>
#include <cstdint>

// GDN_UNROLL: full unrolling on the GPU (register arrays need constant
// indices). GDN_UNROLL_SMALL: also unroll on the host, for the short loops
// whose index selects a register (partial sum, row in a batch).
#if defined(__CUDA_ARCH__)
#define GDN_UNROLL _Pragma("unroll")
#define GDN_UNROLL_SMALL _Pragma("unroll")
#elif defined(__CUDACC__)  // nvcc's host pass: its front end knows no GCC pragmas
#define GDN_UNROLL
#define GDN_UNROLL_SMALL
#elif defined(__clang__)
#define GDN_UNROLL
#define GDN_UNROLL_SMALL _Pragma("unroll")
#elif defined(__GNUC__)
#define GDN_UNROLL
#define GDN_UNROLL_SMALL _Pragma("GCC unroll 16")
#else
#define GDN_UNROLL
#define GDN_UNROLL_SMALL
#endif

namespace gdn {
namespace Impl {

/// Host mapping (Serial, OpenMP, and any space without a specialisation):
/// one thread per team owns a tile of whole columns; the loops over a tile's
/// columns are what the compiler vectorises.
template <class ExecSpace>
struct RecurrenceMapping {
  static constexpr int row_lanes = 1;           ///< lanes splitting one column's rows
  static constexpr int cols_per_lane = 32;      ///< columns one lane owns
  static constexpr int team_threads = 1;        ///< lane groups per team
  static constexpr int row_accumulators = 2;    ///< independent partial sums per lane (ILP)
  static constexpr int norm_accumulators = 16;  ///< partial sums for the q/k norms
  static constexpr int chunk_tokens = 16;       ///< tokens staged per team barrier
  static constexpr int stage_pad = 0;           ///< floats after each lane's block of staged rows
  static constexpr bool contiguous_rows = true; ///< lane l owns rows [l*R, (l+1)*R) (else r*lanes + l)
  static constexpr bool reduce_scatter = true;  ///< lane sums by reduce-scatter/all-gather (else butterfly)
  static constexpr bool persistent = false;     ///< one team per work item
  static constexpr int min_teams_per_sm = 1;    ///< launch bound (GPU only)
  using schedule = Kokkos::Schedule<Kokkos::Dynamic>;
  static int max_league(const ExecSpace&) { return INT_MAX; }
};

/// Host fold mapping: one thread per team, 16-column items (one AVX-512 vector).
template <class ExecSpace, class StateT>
struct FoldMapping {
  static constexpr int cols_per_item = 16;  ///< consecutive state columns per work item
  static constexpr int team_threads = 1;
  static constexpr int rows_per_team = 64;  ///< state rows covered by one team
  static constexpr int chunk_records = 16;  ///< records staged per team barrier
  static constexpr int min_teams_per_sm = 1;
  using schedule = Kokkos::Schedule<Kokkos::Dynamic>;
};

#if defined(KOKKOS_ENABLE_CUDA)
// Tuning knobs of the CUDA mapping (compile-time; the defaults are the
// measured best on the H200, see docs/performance.md).
#ifndef GDN_CUDA_ROW_LANES
#define GDN_CUDA_ROW_LANES 8
#endif
#ifndef GDN_CUDA_COLS_PER_LANE
#define GDN_CUDA_COLS_PER_LANE 4
#endif
#ifndef GDN_CUDA_LANE_GROUPS
#define GDN_CUDA_LANE_GROUPS 8
#endif
#ifndef GDN_CUDA_MIN_TEAMS
#define GDN_CUDA_MIN_TEAMS 6
#endif
#ifndef GDN_CUDA_CHUNK_TOKENS
#define GDN_CUDA_CHUNK_TOKENS 8
#endif
#ifndef GDN_CUDA_ROW_ACC
#define GDN_CUDA_ROW_ACC 1
#endif
#ifndef GDN_CUDA_PERSISTENT
#define GDN_CUDA_PERSISTENT 1
#endif
#ifndef GDN_CUDA_CONTIGUOUS_ROWS
#define GDN_CUDA_CONTIGUOUS_ROWS 1
#endif
#ifndef GDN_CUDA_REDUCE_SCATTER
#define GDN_CUDA_REDUCE_SCATTER 1
#endif
#ifndef GDN_CUDA_FOLD_ROWS
#define GDN_CUDA_FOLD_ROWS 32
#endif
#ifndef GDN_CUDA_FOLD_MIN_TEAMS
#define GDN_CUDA_FOLD_MIN_TEAMS 5
#endif

int cuda_multiprocessors(const Kokkos::Cuda& space);  // src/eti_cuda.cpp

/// CUDA: `row_lanes` lanes split the rows of `cols_per_lane` columns; with the
/// defaults (8 x 4) a warp covers 16 columns, a lane holds 16 contiguous rows
/// x 4 columns of the state in registers (Dk = 128), and 8 lane groups per
/// team cover a 32-column tile. Teams are persistent: as many as fit on the
/// device at once, each looping over work items.
template <>
struct RecurrenceMapping<Kokkos::Cuda> {
  static constexpr int row_lanes = GDN_CUDA_ROW_LANES;
  static constexpr int cols_per_lane = GDN_CUDA_COLS_PER_LANE;
  static constexpr int team_threads = GDN_CUDA_LANE_GROUPS;
  static constexpr int row_accumulators = GDN_CUDA_ROW_ACC;
  static constexpr int norm_accumulators = GDN_CUDA_ROW_ACC;
  static constexpr int chunk_tokens = GDN_CUDA_CHUNK_TOKENS;
  static constexpr bool contiguous_rows = GDN_CUDA_CONTIGUOUS_ROWS != 0;
  // contiguous rows: staged rows of lane l start at l*(rows+4), conflict-free 16-byte reads
  static constexpr int stage_pad = contiguous_rows ? 4 : 0;
  static constexpr bool reduce_scatter = GDN_CUDA_REDUCE_SCATTER != 0;
  static constexpr bool persistent = GDN_CUDA_PERSISTENT != 0;
  static constexpr int min_teams_per_sm = GDN_CUDA_MIN_TEAMS;
  using schedule = Kokkos::Schedule<Kokkos::Static>;
  static_assert(row_lanes >= 1 && row_lanes <= 32 && (row_lanes & (row_lanes - 1)) == 0,
                "GDN_CUDA_ROW_LANES must be a power of two <= 32");
  static int max_league(const Kokkos::Cuda& space) {
    return persistent ? min_teams_per_sm * cuda_multiprocessors(space) : INT_MAX;
  }
};

/// CUDA fold: 128 threads per team, 16-byte items (4 float or 8 bf16 columns),
/// a 32-row tile per team, so a thread keeps 32 state values (8 or 4 loads in
/// flight) in registers.
template <class StateT>
struct FoldMapping<Kokkos::Cuda, StateT> {
  static constexpr int cols_per_item = 16 / int(sizeof(StateT));
  static constexpr int team_threads = 128;
  static constexpr int rows_per_team = GDN_CUDA_FOLD_ROWS;
  static constexpr int chunk_records = 16;
  static constexpr int min_teams_per_sm = GDN_CUDA_FOLD_MIN_TEAMS;
  using schedule = Kokkos::Schedule<Kokkos::Static>;
};
#endif

/// The lane index inside a lane group (Kokkos vector lane); 0 on the host.
KOKKOS_FORCEINLINE_FUNCTION int vector_lane() {
#if defined(__CUDA_ARCH__)
  return static_cast<int>(threadIdx.x);
#else
  return 0;
#endif
}

#if defined(__CUDA_ARCH__)
/// Shuffle mask of this thread's lane group (Lanes consecutive lanes of a warp).
template <int Lanes>
__device__ __forceinline__ unsigned lane_group_mask() {
  const unsigned warp_lane = (threadIdx.y * blockDim.x + threadIdx.x) & 31u;
  return ((Lanes >= 32) ? 0xffffffffu : ((1u << Lanes) - 1u)) << (warp_lane & ~unsigned(Lanes - 1));
}

/// Reduce-scatter over the lane group: on return w[0] holds the total of
/// column `col` (N live values at round Off).
template <int Lanes, int N, int Off, int C>
__device__ __forceinline__ void reduce_scatter(float (&w)[C], unsigned mask, int lane, int& col) {
  if constexpr (Off >= 1) {
    if constexpr (N > 1) {
      constexpr int half = N / 2;
      const bool upper = (lane & Off) != 0;
      GDN_UNROLL
      for (int k = 0; k < half; ++k) {
        const float mine = upper ? w[half + k] : w[k];
        const float other = upper ? w[k] : w[half + k];
        w[k] = mine + __shfl_xor_sync(mask, other, Off, Lanes);
      }
      if (upper) col += half;
      reduce_scatter<Lanes, half, Off / 2, C>(w, mask, lane, col);
    } else {
      w[0] += __shfl_xor_sync(mask, w[0], Off, Lanes);
      reduce_scatter<Lanes, 1, Off / 2, C>(w, mask, lane, col);
    }
  }
}

/// All-gather, the inverse of the splitting rounds of reduce_scatter: from one
/// column total in w[0] to all C totals, in column order.
template <int Lanes, int N, int C>
__device__ __forceinline__ void all_gather(float (&w)[C], unsigned mask, int lane) {
  if constexpr (N < C) {
    constexpr int off = Lanes * N / C;  // the round that split 2N columns into N
    const bool upper = (lane & off) != 0;
    float other[N];
    GDN_UNROLL
    for (int k = 0; k < N; ++k) other[k] = __shfl_xor_sync(mask, w[k], off, Lanes);
    GDN_UNROLL
    for (int k = N - 1; k >= 0; --k) {
      const float mine = w[k];
      w[k] = upper ? other[k] : mine;
      w[N + k] = upper ? mine : other[k];
    }
    all_gather<Lanes, 2 * N, C>(w, mask, lane);
  }
}
#endif

/// Sum each column of `v` over the lanes of the group; every lane ends with
/// every column's total (the same bits in every lane). A no-op for one lane.
template <int Lanes, int C, bool RS = true>
KOKKOS_FORCEINLINE_FUNCTION void lane_allreduce(float (&v)[C]) {
#if defined(__CUDA_ARCH__)
  if constexpr (Lanes > 1) {
    const unsigned mask = lane_group_mask<Lanes>();
    const int lane = static_cast<int>(threadIdx.x);
    if constexpr (RS && Lanes >= C) {
      int col = 0;
      reduce_scatter<Lanes, C, Lanes / 2, C>(v, mask, lane, col);
      all_gather<Lanes, 1, C>(v, mask, lane);
    } else {
      GDN_UNROLL
      for (int off = Lanes / 2; off > 0; off /= 2) {
        GDN_UNROLL
        for (int n = 0; n < C; ++n) v[n] += __shfl_xor_sync(mask, v[n], off, Lanes);
      }
    }
  }
#else
  (void)v;
#endif
}

/// Sum each column of `v` over the lanes of the group, then call
/// `f(column, total)` exactly once per column (from one lane of the group).
/// `v` is clobbered.
template <int Lanes, int C, bool RS, class F>
KOKKOS_FORCEINLINE_FUNCTION void lane_reduce_each(float (&v)[C], const F& f) {
#if defined(__CUDA_ARCH__)
  if constexpr (RS && Lanes > 1 && Lanes >= C) {
    const unsigned mask = lane_group_mask<Lanes>();
    const int lane = static_cast<int>(threadIdx.x);
    int col = 0;
    reduce_scatter<Lanes, C, Lanes / 2, C>(v, mask, lane, col);
    if ((lane & (Lanes / C - 1)) == 0) f(col, v[0]);
    return;
  } else {
    lane_allreduce<Lanes, C, RS>(v);
    GDN_UNROLL
    for (int c = 0; c < C; ++c)
      if (c % Lanes == static_cast<int>(threadIdx.x)) f(c, v[c]);
    return;
  }
#else
  for (int c = 0; c < C; ++c) f(c, v[c]);
#endif
}

/// Load N consecutive storage values as floats (16-byte loads on the GPU;
/// the caller guarantees N*sizeof(T) alignment, see validate.hpp).
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void load_vec(const float* p, float (&d)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 4 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 4; ++q) {
      const float4 x = reinterpret_cast<const float4*>(p)[q];
      d[4 * q] = x.x;
      d[4 * q + 1] = x.y;
      d[4 * q + 2] = x.z;
      d[4 * q + 3] = x.w;
    }
  } else {
    for (int n = 0; n < N; ++n) d[n] = p[n];
  }
#else
  for (int n = 0; n < N; ++n) d[n] = p[n];
#endif
}

template <int N>
KOKKOS_FORCEINLINE_FUNCTION void load_vec(const bf16* p, float (&d)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 8 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 8; ++q) {
      const uint4 x = reinterpret_cast<const uint4*>(p)[q];
      const unsigned w[4] = {x.x, x.y, x.z, x.w};
      GDN_UNROLL
      for (int m = 0; m < 4; ++m) {
        d[8 * q + 2 * m] = __uint_as_float(w[m] << 16);
        d[8 * q + 2 * m + 1] = __uint_as_float(w[m] & 0xffff0000u);
      }
    }
  } else if constexpr (N % 4 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 4; ++q) {
      const uint2 x = reinterpret_cast<const uint2*>(p)[q];
      d[4 * q] = __uint_as_float(x.x << 16);
      d[4 * q + 1] = __uint_as_float(x.x & 0xffff0000u);
      d[4 * q + 2] = __uint_as_float(x.y << 16);
      d[4 * q + 3] = __uint_as_float(x.y & 0xffff0000u);
    }
  } else {
    for (int n = 0; n < N; ++n) d[n] = to_float(p[n]);
  }
#else
  for (int n = 0; n < N; ++n) d[n] = to_float(p[n]);
#endif
}

template <int N>
KOKKOS_FORCEINLINE_FUNCTION void store_vec(float* p, const float (&s)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 4 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 4; ++q) {
      reinterpret_cast<float4*>(p)[q] = make_float4(s[4 * q], s[4 * q + 1], s[4 * q + 2], s[4 * q + 3]);
    }
  } else {
    for (int n = 0; n < N; ++n) p[n] = s[n];
  }
#else
  for (int n = 0; n < N; ++n) p[n] = s[n];
#endif
}

template <int N>
KOKKOS_FORCEINLINE_FUNCTION void store_vec(bf16* p, const float (&s)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 8 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 8; ++q) {
      unsigned w[4];
      GDN_UNROLL
      for (int m = 0; m < 4; ++m)
        w[m] = unsigned(float_to_bf16_bits(s[8 * q + 2 * m])) |
               (unsigned(float_to_bf16_bits(s[8 * q + 2 * m + 1])) << 16);
      reinterpret_cast<uint4*>(p)[q] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  } else if constexpr (N % 4 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 4; ++q) {
      uint2 x;
      x.x = unsigned(float_to_bf16_bits(s[4 * q])) | (unsigned(float_to_bf16_bits(s[4 * q + 1])) << 16);
      x.y = unsigned(float_to_bf16_bits(s[4 * q + 2])) | (unsigned(float_to_bf16_bits(s[4 * q + 3])) << 16);
      reinterpret_cast<uint2*>(p)[q] = x;
    }
  } else {
    for (int n = 0; n < N; ++n) p[n] = bf16(s[n]);
  }
#else
  for (int n = 0; n < N; ++n) p[n] = bf16(s[n]);
#endif
}

/// N consecutive floats from team scratch (16-byte loads on the GPU; `p`
/// 16-byte aligned).
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void load_scratch(const float* p, float (&d)[N]) {
  load_vec<N>(p, d);
}

/// Hint: bring the cache line holding `p` into L2 (GPU); nothing on the host.
KOKKOS_FORCEINLINE_FUNCTION void prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
  (void)p;
#endif
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_MAPPING_HPP
