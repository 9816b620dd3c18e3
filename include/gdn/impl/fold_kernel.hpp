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
  static constexpr int kScratchFloats = kC * Dk + kC * kTileCols + (kC + 3) / 4 * 4;
  using Policy =
      Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<kThreads, Traits::min_teams>>;
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
    for (int item = team.league_rank(); item < m_items; item += team.league_size()) {
      const int next = item + team.league_size();
      if (next < m_items) prefetch_item(team, next);
      run_item(team, item);
    }
  }

  KOKKOS_INLINE_FUNCTION void prefetch_item(const Member& team, int item) const {
    const int tile = item % kTiles;
    const int rest = item / kTiles;
    const int h = rest % m.nv;
    const int b = (rest / m.nv) % m_batch;
    const int layer = rest / m.nv / m_batch;
    const int n = static_cast<int>(m.num_accepted(b));
    if (n <= 0 || n > m.ring_len) return;
    prefetch_tile_l2(&m.state(m.state_rows(layer, b), h, 0, tile * kTileCols), Dk,
                     kTileCols * int(sizeof(StateT)), long(Dk) * long(sizeof(StateT)),
                     team.team_rank(), kThreads);
  }

  KOKKOS_INLINE_FUNCTION void run_item(const Member& team, int item) const {
    const int tile = item % kTiles;
    const int rest = item / kTiles;
    const int h = rest % m.nv;
    const int lb = rest / m.nv;  // layer * B + b
    const int b = lb % m_batch;
    const int layer = lb / m_batch;
    const int n = static_cast<int>(m.num_accepted(b));
    if (n <= 0 || n > m.ring_len) return;
    const int kh = h / m.group;
    const int g = h % m.group;
    const int rank = team.team_rank();
    const int lane = rank % kLanes;
    const int col0 = (rank / kLanes) * kCols;
    const int tcol = tile * kTileCols;
    const int rrow = static_cast<int>(m.ring_rows(layer, b));

    ScratchView raw(team.team_scratch(0), kScratchFloats + 4);
    float* const sk = align16(raw.data());  // [kC][Dk]
    float* const su = sk + kC * Dk;         // [kC][kTileCols]
    float* const sa = su + kC * kTileCols;  // [kC]

    StateT* const srow = &m.state(m.state_rows(layer, b), h, 0, tcol + col0);
    float st[kRows][kCols];
    GDN_UNROLL
    for (int i = 0; i < kRows; ++i) load_frag<kCols>(srow + lane_row<kLanes>(lane, i) * Dk, st[i]);

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
