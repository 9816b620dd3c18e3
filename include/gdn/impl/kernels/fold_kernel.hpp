#ifndef GDN_IMPL_FOLD_KERNEL_HPP
#define GDN_IMPL_FOLD_KERNEL_HPP

/// \file fold_kernel.hpp
/// \brief The fold kernel: commit accepted ring records into the state, all
/// layers in one launch.
///
/// Applies records p = 0 .. n-1 with `fold_record` (core/token_step.hpp), the
/// forward's decay and update lines in the forward's order, which is why a fold
/// from a float ring is bit-identical to a forward over the accepted tokens.
/// Each state value is updated on its own, so the thread mapping below
/// changes no bits.
///
/// Thread mapping (FoldShape, backend.hpp). One team per work item (layer l,
/// sequence b, value head h, tile of the state); the commit before a lazy
/// verify, where few items have work, launches fewer teams, each taking items
/// league_rank, + league_size, ... CUDA: a tile is
/// `tile_rows` (32 at Dk = 128) whole rows; thread t holds 8 rows x 4
/// columns in registers, neighbouring threads neighbouring columns, so a
/// warp's loads and stores are contiguous rows; eight teams per SM. Host:
/// one thread holds a tile of 64 columns of all rows. The team loads its
/// fragments (all loads in flight at once), stages up to kC = 16
/// records at a time in scratch (the tile's key rows, the tile's delta
/// factors, the decays; every copy of a thread in flight at once), then
/// every thread folds them in (fold_fragment: GPU record outer, host a row
/// at a time). Rows with n == 0 or n > RING_LEN, and
/// entries whose state or ring row is gdn::pad_slot, return before they read
/// anything.
///
/// `Lazy` (state_flush, and the commit before a lazy verify): the count of
/// each entry is the pending records of its history row (the ledger,
/// lazy_kernel.hpp) instead of num_accepted[b], and a bf16 state is rounded
/// after every record that ended a step, as the eager flow stored it there;
/// the ledger is cleared by a kernel launched after this one. Before a
/// verify (`m.offsets` given, one layer) only the rows whose window does not
/// fit behind their pending records are committed, and there are no conv
/// items (conv1d_verify_lazy commits its own rows).
///
/// With conv pools (the `state_fold` overload taking a `ConvFold`), the same
/// launch has one more work item per (layer l, sequence b, block of
/// kConvChannels conv channels), before the state items: a thread takes V
/// consecutive channels at a time (16 bytes of each input row where the
/// pools allow, else one) and sets their W-1 inputs to the last W-1 of (old
/// row, conv ring positions 0 .. n-1), copied as stored: bit-identical to
/// conv1d_fwd's commit over those n tokens (conv_commit, conv_kernel.hpp).

#include <gdn/config.hpp>
#include <gdn/impl/backend/backend.hpp>
#include <gdn/impl/core/token_step.hpp>
#include <gdn/impl/kernels/conv_kernel.hpp>
#include <gdn/impl/kernels/lazy_kernel.hpp>
#include <gdn/impl/launch/params.hpp>
#include <gdn/ring.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace gdn {
namespace Impl {

template <class ExecSpace, class StateT, class RingT, int Dk, bool Lazy = false>
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
  static constexpr int kC = 16;  // records staged per barrier (any count gives the same bits)
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

  /// Conv channels per conv work item (a multiple of both lane counts, 8 and 4).
  static constexpr int kConvChannels = kThreads > 1 ? kThreads * 8 : 256;

  FoldParams<StateT, RingT, M> m;
  int m_batch = 0;
  int m_items = 0;       // L * B * nv * kTiles state items
  int m_conv_items = 0;  // L * B * conv_blocks(conv_dim) conv items, or 0

  static long long conv_items(long long layers, long long batch, long long conv_dim) {
    return layers * batch * ((conv_dim + kConvChannels - 1) / kConvChannels);
  }

  static constexpr int scratch_bytes() { return int(sizeof(float)) * (kScratchFloats + 4); }
  static long long items(long long layers, long long batch, int nv) {
    return layers * batch * nv * kTiles;
  }
  static long long league(const ExecSpace& space, long long items) {
    return Shape::league(space, items);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int total = m_items + m_conv_items;  // <= INT_MAX / 2 (checked on the host)
    if (team.league_rank() >= total) return;
    // Team scratch is taken once per team (every take advances Kokkos' scratch
    // pointer), whatever the number of items the team runs.
    float* const scratch = align16(ScratchView(team.team_scratch(0), kScratchFloats + 4).data());
    for (int item = team.league_rank(); item < total; item += team.league_size()) {
      if (item < m_conv_items) {
        run_conv_item(team, item);
      } else {
        run_item(team, scratch, item - m_conv_items);
      }
    }
  }

