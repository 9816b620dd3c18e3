#ifndef GDN_IMPL_STREAM_KERNEL_HPP
#define GDN_IMPL_STREAM_KERNEL_HPP

/// \file stream_kernel.hpp
/// \brief Forward and verify over rows of at most one chunk (decode steps and
/// verify windows) on GPUs: the state streams through registers.
///
/// Preconditions (checked on the host, validate.hpp): Dk == Dv == `Dk`, 64 or
/// 128; the state pool is dense (LayoutRight) and 16-byte aligned.
///
/// Thread mapping (StreamShape, backend.hpp; CUDA: Dk / 16 warps, 2 * Dk
/// threads, persistent teams started by launch_plain, cuda_launch.hpp, since
/// the team scratch exceeds what Kokkos 3.4's TeamPolicy grants). Work items
/// are (sequence b, key head kh), kh fastest. Per item the team stages the
/// chunk's keys and queries once and computes the key head's dot products and
/// norms once (lane groups of Dk / 16 lanes, a token pair each), then takes
/// the G value heads of the group in turn:
/// - each thread starts the loads of its fragment of the head's state: warp
///   `w` owns the canonical block of rows `[16 w, 16 w + 16)`, lane `l` its
///   columns `[l * Dk / 32, + Dk / 32)` (a warp's load of a row is
///   contiguous); they are in flight while the team stages the head's values
///   and gates and computes its decay products;
/// - step 1, in passes of kPass tokens: each warp runs its block's fma chains
///   for the pass's tokens (`block_project`; every lane reads the same key
///   and query words) and writes the block sums to the partial buffer; after
///   a barrier thread `t` adds the blocks of P (t < Dk) or R of column
///   `t % Dk` in block_tree's order, and a second barrier frees the buffer
///   for the next pass. A verify row that records drops the fragment there;
/// - threads 0 .. Dv-1 run step 3 for a column each (`delta_readout_column`) and
///   write the delta-factor records, while the others write the decays;
/// - a forward row (or a verify row longer than RING_LEN) reloads its
///   fragment (from L2: no register holds it across step 3), folds the
///   chunk's records into it and stores it.
/// While a head computes, the next head's (or item's) state is hinted into
/// L2. `Lazy` (a verify into a history ring, lazy_kernel.hpp): after its
/// fragment loads, each head folds the row's pending history records into
/// them, kC at a time (keys staged in P's region, delta factors in R's,
/// decays in the partial buffer, all free before step 1), and the window's
/// records go behind the pending ones (a row with pending records always
/// records, so the reload of a committing row reads a committed state). Rows longer than chunk_tokens are the tiled kernel's
/// (recurrence_kernel.hpp, launched beside this one): both evaluate the
/// canonical order of chunk_algebra.hpp, so the bits do not depend on which
/// kernel took a row.

