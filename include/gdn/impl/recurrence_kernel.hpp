#ifndef GDN_IMPL_RECURRENCE_KERNEL_HPP
#define GDN_IMPL_RECURRENCE_KERNEL_HPP

/// \file recurrence_kernel.hpp
/// \brief The forward and verify-with-ring kernel: one functor, two modes.
///
/// `Verify == false` commits every row's state; `Verify == true` records ring
/// entries instead for rows of at most RING_LEN tokens and commits longer
/// rows. Both run the chunk algebra of chunk_algebra.hpp through the same
/// code, which is why verify's outputs are bit-identical to the forward's.
///
/// Preconditions (checked on the host, validate.hpp): Dk == Dv == `Dk`, a
/// multiple of 64; the state pool is dense (LayoutRight) and 16-byte aligned.
///
/// Thread mapping. Work items are (sequence b, value head h, tile of
/// kTileCols = 64 state columns), tile fastest, so teams reading the same key
/// and query run side by side; a team takes items league_rank, +
/// league_size, ... (host: one team per item; CUDA: persistent teams, each
/// prefetching its next item's state tile into L2). The team holds its state tile in registers
/// (TeamShape, backend.hpp: CUDA 128 threads, lane `l` of column group `cg`
/// holds 16 rows x 4 columns at Dk = 128; host one thread, the whole tile)
/// from the first chunk to the last: the state is read once and written at
/// most once. Per chunk of `chunk_tokens` tokens: the team stages k, q, the
/// tile's v, decay and beta in scratch; every thread projects its
/// fragment on each token's k and q (step 1, lane groups reduce); lane
/// groups take token pairs for step 2's Gram entries and norms; threads take
/// tile columns for step 3's delta factors (sequential in j) and
/// (token, column) pairs for the readout (host: a row of 64 columns at a
/// time); verify writes the records;
/// step 4 folds the chunk into the registers if the state goes on.

#include <gdn/config.hpp>
#include <gdn/impl/backend.hpp>
#include <gdn/impl/chunk_algebra.hpp>
#include <gdn/impl/params.hpp>

#include <Kokkos_Core.hpp>

namespace gdn {
namespace Impl {

template <class ExecSpace, class ActT, class StateT, class RingT, int Dk, bool Verify>
struct RecurrenceKernel {
  using Traits = TeamTraits<ExecSpace>;
  using M = typename ExecSpace::memory_space;
  static constexpr int kLanes = Traits::lanes;
  static constexpr int kCols = Traits::cols;
  static constexpr int kThreads = Traits::threads;
  static constexpr int kRows = Dk / kLanes;  // fragment rows per thread
  static constexpr int kC = chunk_tokens;
  static constexpr int kTiles = Dk / kTileCols;  // tiles per head
  using Scratch = ChunkScratch<Dk, kC>;
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<kThreads, Traits::min_teams>,
                                    TeamKernelLaunch>;
  using Member = typename Policy::member_type;
  using ScratchView =
      Kokkos::View<float*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  static_assert(Dk % kTileCols == 0 && kRows % 4 == 0, "head dim: a multiple of 64");
  static_assert(kTileCols % kThreads == 0 || kThreads % kTileCols == 0,
                "step 3 shares the tile's columns evenly");

  RecurrenceParams<ActT, StateT, RingT, M> m;
  int m_items = 0;  // B * nv * kTiles

  /// Team scratch in bytes (16 bytes of slack for alignment).
  static constexpr int scratch_bytes() { return int(sizeof(float)) * (Scratch::kFloats + 4); }
  /// Work items (teams) of a batch of B sequences.
  static long long items(long long batch, int nv) { return batch * nv * kTiles; }

  /// Items league_rank, + league_size, ...: on the host one item per team;
  /// on CUDA persistent teams, each prefetching its next item's state tile
  /// into L2 while it computes the current one.
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    for (int item = team.league_rank(); item < m_items; item += team.league_size()) {
      const int next = item + team.league_size();
      if (next < m_items) prefetch_item(team, next);
      run_item(team, item);
    }
  }

  KOKKOS_INLINE_FUNCTION void prefetch_item(const Member& team, int item) const {
    const int tile = item % kTiles;
    const int h = (item / kTiles) % m.nv;
    const int b = item / kTiles / m.nv;
    if (m.in.row_offsets(b + 1) == m.in.row_offsets(b)) return;
    prefetch_tile_l2(&m.state(m.slots(b), h, 0, tile * kTileCols), Dk,
                     kTileCols * int(sizeof(StateT)), long(Dk) * long(sizeof(StateT)),
                     team.team_rank(), kThreads);
  }

