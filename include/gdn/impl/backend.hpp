#ifndef GDN_IMPL_BACKEND_HPP
#define GDN_IMPL_BACKEND_HPP

/// \file backend.hpp
/// \brief The backend seam: the team shape of each execution space and the
/// few device primitives whose best form differs between CPUs and GPUs.
///
/// Every function here has exactly one backend switch (`__CUDA_ARCH__`), so a
/// new backend touches this file and nothing else. Nothing here changes the
/// arithmetic's order: the primitives move data, and the lane sums add in
/// the canonical tree of chunk_algebra.hpp (a lane per block).

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

/// Columns of one tiled-kernel team's tile (recurrence_kernel.hpp) for every
/// call but the CUDA forward with a workspace over few rows; the same on
/// every backend (64), so work items are counted the same way everywhere.
constexpr int kTiledCols = 64;

/// \brief How a team of the tiled forward / verify kernel splits a tile of
/// `Tile` columns of the state.
///
/// A team owns a tile of `Tile` state columns (all `Dk` rows). Its
/// threads form `col_groups` lane groups of `lanes` lanes; lane `l` of group
/// `cg` holds rows `[l * Dk / lanes, (l + 1) * Dk / lanes)` of columns
/// `[cg * cols, (cg + 1) * cols)` in registers. The host default: one thread
/// holds the whole tile and the compiler vectorises over its columns.
template <class ExecSpace, int Dk, int Tile = kTiledCols>
struct TeamShape {
  static constexpr int lanes = 1;       ///< threads that split one column's rows
  static constexpr int col_groups = 1;  ///< lane groups per team
  static constexpr int cols = Tile;     ///< columns per thread
  static constexpr int min_teams = 1;   ///< launch bound: resident teams per SM (GPU)
  /// Teams to launch for `items` work items: one per item (the host's
  /// dynamic scheduling balances them).
  static long long league(const ExecSpace&, long long items) { return items; }
};

#if defined(KOKKOS_ENABLE_CUDA)
/// CUDA: 128 threads; a lane per canonical block of 16 rows (Dk / 16
/// consecutive warp lanes per column group), the lane groups splitting the
/// tile's columns: a 64-column tile gives each lane group half as many
/// columns as it has lanes (16 x 4 floats per thread at Dk = 128, 16 x 2 at
/// Dk = 64); the narrow tiles of the forward with a workspace over few rows
/// (32 or 16 columns) fewer, and step 1 then reduces the sums of
/// Dk / 16 / (2 x cols) tokens at once (project). Two teams per SM: the
/// launch bound leaves 255 registers, which the fragment, the step-1 sums
/// and step 3's per-column arrays need without spilling.
template <int Dk, int Tile>
struct TeamShape<Kokkos::Cuda, Dk, Tile> {
  static constexpr int lanes = Dk / 16;
  static constexpr int cols = Tile * lanes / 128;
  static constexpr int col_groups = Tile / (cols > 0 ? cols : 1);
  static constexpr int min_teams = 2;
  /// Persistent teams (as many as the launch bound keeps resident), each
  /// looping over items, so that a team can prefetch its next item's state
  /// while it computes (prefetch_l2).
  static long long league(const Kokkos::Cuda& space, long long items) {
    const long long resident =
        static_cast<long long>(space.cuda_device_prop().multiProcessorCount) * min_teams;
    return items < resident ? items : resident;
  }
};
#endif

/// \brief The team of the streaming forward / verify kernel
/// (stream_kernel.hpp), which serves rows of at most one chunk. `enabled`:
/// whether the backend runs it; elsewhere the tiled kernel takes every row.
template <class ExecSpace, int Dk>
struct StreamShape {
  static constexpr bool enabled = false;
  static constexpr int threads = 1;
  static constexpr int min_teams = 1;
  static long long league(const ExecSpace&, long long items) { return items; }
};

