#ifndef GDN_IMPL_BACKEND_HPP
#define GDN_IMPL_BACKEND_HPP

/// \file backend.hpp
/// \brief The backend seam: the team shape of each execution space and the
/// few device primitives whose best form differs between CPUs and GPUs.
///
/// Every function here has exactly one backend switch (`__CUDA_ARCH__`), so a
/// new backend touches this file and nothing else. Nothing here changes the
/// arithmetic's order: the primitives move data, and the lane sums add in
/// the canonical tree of core/token_step.hpp.

#include <gdn/bf16.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDA_ARCH__)
#define GDN_UNROLL _Pragma("unroll")
#else
#define GDN_UNROLL
#endif
// GDN_HOST_UNROLL: on the host (GCC, Clang), unroll this short loop of a
// compile-time trip count, so that a simd loop around it keeps its
// accumulators in registers and its uniform operands hoisted.
// Not under nvcc, whose front end does not know the pragma (warning 1675) and
// drops it: the OpenMP instantiations of a CUDA build run these loops rolled.
#if !defined(__CUDACC__) && defined(__GNUC__)
#define GDN_HOST_UNROLL _Pragma("GCC unroll 16")
#else
#define GDN_HOST_UNROLL
#endif
// GDN_SIMD: on the host, vectorise this element-wise column loop (it
// reorders no arithmetic: every column is computed on its own). Keyed on the
// device pass (__CUDA_ARCH__), like GDN_UNROLL, so that the host
// instantiations compiled by nvcc (the OpenMP ETI of a CUDA build) keep it.
#if defined(__CUDA_ARCH__) || !defined(_OPENMP)
#define GDN_SIMD
#else
#define GDN_SIMD _Pragma("omp simd")
#endif

