#ifndef GDN_IMPL_FOLD_KERNEL_HPP
#define GDN_IMPL_FOLD_KERNEL_HPP

/// \file fold_kernel.hpp
/// \brief The fold kernel: commit accepted ring records into the state, all
/// layers in one launch.
///
/// Applies records p = 0 .. n-1 with `fold_fragment` (chunk_algebra.hpp), the
/// same step-4 update in the same order as the forward, which is why a fold
/// from a float ring is bit-identical to a forward over the accepted tokens.
///
/// Thread mapping. One team per work item (layer l, sequence b, value head h,
/// tile of 64 state columns); the team shape of backend.hpp (the tile in
/// registers, as in the recurrence kernel). The team stages up to
/// chunk_tokens records at a time in scratch (keys, this tile's delta
/// factors, decays: one global read each), then every thread folds them into
/// its fragment. Rows with n == 0 or n > RING_LEN return at once.
/// With several lanes (CUDA, persistent teams) each thread copies its own
/// fragment rows of the next item's state into scratch (async_copy) as soon
/// as it has read the current item's, so the next tile is in flight while
/// the current one is folded and stored.

#include <gdn/config.hpp>
#include <gdn/impl/backend.hpp>
#include <gdn/impl/chunk_algebra.hpp>
#include <gdn/impl/params.hpp>

#include <Kokkos_Core.hpp>

namespace gdn {
namespace Impl {

template <class ExecSpace, class StateT, class RingT, int Dk>
struct FoldKernel {
  using Traits = TeamTraits<ExecSpace>;
  using M = typename ExecSpace::memory_space;
  static constexpr int kLanes = Traits::lanes;
  static constexpr int kCols = Traits::cols;
  static constexpr int kThreads = Traits::threads;
  static constexpr int kRows = Dk / kLanes;
  static constexpr int kC = chunk_tokens;  // records staged at once
  static constexpr int kTiles = Dk / kTileCols;
  static constexpr bool kPrefetch = kLanes > 1;
  static constexpr int kChunkBytes = kCols * int(sizeof(StateT));  // a fragment row
  static_assert(!kPrefetch || kChunkBytes == 4 || kChunkBytes == 8 || kChunkBytes == 16,
                "a fragment row is one async copy");
  static constexpr int kBufFloats = kPrefetch ? kRows * kThreads * kChunkBytes / 4 : 0;
  static constexpr int kScratchFloats = kC * Dk + kC * kTileCols + (kC + 3) / 4 * 4 + kBufFloats;
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<kThreads, Traits::min_teams>,
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

  /// Items league_rank, + league_size, ... (persistent teams on CUDA, each
  /// prefetching its next item's state tile into L2).
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    ScratchView raw(team.team_scratch(0), kScratchFloats + 4);
    float* const base = align16(raw.data());
    StateT* const buf = reinterpret_cast<StateT*>(base + kScratchFloats - kBufFloats);
    int item = team.league_rank();
    if constexpr (kPrefetch) {
      if (item < m_items) issue_state(team, item, buf);
    }
    for (; item < m_items; item += team.league_size()) {
      run_item(team, item, item + team.league_size(), base, buf);
    }
  }

  /// Pool row of `item`'s state tile, or nullptr where the item folds nothing.
  KOKKOS_INLINE_FUNCTION StateT* tile_of(int item) const {
    const int tile = item % kTiles;
    const int rest = item / kTiles;
    const int h = rest % m.nv;
    const int b = (rest / m.nv) % m_batch;
    const int layer = rest / m.nv / m_batch;
    const int n = static_cast<int>(m.num_accepted(b));
    if (n <= 0 || n > m.ring_len) return nullptr;
    return &m.state(m.state_rows(layer, b), h, 0, tile * kTileCols);
  }

  /// This thread's fragment rows of `item`'s state into its slots of `buf`
  /// (chunk i of thread t at i * kThreads + t: a warp's reads are contiguous).
  KOKKOS_INLINE_FUNCTION void issue_state(const Member& team, int item, StateT* buf) const {
    static_assert(kPrefetch, "only the CUDA mapping copies ahead");
    StateT* const tile = tile_of(item);
    if (tile == nullptr) return;
    const int rank = team.team_rank();
    const int lane = rank % kLanes;
    const StateT* const frag = tile + (rank / kLanes) * kCols;
    char* const dst = reinterpret_cast<char*>(buf);
    GDN_UNROLL
    for (int i = 0; i < kRows; ++i) {
      async_copy<kChunkBytes>(dst + (i * kThreads + rank) * kChunkBytes,
                              frag + lane_row<kLanes>(lane, i) * Dk);
    }
  }

  KOKKOS_INLINE_FUNCTION void run_item(const Member& team, int item, int next, float* base,
                                       StateT* buf) const {
    const int tile = item % kTiles;
    const int rest = item / kTiles;
    const int h = rest % m.nv;
    const int lb = rest / m.nv;  // layer * B + b
    const int b = lb % m_batch;
    const int layer = lb / m_batch;
    const int n = static_cast<int>(m.num_accepted(b));
    if (n <= 0 || n > m.ring_len) {  // nothing was copied for this item
      if constexpr (kPrefetch) {
        if (next < m_items) issue_state(team, next, buf);
      }
      return;
    }
    const int kh = h / m.group;
    const int g = h % m.group;
    const int rank = team.team_rank();
    const int lane = rank % kLanes;
    const int col0 = (rank / kLanes) * kCols;
    const int tcol = tile * kTileCols;
    const int rrow = static_cast<int>(m.ring_rows(layer, b));

    float* const sk = base;                 // [kC][Dk]
    float* const su = sk + kC * Dk;         // [kC][kTileCols]
    float* const sa = su + kC * kTileCols;  // [kC]

    StateT* const srow = &m.state(m.state_rows(layer, b), h, 0, tcol + col0);
    float st[kRows][kCols];
    if constexpr (kPrefetch) {
      async_wait();
      GDN_UNROLL
      for (int i = 0; i < kRows; ++i) load_frag<kCols>(buf + (i * kThreads + rank) * kCols, st[i]);
      if (next < m_items) issue_state(team, next, buf);
    } else {
      GDN_UNROLL
      for (int i = 0; i < kRows; ++i)
        load_frag<kCols>(srow + lane_row<kLanes>(lane, i) * Dk, st[i]);
    }

    const int uoff = Dk + g * Dk + tcol;
    const int aoff = Dk + m.group * Dk + g;
    for (int p0 = 0; p0 < n; p0 += kC) {
      const int cnt = n - p0 < kC ? n - p0 : kC;
      team.team_barrier();  // the last records' (or item's) readers are done with scratch
      for (int e = rank; e < cnt * Dk; e += kThreads) {
        const int j = e / Dk, i = e % Dk;
        sk[e] = to_float(m.ring(rrow, kh, p0 + j, i));
      }
      for (int e = rank; e < cnt * kTileCols; e += kThreads) {
        const int j = e / kTileCols, c = e % kTileCols;
        su[e] = to_float(m.ring(rrow, kh, p0 + j, uoff + c));
      }
      for (int j = rank; j < cnt; j += kThreads) sa[j] = to_float(m.ring(rrow, kh, p0 + j, aoff));
      team.team_barrier();
      fold_fragment<kLanes>(st, lane, cnt, sk, Dk, su + col0, kTileCols, sa, 1);
    }
    GDN_UNROLL
    for (int i = 0; i < kRows; ++i) store_frag<kCols>(srow + lane_row<kLanes>(lane, i) * Dk, st[i]);
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_FOLD_KERNEL_HPP