#include <gdn/config.hpp>
#include <gdn/impl/backend.hpp>
#include <gdn/impl/chunk_algebra.hpp>
#include <gdn/impl/lazy_kernel.hpp>
#include <gdn/impl/params.hpp>
#include <gdn/ring.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace gdn {
namespace Impl {

/// Tokens `t .. t+n-1` of columns `c0 .. c0+width-1` of `x` into `dst`
/// ([n][width] floats of team scratch), by `threads` threads. Rows contiguous
/// and 16-byte aligned (`vec`): float words by async copies (completed by
/// async_wait), bf16 words loaded 8 values at a time and widened; otherwise
/// a value at a time.
template <class ActT, class X>
KOKKOS_INLINE_FUNCTION void stage_rows(int rank, int threads, float* dst, const X& x, int t, int n,
                                       long c0, int width, bool vec) {
  if (vec) {
    constexpr int kE = 16 / int(sizeof(ActT));  // values per 16-byte word
    const int words = width / kE;
    for (int e = rank; e < n * words; e += threads) {
      const int j = e / words, w = kE * (e % words);
      if constexpr (std::is_same<ActT, float>::value) {
        async_copy<16>(dst + kE * e, &x(t + j, c0 + w));
      } else {
        float v[kE];
        load_frag<kE>(&x(t + j, c0 + w), v);
        store_frag<kE>(dst + kE * e, v);
      }
    }
  } else {
    for (int e = rank; e < n * width; e += threads) {
      const int j = e / width, i = e % width;
      dst[e] = to_float(x(t + j, c0 + i));
    }
  }
}

template <class ExecSpace, class ActT, class StateT, class RingT, int Dk, bool Verify,
          bool Lazy = false>
struct StreamKernel {
  static_assert(Verify || !Lazy, "lazy commit is a verify mode");
  using Shape = StreamShape<ExecSpace, Dk>;
  static constexpr int kBlocks = Dk / kBlockRows;  // a warp per canonical block
  static constexpr int kCols = Dk / 32;            // columns per lane
  static constexpr int kRows = kBlockRows;         // rows per thread
  static constexpr int kThreads = 32 * kBlocks;    // 2 * Dk: P and R of every column
  static constexpr int kMinTeams = Shape::min_teams;
  static constexpr int kGroupLanes = Dk / kBlockRows;  // lanes of a Gram lane group
  static constexpr int kGroups = kThreads / kGroupLanes;
  static constexpr int kC = chunk_tokens;
  static_assert(kThreads == 2 * Dk, "one block sum of P or R per thread and column");
  using Scratch = ChunkScratch<Dk, kC, Dk, true>;
  /// Tokens per pass of step 1 (each state value enters 2 kPass fma chains;
  /// a pass ends with two barriers): two for a bf16 state, one for a float
  /// state, the measured best of 1, 2 and 4 on the H200 (docs/performance.md).
  static constexpr int kPass = sizeof(StateT) == 2 ? 2 : 1;
  /// The block sums of one pass, [token][block][P, R][Dk].
  static constexpr int kPartial = kPass * kBlocks * 2 * Dk;

  RecurrenceParams<ActT, StateT, RingT, typename ExecSpace::memory_space> m;
  int m_items = 0;  // B * nk
  int m_nk = 0;

  static constexpr int scratch_bytes() {
    return int(sizeof(float)) * (Scratch::kFloats + kPartial);
  }
  static long long items(long long batch, int nk) { return batch * nk; }
  static long long league(const ExecSpace& space, long long items) {
    return Shape::league(space, items);
  }

  /// A work item and the index entries it reads; len 0: nothing to do (an
  /// empty or a padding row). Lazy: as in RecurrenceKernel::Item.
  struct Item {
    int b = 0, kh = 0, t0 = 0, len = 0;
    std::uint32_t slot = 0, ring_row = 0;
    int pending = 0;
  };

  KOKKOS_INLINE_FUNCTION Item item_at(int item) const {
    Item it;
    it.b = item / m_nk;
    it.kh = item - it.b * m_nk;
    const std::uint32_t o0 = m.in.row_offsets(it.b), o1 = m.in.row_offsets(it.b + 1);
    it.slot = m.slots(it.b);
    if constexpr (Verify) it.ring_row = m.ring_slots(it.b);
    it.t0 = static_cast<int>(o0);
    it.len = static_cast<int>(o1) - it.t0;
    // A padding row (gdn::pad_slot) is no work: none of its rows is read or written.
    if (it.slot == pad_slot || (Verify && it.ring_row == pad_slot)) it.len = 0;
    if constexpr (Lazy) {
      if (it.len > 0) it.pending = pending_records(m.ledger(it.ring_row, 0), m.ring_len);
    }
    return it;
  }

  /// Items league_rank, + league_size, ...; the next item's index entries
  /// are loaded while the current one runs.
  template <class Team>
  KOKKOS_INLINE_FUNCTION void operator()(const Team& team) const {
    int item = team.league_rank();
    if (item >= m_items) return;
    float* const base = team.scratch();
    const Scratch s(base);
    float* const partial = base + Scratch::kFloats;
    Item cur = item_at(item);
    for (; item < m_items; item += team.league_size()) {
      const int next = item + team.league_size();
      const Item nxt = next < m_items ? item_at(next) : Item();
      if (cur.len > 0 && cur.len <= kC) run_item(team, s, partial, cur, nxt);
      cur = nxt;
    }
  }