namespace gdn {
namespace Impl {

/// Columns of one work item of the forward / verify kernel (token_kernel.hpp):
/// a tile of every head's state, the same on every backend, so work items
/// are counted the same way everywhere.
constexpr int kTokenTile = 64;

/// \brief How a team of the forward / verify kernel (token_kernel.hpp) holds
/// its tile of `kTokenTile` state columns (all `Dk` rows).
///
/// The team's threads form lane groups of `lanes` lanes; the lanes of a
/// group split the rows of the group's `cols` columns, lane `l` holding the
/// consecutive canonical blocks [l * bpl, (l + 1) * bpl) (`bpl` = Dk / 16 /
/// lanes), so the sums over a column meet in the canonical tree
/// (core/token_step.hpp). A thread sweeps its columns `col_block` at a time.
/// `place` gives a team thread its lane, its lane group and the warp lane of
/// its group's lane 0 (`group_lane0`: the lanes of a group are warp lanes
/// group_lane0 + l * lane_stride). `stage` tokens are staged per barrier.
/// The host default: one thread holds the whole tile (every block of every
/// column), sweeps 16 columns at a time (one 512-bit vector), loads its
/// state straight from the pool, and folds records into a row while its
/// columns are in registers (`rows_outer`).
template <class ExecSpace, int Dk, class StateT>
struct TokenShape {
  static constexpr int lanes = 1;           ///< lanes splitting one column's rows
  static constexpr int lane_stride = 1;     ///< warp-lane distance of a group's lanes
  static constexpr int cols = kTokenTile;   ///< columns per thread
  static constexpr int col_block = 16;      ///< columns swept together
  static constexpr int threads = 1;         ///< threads per team
  static constexpr int min_teams = 1;       ///< launch bound: resident teams per SM (GPU)
  static constexpr int stage = 16;          ///< tokens staged per barrier
  static constexpr bool rows_outer = true;  ///< fold_fragment's loop order
  KOKKOS_FORCEINLINE_FUNCTION static void place(int /*rank*/, int& lane, int& group,
                                                int& group_lane0) {
    lane = 0;
    group = 0;
    group_lane0 = 0;
  }
  /// Teams to launch for `items` work items: one per item (the host's
  /// dynamic scheduling balances them).
  static long long league(const ExecSpace&, long long items) { return items; }
};

#if defined(KOKKOS_ENABLE_CUDA)
/// CUDA: a lane per canonical block (Dk / 16 lanes per group), 4 columns
/// per lane (16 x 4 state values in registers), 16 lane groups cover the
/// tile: 128 threads at Dk = 128, 64 at Dk = 64. Within a warp the groups
/// are interleaved (warp lane w: row lane w / gpw, group w % gpw, gpw =
/// 32 / lanes), so a quarter-warp's 16-byte loads of the state cover 64
/// contiguous bytes of two rows and its loads of a staged key hit distinct
/// banks; the lanes of a group are gpw warp lanes apart (the butterfly's
/// distances). Persistent teams, min_teams per SM (3 at Dk = 128, 6 at
/// Dk = 64: the launch bound leaves 168 registers). 16 tokens per stage
/// (the two staging buffers of a float state at Dk = 128 take 41.5 KB).
template <int Dk, class StateT>
struct TokenShape<Kokkos::Cuda, Dk, StateT> {
  static constexpr int lanes = Dk / 16;
  static constexpr int gpw = 32 / lanes;  // lane groups per warp
  static constexpr int lane_stride = gpw;
  static constexpr int cols = 4;
  static constexpr int col_block = 4;
  static constexpr int threads = kTokenTile / cols * lanes;
  static constexpr int min_teams = Dk > 64 ? 3 : 6;
  static constexpr int stage = 16;
  static constexpr bool rows_outer = false;
  KOKKOS_FORCEINLINE_FUNCTION static void place(int rank, int& lane, int& group, int& group_lane0) {
    const int w = rank % 32;
    lane = w / gpw;
    group_lane0 = w % gpw;
    group = rank / 32 * gpw + group_lane0;
  }
  static long long league(const Kokkos::Cuda& space, long long items) {
    const long long resident =
        static_cast<long long>(space.cuda_device_prop().multiProcessorCount) * min_teams;
    return items < resident ? items : resident;
  }
};
#endif

/// \brief How a team of the fold kernel splits a tile of the state.
///
/// The fold updates every state element on its own (docs/design.md, step 4),
/// so its mapping is free of any summation order. A team owns a tile of
/// `tile_rows` x `tile_cols` state values; thread `t` holds rows
/// `[(t / col_groups) * rows, + rows)` of columns `[(t % col_groups) * cols,
/// + cols)` in registers (`col_groups = tile_cols / cols`). The host default:
/// one thread holds a 64-column tile of all rows, as in TokenShape.
template <class ExecSpace, int Dk, class StateT>
struct FoldShape {
  static constexpr int threads = 1;
  static constexpr int tile_cols = 64;
  static constexpr int tile_rows = Dk;
  static constexpr int cols = tile_cols;
  static constexpr int rows = tile_rows;
  static constexpr int min_teams = 1;
  static constexpr bool rows_outer = true;  ///< fold_fragment's loop order
  static long long league(const ExecSpace&, long long items) { return items; }
};

#if defined(KOKKOS_ENABLE_CUDA)
/// CUDA: 128 threads, one team per item; a tile spans whole rows, so a
/// warp's loads of a fragment row are contiguous. A float state: 8 rows x 4
/// columns per thread (16-byte loads; 32 floats of registers, eight teams
/// per SM). A bf16 state: 8 rows x 8 columns (16-byte loads of 8 values;
/// four teams per SM).
template <int Dk, class StateT>
struct FoldShape<Kokkos::Cuda, Dk, StateT> {
  static constexpr int threads = 128;
  static constexpr int cols = sizeof(StateT) == 2 ? 8 : 4;
  static constexpr int tile_cols = Dk;
  static constexpr int row_groups = threads / (tile_cols / cols);
  static constexpr int rows = Dk / row_groups < 8 ? Dk / row_groups : 8;
  static constexpr int tile_rows = row_groups * rows;
  static constexpr int min_teams = cols == 8 ? 4 : 8;
  static constexpr bool rows_outer = false;
  static long long league(const Kokkos::Cuda&, long long items) { return items; }
};
#endif

/// The execution property of every team kernel's policy: Kokkos passes the
/// functor as a kernel argument (up to 4 KiB) whatever its size. Without it
/// Kokkos 3.4 copies a functor of more than 512 bytes into constant memory
/// before each launch, behind an event synchronisation that a CUDA graph
/// capture does not allow. Host spaces ignore it.
using TeamKernelLaunch = Kokkos::Experimental::WorkItemProperty::HintLightWeight_t;

/// `p` advanced to the next 16-byte boundary (by 0 to 3 floats): team scratch
/// holds 16-byte vectors. Pointer arithmetic keeps the address space known
/// to the compiler (CUDA: shared-memory loads).
KOKKOS_FORCEINLINE_FUNCTION float* align16(float* p) {
  const auto misalign = reinterpret_cast<std::uintptr_t>(p) & 15u;
  return p + static_cast<int>(((16u - misalign) & 15u) / 4u);
}

/// CUDA: bring the cache line holding `p` into L2 (a hint: no register, no
/// wait). Elsewhere nothing.
KOKKOS_FORCEINLINE_FUNCTION void prefetch_l2(const void* p) {
#if defined(__CUDA_ARCH__)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
  (void)p;
#endif
}

/// Each of a team's `threads` threads (`rank`) prefetches into L2 its share of
/// a `rows` x `row_bytes` tile whose rows start `pitch` bytes apart.
KOKKOS_FORCEINLINE_FUNCTION void prefetch_tile_l2(const void* tile, int rows, int row_bytes,
                                                  long pitch, int rank, int threads) {
  constexpr int kLine = 128;
  const int per_row = (row_bytes + kLine - 1) / kLine;
  for (int e = rank; e < rows * per_row; e += threads) {
    prefetch_l2(static_cast<const char*>(tile) + (e / per_row) * pitch + (e % per_row) * kLine);
  }
}

/// Copy `Bytes` (4, 8 or 16; both addresses aligned to it) from global memory
/// into team scratch without passing through registers: CUDA `cp.async`,
/// completed by async_wait; elsewhere a plain copy.
template <int Bytes>
KOKKOS_FORCEINLINE_FUNCTION void async_copy(void* scratch_dst, const void* src) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
#if defined(__CUDA_ARCH__)
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(scratch_dst));
  if constexpr (Bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
  } else {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(dst), "l"(src), "n"(Bytes)
                 : "memory");
  }