#if defined(KOKKOS_ENABLE_CUDA)
/// CUDA: 2 * Dk threads (a warp per canonical block, Dk / 32 columns per
/// lane, every column of a head), persistent teams. Two teams per SM at
/// Dk = 128 (the launch bound leaves 128 registers: the fragment, 64 floats,
/// is the largest part), four at Dk = 64.
template <int Dk>
struct StreamShape<Kokkos::Cuda, Dk> {
  static constexpr bool enabled = true;
  static constexpr int threads = 2 * Dk;
  static constexpr int min_teams = Dk > 64 ? 2 : 4;
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
/// one thread holds a 64-column tile of all rows, as in TeamShape.
template <class ExecSpace, int Dk, class StateT>
struct FoldShape {
  static constexpr int threads = 1;
  static constexpr int tile_cols = 64;
  static constexpr int tile_rows = Dk;
  static constexpr int cols = tile_cols;
  static constexpr int rows = tile_rows;
  static constexpr int min_teams = 1;
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
  static long long league(const Kokkos::Cuda&, long long items) { return items; }
};
#endif

/// The execution property of every team kernel's policy: Kokkos passes the
/// functor as a kernel argument (up to 4 KiB) whatever its size. Without it
/// Kokkos 3.4 copies a functor of more than 512 bytes into constant memory
/// before each launch, behind an event synchronisation that a CUDA graph
/// capture does not allow. Host spaces ignore it.
using TeamKernelLaunch = Kokkos::Experimental::WorkItemProperty::HintLightWeight_t;

template <class ExecSpace, int Dk, int Tile = kTiledCols>
struct TeamTraits : TeamShape<ExecSpace, Dk, Tile> {
  using Shape = TeamShape<ExecSpace, Dk, Tile>;
  static constexpr int threads = Shape::lanes * Shape::col_groups;
  static_assert(Shape::cols >= 1 && Shape::cols * Shape::col_groups == Tile,
                "a team's column groups cover its tile");
  static_assert(Shape::lanes == 1 || Shape::lanes % (2 * Shape::cols) == 0,
                "step 1 leaves one of a group's sums in each lane (project)");
};

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

/// \brief Sum `v[0 .. 2*Lanes/2)` over the `Lanes` consecutive warp lanes of a
/// lane group, leaving sum `l` in lane `l` (`l` = this thread's lane).
///
/// Halving exchanges at lane distances Lanes/2, ..., 1: at each, the lane
/// keeps the half of its values whose index bit matches its own lane bit and
/// adds the partner's copy of that half. The additions form a tree fixed by
/// the lanes' positions, so the bits depend on nothing but the inputs. Every
/// thread of the warp calls it together. Host (one lane): `v[0]`.
template <int Lanes, int N>
KOKKOS_FORCEINLINE_FUNCTION float lane_reduce_scatter(float (&v)[N], int lane) {
  static_assert(N == Lanes, "one sum per lane");
#if defined(__CUDA_ARCH__)
  constexpr unsigned kFull = 0xffffffffu;
  int n = N;
  GDN_UNROLL
  for (int off = Lanes / 2; off > 0; off /= 2) {
    n /= 2;
    const bool hi = (lane & off) != 0;
    GDN_UNROLL
    for (int j = 0; j < N / 2; ++j) {
      if (j < n) {
        const float send = hi ? v[j] : v[j + n];
        const float keep = hi ? v[j + n] : v[j];
        v[j] = keep + __shfl_xor_sync(kFull, send, off);
      }
    }
  }
  return v[0];
#else
  (void)lane;
  return v[0];
#endif
}

/// The warp lanes of team thread `rank`'s lane group, as a shuffle mask
/// (the team's threads are consecutive warp lanes). Host: unused.
template <int Lanes>
KOKKOS_FORCEINLINE_FUNCTION unsigned group_mask(int rank) {
  return Lanes >= 32 ? 0xffffffffu : ((1u << Lanes) - 1u) << ((rank % 32) / Lanes * Lanes);
}

/// Sum of `v` over the `Lanes` consecutive warp lanes of a lane group (xor
/// butterfly at distances Lanes/2, ..., 1: a + b and b + a are the same bits,
/// so every lane ends with the same sum). The group's lanes call it together
/// (`mask` = group_mask); other groups of the warp need not. Host: `v`.
template <int Lanes>
KOKKOS_FORCEINLINE_FUNCTION float lane_all_sum(float v, unsigned mask) {
#if defined(__CUDA_ARCH__)
  GDN_UNROLL
  for (int off = Lanes / 2; off > 0; off /= 2) v += __shfl_xor_sync(mask, v, off);
#else
  (void)mask;
#endif
  return v;
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_BACKEND_HPP