  template <class Team>
  KOKKOS_FORCEINLINE_FUNCTION void run_item(const Team& team, const Scratch& s, float* partial,
                                            const Item& it, const Item& nxt) const {
    const int t0 = it.t0, n = it.len, kh = it.kh, G = m.group;
    const bool record = Verify && n <= m.ring_len;
    const int rank = team.team_rank();
    const int warp = rank / 32;
    const int col0 = (rank % 32) * kCols;
    const int row = static_cast<int>(it.ring_row);
    const int pos0 = it.pending;  // the window's first record position (0 but in lazy mode)
    const auto& x = m.in.m_qkv;

    team.team_barrier();  // the last item's readers are done with scratch
    stage_rows<ActT>(rank, kThreads, s.k, x, t0, n, m.key_dim + long(kh) * Dk, Dk, m.vec_qkv);
    stage_rows<ActT>(rank, kThreads, s.q, x, t0, n, long(kh) * Dk, Dk, m.vec_qkv);
    async_wait();
    team.team_barrier();
    key_head_dots<kGroupLanes, kGroups>(s, n, rank, m.q_scale);
    if (record) {
      for (int e = rank; e < n * Dk; e += kThreads) {
        const int j = e / Dk, i = e % Dk;
        m.ring(row, kh, pos0 + j, RingLayout{Dk, Dk, G}.key_offset() + i) = RingT(s.k[e]);
      }
    }
    for (int g = 0; g < G; ++g) {
      const int h = kh * G + g;
      StateT* const frag = &m.state(it.slot, h, warp * kRows, col0);
      // The head's fragment loads are in flight while its inputs are staged.
      float st[kRows][kCols];
      GDN_UNROLL
      for (int i = 0; i < kRows; ++i) load_frag<kCols>(frag + i * Dk, st[i]);
      team.team_barrier();  // the last head's step 3 and fold are done with scratch
      if constexpr (Lazy) {
        if (it.pending > 0) advance(team, s, partial, st, it, g);
      }
      stage_rows<ActT>(rank, kThreads, s.v, x, t0, n, 2 * m.key_dim + long(h) * Dk, Dk,
                       m.vec_qkv);
      for (int j = rank; j < n; j += kThreads) {
        s.a[j] = m.in.decay(t0 + j, h);
        s.beta[j] = m.in.beta(t0 + j, h);
      }
      async_wait();
      team.team_barrier();
      for (int e = rank; e < n * n; e += kThreads) {
        const int j = e / n, i = e % n;
        if (i <= j) head_pair_coefficients(s, j, i, s.dkk[j * kC + i], s.dkq[j * kC + i]);
      }
      if (g + 1 < G) {
        prefetch_head(&m.state(it.slot, h + 1, 0, 0), rank);
      } else if (nxt.len > 0 && nxt.len <= kC) {
        prefetch_head(&m.state(nxt.slot, nxt.kh * G, 0, 0), rank);
      }
      int j0 = 0;
      for (; j0 + kPass <= n; j0 += kPass) project_pass<kPass>(team, st, s, partial, j0);
      if (n - j0 >= 2) {
        project_pass<2>(team, st, s, partial, j0);
        j0 += 2;
      }
      if (j0 < n) project_pass<1>(team, st, s, partial, j0);
      team.team_barrier();  // P, R and the coefficients are in scratch
      if (rank < Dk) {
        const long ocol = long(h) * Dk + rank;
        const int ucol = RingLayout{Dk, Dk, G}.delta_offset(g) + rank;
        const auto emit_u = [&](int j, int, float u) {
          if (record) m.ring(row, kh, pos0 + j, ucol) = RingT(u);
        };
        const auto emit_out = [&](int j, int, float o) { m.out.write(t0 + j, ocol, o); };
        if (n <= 4) {
          delta_readout_column<4>(s, n, rank, emit_u, emit_out);
        } else if (n <= 8) {
          delta_readout_column<8>(s, n, rank, emit_u, emit_out);
        } else {
          delta_readout_column<kC>(s, n, rank, emit_u, emit_out);
        }
      } else if (record) {
        const int aoff = RingLayout{Dk, Dk, G}.decay_offset(g);
        for (int j = rank - Dk; j < n; j += kThreads - Dk) {
          m.ring(row, kh, pos0 + j, aoff) = RingT(s.a[j]);
        }
      }
      if (!record) {
        team.team_barrier();  // every column's delta factors are in scratch
        GDN_UNROLL
        for (int i = 0; i < kRows; ++i) load_frag<kCols>(frag + i * Dk, st[i]);
        fold_fragment<kBlocks>(st, warp, n, s.k, Dk, s.u + col0, Dk, s.a, 1);
        GDN_UNROLL
        for (int i = 0; i < kRows; ++i) store_frag<kCols>(frag + i * Dk, st[i]);
      }
    }
  }