  /// The records to commit for sequence b of `layer` (num_accepted[b], or the
  /// pending records of its history row when Lazy), and its state and ring
  /// rows. The index entries are loaded together, before any is looked at.
  /// 0 where nothing may be read: a gdn::pad_slot entry or a count above
  /// RING_LEN.
  KOKKOS_INLINE_FUNCTION int records(int layer, int b, std::uint32_t& state_row,
                                     std::uint32_t& ring_row, bool* bad = nullptr) const {
    const std::uint32_t na = Lazy ? 0u : m.num_accepted(b);
    state_row = m.state_rows(layer, b);
    ring_row = m.ring_rows(layer, b);
    if (state_row == pad_slot || ring_row == pad_slot) return 0;
    // An entry outside its pools (or, lazy, the ledger's rows) is skipped and counted.
    if (state_row >= m.state.extent(0) || ring_row >= m.ring.extent(0) ||
        (Lazy && ring_row >= m.ledger.extent(0))) {
      if (bad != nullptr) *bad = true;
      return 0;
    }
    const int n = Lazy ? pending_records(m.ledger(ring_row, 0), m.ring_len) : static_cast<int>(na);
    return n <= m.ring_len ? n : 0;
  }

  /// Conv item `item`: (layer, b, channel block), channel block fastest.
  KOKKOS_INLINE_FUNCTION void run_conv_item(const Member& team, int item) const {
    const int blocks = (m.conv_dim + kConvChannels - 1) / kConvChannels;
    const int c0 = (item % blocks) * kConvChannels;
    const int lb = item / blocks;  // layer * B + b
    const int b = lb % m_batch;
    const int layer = lb / m_batch;
    std::uint32_t srow = 0, rrow = 0;
    const int n = records(layer, b, srow, rrow);
    if (n <= 0) return;
    const std::size_t conv_rows =
        m.conv.word_bytes == 2 ? m.conv.state16.extent(0) : m.conv.state32.extent(0);
    const std::size_t conv_ring_rows =
        m.conv.word_bytes == 2 ? m.conv.ring16.extent(0) : m.conv.ring32.extent(0);
    if (srow >= conv_rows || rrow >= conv_ring_rows) return;  // outside the conv pools
    const int c1 = c0 + kConvChannels < m.conv_dim ? c0 + kConvChannels : m.conv_dim;
    const int rank = team.team_rank();
    if (m.conv.word_bytes == 2) {
      conv_commit_keep(rank, kThreads, m.conv_keep, m.conv_vec, m.conv.state16, m.conv.ring16, srow,
                       rrow, n, c0, c1);
    } else {
      conv_commit_keep(rank, kThreads, m.conv_keep, m.conv_vec, m.conv.state32, m.conv.ring32, srow,
                       rrow, n, c0, c1);
    }
  }

  KOKKOS_INLINE_FUNCTION void run_item(const Member& team, float* scratch, int item) const {
    const int tile = item % kTiles;
    const int rest = item / kTiles;
    const int h = rest % m.nv;
    const int lb = rest / m.nv;  // layer * B + b
    const int b = lb % m_batch;
    const int layer = lb / m_batch;
    std::uint32_t state_row = 0, ring_row = 0;
    bool bad = false;
    int n = records(layer, b, state_row, ring_row, &bad);
    if (bad && h == 0 && tile == 0 && team.team_rank() == 0) count_skipped_row(m.skipped);
    if constexpr (Lazy) {
      if (n > 0 && m.offsets.extent(0) > 0) {  // before a verify: only a window that overflows
        const std::uint32_t o0 = m.offsets(b), o1 = m.offsets(b + 1);
        const std::uint32_t len = o1 - o0;
        if (len == 0 || len <= std::uint32_t(m.ring_len - n)) n = 0;
        if (o1 < o0 || o1 > m.tokens) n = 0;  // the verify skips this row: nothing to commit
      }
    }
    if (n <= 0) return;
    const int rrow = static_cast<int>(ring_row);
    const int kh = h / m.group;
    const int g = h % m.group;
    const int rank = team.team_rank();
    const int row0 = (tile / (Dk / kTileCols)) * kTileRows;  // the tile's first row
    const int tcol = (tile % (Dk / kTileCols)) * kTileCols;  // and first column
    const int r0 = (rank / kColGroups) * kRows;              // this thread's rows in the tile
    const int c0 = (rank % kColGroups) * kCols;              // and columns

    float* const sk = scratch;          // [kC][kTileRows]
    float* const su = sk + kKeyFloats;  // [kC][kTileCols]
    float* const sa = su + kUFloats;    // [kC]

    StateT* const frag = &m.state(state_row, h, row0 + r0, tcol + c0);
    float st[kRows][kCols];
    GDN_UNROLL
    for (int i = 0; i < kRows; ++i) load_frag<kCols>(frag + i * Dk, st[i]);

    const int uoff = RingLayout{Dk, Dk, m.group}.delta_offset(g) + tcol;
    const int aoff = RingLayout{Dk, Dk, m.group}.decay_offset(g);
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
      for (int j = rank; j < cnt; j += kThreads)
        stage_value(sa + j, &m.ring(rrow, kh, p0 + j, aoff));
      async_wait();
      team.team_barrier();
      const auto fold = [&](int j, int cn) {
        fold_fragment<Shape::rows_outer>(st, cn, sk + j * kTileRows + r0, kTileRows,
                                         su + j * kTileCols + c0, kTileCols, sa + j);
      };
      if constexpr (Lazy) {
        fold_steps<StateT>(st, m.ledger, rrow, p0, cnt, fold);
      } else {
        fold(0, cnt);
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