#else
  std::memcpy(scratch_dst, src, Bytes);
#endif
}

/// The alignment of Lanes<T, N>: the largest power of two dividing its
/// size, at most 16 bytes.
constexpr std::size_t lanes_align(std::size_t bytes) {
  return (bytes & (~bytes + 1)) < 16 ? (bytes & (~bytes + 1)) : 16;
}

/// `N` values of type `T` moved as one aligned word group (16-byte or
/// narrower vector loads and stores where `N > 1`).
template <class T, int N>
struct alignas(lanes_align(N * sizeof(T))) Lanes {
  T v[N];
};

/// Loads `N` values from `p` (aligned to the Lanes<T, N> alignment).
template <int N, class T>
KOKKOS_FORCEINLINE_FUNCTION Lanes<std::remove_const_t<T>, N> load_lanes(T* p) {
  return *reinterpret_cast<const Lanes<std::remove_const_t<T>, N>*>(p);
}

/// Wait until this thread's async_copy copies have landed.
KOKKOS_FORCEINLINE_FUNCTION void async_wait() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_all;" ::: "memory");
#endif
}

/// Close the group of this thread's async_copy copies issued since the last
/// call (CUDA `cp.async.commit_group`; elsewhere the copies are done already).
KOKKOS_FORCEINLINE_FUNCTION void async_commit() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

/// Wait until at most `N` of this thread's committed groups are in flight.
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void async_wait_groups() {
#if defined(__CUDA_ARCH__)
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
#endif
}

/// Four consecutive floats of team scratch (`p` 16-byte aligned on CUDA).
KOKKOS_FORCEINLINE_FUNCTION void load4(const float* p, float (&d)[4]) {
#if defined(__CUDA_ARCH__)
  const float4 x = *reinterpret_cast<const float4*>(p);
  d[0] = x.x;
  d[1] = x.y;
  d[2] = x.z;
  d[3] = x.w;
#else
  for (int e = 0; e < 4; ++e) d[e] = p[e];
#endif
}

/// `N` consecutive state values (float or bf16) as floats; on CUDA one
/// 16-byte (float, N = 4) or 8-byte (bf16, N = 4) load, `p` aligned to it.
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void load_frag(const float* p, float (&d)[N]) {
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
  } else
