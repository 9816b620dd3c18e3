#ifndef GDN_IMPL_FOLD_KERNEL_HPP
#define GDN_IMPL_FOLD_KERNEL_HPP

/// \file fold_kernel.hpp
/// \brief The fold kernel: commit accepted ring records into the state, all
/// layers in one launch.
///
/// Applies records p = 0 .. n-1 with `fold_record` (chunk_algebra.hpp), the
/// same step-4 update in the same order as the forward, which is why a fold
/// from a float ring is bit-identical to a forward over the accepted tokens.
/// Each state value is updated on its own, so the thread mapping below
/// changes no bits.
///
/// Thread mapping (FoldShape, backend.hpp). One team per work item (layer l,
/// sequence b, value head h, tile of the state). CUDA: a tile is
/// `tile_rows` (32 at Dk = 128) whole rows; thread t holds 8 rows x 4
/// columns in registers, neighbouring threads neighbouring columns, so a
/// warp's loads and stores are contiguous rows; eight teams per SM. Host:
/// one thread holds a tile of 64 columns of all rows. The team loads its
/// fragments (all loads in flight at once), stages up to chunk_tokens
/// records at a time in scratch (the tile's key rows, the tile's delta
/// factors, the decays; every copy of a thread in flight at once), then
/// every thread folds them in (GPU: record outer, fold_block; host: a row
/// block at a time, fold_fragment). Rows with n == 0 or n > RING_LEN return
/// before they read anything.

#include <gdn/config.hpp>
#include <gdn/impl/backend.hpp>
#include <gdn/impl/chunk_algebra.hpp>
#include <gdn/impl/params.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace gdn {
namespace Impl {

template <class ExecSpace, class StateT, class RingT, int Dk>
struct FoldKernel {
  using Shape = FoldShape<ExecSpace, Dk, StateT>;
  using M = typename ExecSpace::memory_space;
  static constexpr int kThreads = Shape::threads;
  static constexpr int kRows = Shape::rows;  // per thread
  static constexpr int kCols = Shape::cols;  // per thread
  static constexpr int kTileRows = Shape::tile_rows;
  static constexpr int kTileCols = Shape::tile_cols;
  static constexpr int kColGroups = kTileCols / kCols;
  static constexpr int kTiles = (Dk / kTileRows) * (Dk / kTileCols);  // per head
  static constexpr int kC = chunk_tokens;                              // records staged at once
  static_assert(kColGroups * (kTileRows / kRows) == kThreads, "threads cover the tile once");
  static_assert(Dk % kTileRows == 0 && Dk % kTileCols == 0, "tiles cover the head");
  static constexpr int kKeyFloats = kC * kTileRows;
  static constexpr int kUFloats = kC * kTileCols;
  static constexpr int kScratchFloats = kKeyFloats + kUFloats + (kC + 3) / 4 * 4;
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<kThreads, Shape::min_teams>,
                                    TeamKernelLaunch>;
  using Member = typename Policy::member_type;
  using ScratchView =
      Kokkos::View<float*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  FoldParams<StateT, RingT, M> m;
  int m_batch = 0;
  int m_items = 0;  // L * B * nv * kTiles

  static constexpr int scratch_bytes() { return int(sizeof(float)) * (kScratchFloats + 4); }
  static long long items(long long layers, long long batch, int nv) {
    return layers * batch * nv * kTiles;
  }
  static long long league(const ExecSpace& space, long long items) {
    return Shape::league(space, items);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    for (int item = team.league_rank(); item < m_items; item += team.league_size()) {
      run_item(team, item);
    }
  }

  KOKKOS_INLINE_FUNCTION void run_item(const Member& team, int item) const {
    const int tile = item % kTiles;
    const int rest = item / kTiles;
    const int h = rest % m.nv;
    const int lb = rest / m.nv;  // layer * B + b
    const int b = lb % m_batch;
    const int layer = lb / m_batch;
    // The three index entries are loaded together, before any is looked at.
    const std::uint32_t na = m.num_accepted(b);
    const std::uint32_t state_row = m.state_rows(layer, b);
    const int rrow = static_cast<int>(m.ring_rows(layer, b));
    const int n = static_cast<int>(na);
    if (n <= 0 || n > m.ring_len) return;
    const int kh = h / m.group;
    const int g = h % m.group;
    const int rank = team.team_rank();
    const int row0 = (tile / (Dk / kTileCols)) * kTileRows;  // the tile's first row
    const int tcol = (tile % (Dk / kTileCols)) * kTileCols;  // and first column
    const int r0 = (rank / kColGroups) * kRows;              // this thread's rows in the tile
    const int c0 = (rank % kColGroups) * kCols;              // and columns

    ScratchView raw(team.team_scratch(0), kScratchFloats + 4);
    float* const sk = align16(raw.data());  // [kC][kTileRows]
    float* const su = sk + kKeyFloats;      // [kC][kTileCols]
    float* const sa = su + kUFloats;        // [kC]

    StateT* const frag = &m.state(state_row, h, row0 + r0, tcol + c0);
    float st[kRows][kCols];
    GDN_UNROLL
    for (int i = 0; i < kRows; ++i) load_frag<kCols>(frag + i * Dk, st[i]);

    const int uoff = Dk + g * Dk + tcol;
    const int aoff = Dk + m.group * Dk + g;
    for (int p0 = 0; p0 < n; p0 += kC) {
      const int cnt = n - p0 < kC ? n - p0 : kC;
      team.team_barrier();  // the last records' (or item's) readers are done with scratch
      for (int e = rank; e < cnt * kTileRows; e += kThreads) {
        const int j = e / kTileRows, i = e % kTileRows;
        stage_value(sk + e, &m.ring(rrow, kh, p0 + j, row0 + i));
      }
      for (int e = rank; e < cnt * kTileCols; e += kThreads) {
        const int j = e / kTileCols, c = e % kTileCols;
        stage_value(su + e, &m.ring(rrow, kh, p0 + j, uoff + c));
      }
      for (int j = rank; j < cnt; j += kThreads) stage_value(sa + j, &m.ring(rrow, kh, p0 + j, aoff));
      async_wait();
      team.team_barrier();
      if constexpr (kThreads == 1) {
        fold_fragment<1>(st, 0, cnt, sk, kTileRows, su, kTileCols, sa, 1);
      } else {
        fold_block(st, cnt, sk + r0, kTileRows, su + c0, kTileCols, sa);
      }
    }
    GDN_UNROLL
    for (int i = 0; i < kRows; ++i) store_frag<kCols>(frag + i * Dk, st[i]);
  }

  /// One ring value into scratch as a float: a float ring by an async copy
  /// (completed by async_wait), a bf16 ring widened through a register.
  KOKKOS_FORCEINLINE_FUNCTION static void stage_value(float* dst, const RingT* src) {
    if constexpr (std::is_same<RingT, float>::value) {
      async_copy<4>(dst, src);
    } else {
      *dst = to_float(*src);
    }
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_FOLD_KERNEL_HPP