  KOKKOS_INLINE_FUNCTION void run_item(const Member& team, int item) const {
    const int tile = item % kTiles;
    const int bh = item / kTiles;
    const int h = bh % m.nv;
    const int b = bh / m.nv;
    const int t0 = static_cast<int>(m.in.row_offsets(b));
    const int len = static_cast<int>(m.in.row_offsets(b + 1)) - t0;
    if (len <= 0) return;
    const bool record = Verify && len <= m.ring_len;
    const int kh = h / m.group;
    const int g = h % m.group;
    const int rank = team.team_rank();
    const int lane = rank % kLanes;
    const int cg = rank / kLanes;  // lane group
    const int col0 = cg * kCols;   // this thread's first tile column
    const unsigned mask = group_mask<kLanes>(rank);
    const int tcol = tile * kTileCols;  // the tile's first column in the head

    ScratchView raw(team.team_scratch(0), Scratch::kFloats + 4);
    const Scratch s(align16(raw.data()));

    StateT* const srow = &m.state(m.slots(b), h, 0, tcol + col0);  // row 0 of the fragment
    float st[kRows][kCols];
    GDN_UNROLL
    for (int i = 0; i < kRows; ++i) load_frag<kCols>(srow + lane_row<kLanes>(lane, i) * Dk, st[i]);

    for (int c0 = 0; c0 < len; c0 += kC) {
      const int n = len - c0 < kC ? len - c0 : kC;
      team.team_barrier();  // the last chunk's (or item's) readers are done with scratch
      stage(team, s, t0 + c0, n, h, kh, tcol);
      team.team_barrier();
      for (int e = cg; e < n * n; e += Traits::col_groups) {  // token pairs, a lane group each
        const int j = e / n, i = e % n;
        if (i <= j) chunk_coefficients<kLanes>(s, j, i, lane, mask, m.q_scale);
      }
      for (int j = 0; j < n; ++j) project<kLanes>(st, s, j, lane, col0);
      team.team_barrier();
      constexpr int kPer = (kTileCols + kThreads - 1) / kThreads;  // columns per thread, step 3
      if (rank * kPer < kTileCols) delta_factors<kPer>(s, n, rank * kPer);
      team.team_barrier();
      if constexpr (kThreads == 1) {  // host: a row of outputs at a time
        for (int j = 0; j < n; ++j) {
          float o[kTileCols];
          readout_row(s, j, o);
          for (int c = 0; c < kTileCols; ++c)
            m.out.write(t0 + c0 + j, long(h) * Dk + tcol + c, o[c]);
        }
      } else {
        for (int e = rank; e < n * kTileCols; e += kThreads) {
          const int j = e / kTileCols, c = e % kTileCols;
          m.out.write(t0 + c0 + j, long(h) * Dk + tcol + c, readout(s, j, c));
        }
      }
      if (record) write_records(team, s, b, c0, n, kh, g, tile);
      if (!record || c0 + n < len) {
        fold_fragment<kLanes>(st, lane, n, s.k, Dk, s.u + col0, kTileCols, s.a, 1);
      }
    }
    if (!record) {
      GDN_UNROLL
      for (int i = 0; i < kRows; ++i)
        store_frag<kCols>(srow + lane_row<kLanes>(lane, i) * Dk, st[i]);
    }
  }

  /// Chunk inputs into scratch: k, q of key head kh, v of the tile, decay, beta
  /// (m.in, token_io.hpp, returns them as float and computes raw gates).
  KOKKOS_INLINE_FUNCTION void stage(const Member& team, const Scratch& s, int t, int n, int h,
                                    int kh, int tcol) const {
    const int rank = team.team_rank();
    const long qc = long(kh) * Dk;
    const long kc = m.key_dim + qc;
    for (int e = rank; e < n * Dk; e += kThreads) {
      const int j = e / Dk, i = e % Dk;
      s.k[e] = m.in.qkv(t + j, kc + i);
      s.q[e] = m.in.qkv(t + j, qc + i);
    }
    const long vc = 2 * m.key_dim + long(h) * Dk + tcol;
    for (int e = rank; e < n * kTileCols; e += kThreads) {
      const int j = e / kTileCols, c = e % kTileCols;
      s.v[e] = m.in.qkv(t + j, vc + c);
    }
    for (int j = rank; j < n; j += kThreads) {
      s.a[j] = m.in.decay(t + j, h);
      s.beta[j] = m.in.beta(t + j, h);
    }
  }

  /// Records of positions c0 .. c0+n-1: this tile's delta factors; the key
  /// (by the key head's first value head, tile 0) and this head's decay (tile 0).
  KOKKOS_INLINE_FUNCTION void write_records(const Member& team, const Scratch& s, int b, int c0,
                                            int n, int kh, int g, int tile) const {
    const int rank = team.team_rank();
    const int row = static_cast<int>(m.ring_slots(b));
    const int uoff = Dk + g * Dk + tile * kTileCols;
    for (int e = rank; e < n * kTileCols; e += kThreads) {
      const int j = e / kTileCols, c = e % kTileCols;
      m.ring(row, kh, c0 + j, uoff + c) = RingT(s.u[e]);
    }
    if (tile != 0) return;
    if (g == 0) {
      for (int e = rank; e < n * Dk; e += kThreads) {
        const int j = e / Dk, i = e % Dk;
        m.ring(row, kh, c0 + j, i) = RingT(s.k[e]);
      }
    }
    const int aoff = Dk + m.group * Dk + g;
    for (int j = rank; j < n; j += kThreads) m.ring(row, kh, c0 + j, aoff) = RingT(s.a[j]);
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_RECURRENCE_KERNEL_HPP