#endif
  {
    GDN_SIMD
    for (int n = 0; n < N; ++n) d[n] = p[n];
  }
}

template <int N>
KOKKOS_FORCEINLINE_FUNCTION void load_frag(const bf16* p, float (&d)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 8 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 8; ++q) {
      const uint4 x = reinterpret_cast<const uint4*>(p)[q];
      const unsigned w[4] = {x.x, x.y, x.z, x.w};
      GDN_UNROLL
      for (int e = 0; e < 4; ++e) {
        d[8 * q + 2 * e] = bits_to_float(w[e] << 16);
        d[8 * q + 2 * e + 1] = bits_to_float(w[e] & 0xffff0000u);
      }
    }
  } else if constexpr (N % 4 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 4; ++q) {
      const uint2 x = reinterpret_cast<const uint2*>(p)[q];
      d[4 * q] = bits_to_float(x.x << 16);
      d[4 * q + 1] = bits_to_float(x.x & 0xffff0000u);
      d[4 * q + 2] = bits_to_float(x.y << 16);
      d[4 * q + 3] = bits_to_float(x.y & 0xffff0000u);
    }
  } else
#endif
  {
    GDN_SIMD
    for (int n = 0; n < N; ++n) d[n] = to_float(p[n]);
  }
}

template <int N>
KOKKOS_FORCEINLINE_FUNCTION void store_frag(float* p, const float (&s)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 4 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 4; ++q) {
      reinterpret_cast<float4*>(p)[q] =
          make_float4(s[4 * q], s[4 * q + 1], s[4 * q + 2], s[4 * q + 3]);
    }
  } else
#endif
  {
    GDN_SIMD
    for (int n = 0; n < N; ++n) p[n] = s[n];
  }
}

/// Rounds to nearest even with the software rule of bf16.hpp on every
/// backend, so that a bf16 pool holds the same bits whichever backend wrote it.
template <int N>
KOKKOS_FORCEINLINE_FUNCTION void store_frag(bf16* p, const float (&s)[N]) {
#if defined(__CUDA_ARCH__)
  if constexpr (N % 8 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 8; ++q) {
      unsigned w[4];
      GDN_UNROLL
      for (int e = 0; e < 4; ++e) {
        w[e] = unsigned(float_to_bf16_bits(s[8 * q + 2 * e])) |
               (unsigned(float_to_bf16_bits(s[8 * q + 2 * e + 1])) << 16);
      }
      reinterpret_cast<uint4*>(p)[q] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  } else if constexpr (N % 4 == 0) {
    GDN_UNROLL
    for (int q = 0; q < N / 4; ++q) {
      uint2 x;
      x.x = unsigned(float_to_bf16_bits(s[4 * q])) |
            (unsigned(float_to_bf16_bits(s[4 * q + 1])) << 16);
      x.y = unsigned(float_to_bf16_bits(s[4 * q + 2])) |
            (unsigned(float_to_bf16_bits(s[4 * q + 3])) << 16);
      reinterpret_cast<uint2*>(p)[q] = x;
    }
  } else
#endif
  {
    for (int n = 0; n < N; ++n) p[n] = bf16(s[n]);
  }
}

/// The high 32 bits of the 64-bit product `a * b`.
KOKKOS_FORCEINLINE_FUNCTION std::uint32_t mul_hi(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<std::uint32_t>((std::uint64_t(a) * b) >> 32);
#endif
}

/// `v` of the warp lane `d * Stride` away (xor): one step of the lane
/// butterfly (core/token_step.hpp, scatter_steps). Every thread of the warp
/// calls it together. Without lanes (the host) never called with d > 0: `v`.
template <int Stride>
KOKKOS_FORCEINLINE_FUNCTION float lane_xor(float v, int d) {
#if defined(__CUDA_ARCH__)
  return __shfl_xor_sync(0xffffffffu, v, d * Stride);
#else
  (void)d;
  return v;
#endif
}

/// `v` of warp lane `src`. Every thread of the warp calls it together.
/// Without lanes (the host) `src` is the caller itself: `v`.
KOKKOS_FORCEINLINE_FUNCTION float lane_read(float v, int src) {
#if defined(__CUDA_ARCH__)
  return __shfl_sync(0xffffffffu, v, src);
#else
  (void)src;
  return v;
#endif
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_BACKEND_HPP