  /// Step 1 for tokens j0 .. j0+NT-1: each warp's block sums of P and R go
  /// to the partial buffer ([token][block][P, R][Dk]); after a barrier thread
  /// `t` adds the blocks of P (t < Dk) or R of column `t % Dk` in block_tree's
  /// order.
  template <int NT, class Team>
  KOKKOS_FORCEINLINE_FUNCTION void project_pass(const Team& team, const float (&st)[kRows][kCols],
                                                const Scratch& s, float* buf, int j0) const {
    const int rank = team.team_rank();
    const int warp = rank / 32, col0 = (rank % 32) * kCols;
    if (j0 > 0) team.team_barrier();  // the last pass's sums are read
    float pk[NT][kCols], pq[NT][kCols];
    const int r0 = j0 * Dk + warp * kRows;
    block_project<NT>(st, s.k + r0, s.q + r0, Dk, pk, pq);
    GDN_UNROLL
    for (int t = 0; t < NT; ++t) {
      store_frag<kCols>(buf + ((t * kBlocks + warp) * 2) * Dk + col0, pk[t]);
      store_frag<kCols>(buf + ((t * kBlocks + warp) * 2 + 1) * Dk + col0, pq[t]);
    }
    team.team_barrier();
    const int which = rank / Dk, c = rank % Dk;
    float* const dst = (which == 0 ? s.p : s.r) + j0 * Dk + c;
    GDN_UNROLL
    for (int t = 0; t < NT; ++t) {
      float b[kBlocks];
      GDN_UNROLL
      for (int e = 0; e < kBlocks; ++e) b[e] = buf[((t * kBlocks + e) * 2 + which) * Dk + c];
      dst[t * Dk] = block_tree(b);
    }
  }

  /// Lazy: folds the item's pending history records into head g's fragment,
  /// kC at a time (keys in P's region, the head's delta factors in R's, the
  /// decays in the partial buffer; the caller's barrier precedes the first
  /// staging, and the barrier after the head's input staging follows the
  /// last fold).
  template <class Team>
  KOKKOS_INLINE_FUNCTION void advance(const Team& team, const Scratch& s, float* partial,
                                      float (&st)[kRows][kCols], const Item& it, int g) const {
    const int rank = team.team_rank();
    const int warp = rank / 32, col0 = (rank % 32) * kCols;
    const int row = static_cast<int>(it.ring_row), kh = it.kh;
    const RingLayout lay{Dk, Dk, m.group};
    const int uoff = lay.delta_offset(g), aoff = lay.decay_offset(g);
    for (int p0 = 0; p0 < it.pending; p0 += kC) {
      const int cnt = it.pending - p0 < kC ? it.pending - p0 : kC;
      if (p0 > 0) team.team_barrier();  // the last records' fold is done with scratch
      for (int e = rank; e < cnt * Dk; e += kThreads) {
        const int j = e / Dk, i = e % Dk;
        stage_ring_value(s.p + e, &m.ring(row, kh, p0 + j, lay.key_offset() + i));
        stage_ring_value(s.r + e, &m.ring(row, kh, p0 + j, uoff + i));
      }
      for (int j = rank; j < cnt; j += kThreads) {
        stage_ring_value(partial + j, &m.ring(row, kh, p0 + j, aoff));
      }
      async_wait();
      team.team_barrier();
      fold_steps<StateT>(st, m.ledger, row, p0, cnt, [&](int j, int cn) {
        fold_fragment<kBlocks>(st, warp, cn, s.p + j * Dk, Dk, s.r + col0 + j * Dk, Dk,
                               partial + j, 1);
      });
    }
  }

  /// Hint one head's state (Dk x Dv values from `head`) into L2.
  KOKKOS_FORCEINLINE_FUNCTION static void prefetch_head(const StateT* head, int rank) {
    prefetch_tile_l2(head, Dk, Dk * int(sizeof(StateT)), long(Dk) * long(sizeof(StateT)), rank,
                     kThreads);
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_STREAM_KERNEL_HPP
