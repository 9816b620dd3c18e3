#ifndef GDN_IMPL_KERNELS_TOKEN_KERNEL_HPP
#define GDN_IMPL_KERNELS_TOKEN_KERNEL_HPP

/// \file token_kernel.hpp
/// \brief The forward, verify-with-ring and lazy-verify kernel: the
/// recurrence one token at a time (core/token_step.hpp), one functor.
///
/// `Verify == false` (recurrence_fwd) commits every row's state. `Verify`
/// records ring entries instead for rows of at most RING_LEN tokens and
/// commits longer rows. Both run the same code, so verify's outputs are the
/// forward's bits. `Lazy` (recurrence_verify_lazy, lazy_kernel.hpp): right
/// after the state load the row's pending history records are folded into
/// the registers (fold_record, rounded where a step ended), then the window
/// runs and its records go behind the pending ones.
///
/// Preconditions (checked on the host, validate.hpp): Dk == Dv == `Dk`, 64
/// or 128; the state pool is dense (LayoutRight) and 16-byte aligned; every
/// index is in range or gdn::pad_slot (an index out of range, or a row whose
/// end lies outside `qkv`, is skipped like a padding row and counted,
/// gdn::skipped_rows).
///
/// Thread mapping (TokenShape, backend.hpp). Work items are (sequence b,
/// value head h, tile of kTokenTile = 64 state columns), tile fastest. The
/// team holds its tile in registers from the first token of the row to the
/// last, so the state is read once and written at most once: CUDA 128
/// threads (Dk = 128), lane groups of Dk / 16 lanes, lane `l` holding the
/// canonical block of rows [16 l, 16 l + 16) of its group's 4 columns;
/// persistent teams, each hinting its next item's tile into L2 as it
/// starts an item. Host: one thread holds the tile, swept 16 columns at a
/// time. Per stage of up to kStage tokens: every thread issues its copies
/// of the stage's k, q, the tile's v, decay and beta into scratch (one
/// trip), a barrier, lane groups compute the squared norms, a barrier, then
/// every thread runs the stage's tokens over its columns: for each token
/// one sweep applies its update and takes its readout sums and the next
/// token's decay and key sums (token_sweep), the lanes combine the sums in
/// the canonical tree (block_combine), and each lane computes the next delta
/// factors of its columns itself. A group's lanes share the stores of the
/// outputs and delta-factor records.

#include <gdn/config.hpp>
#include <gdn/impl/backend/backend.hpp>
#include <gdn/impl/core/token_step.hpp>
#include <gdn/impl/kernels/lazy_kernel.hpp>
#include <gdn/impl/launch/params.hpp>
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
struct TokenKernel {
  static_assert(Verify || !Lazy, "lazy commit is a verify mode");
  using Shape = TokenShape<ExecSpace, Dk, StateT>;
  using M = typename ExecSpace::memory_space;
  static constexpr int kLanes = Shape::lanes;
  static constexpr int kStride = Shape::lane_stride;
  static constexpr int kCols = Shape::cols;
  static constexpr int kCB = Shape::col_block;
  static constexpr int kThreads = Shape::threads;
  static constexpr int kGroups = kTokenTile / kCols;
  static constexpr int kRows = Dk / kLanes;        // fragment rows per thread
  static constexpr int kBPL = kRows / kBlockRows;  // canonical blocks per lane
  static constexpr int kTiles = Dk / kTokenTile;   // tiles per head
  static constexpr int kStage = 16;                // tokens staged per barrier
  static_assert(kGroups * kLanes == kThreads && kCols % kCB == 0, "threads cover the tile once");
  static_assert(kBPL * kBlockRows * kLanes == Dk, "whole canonical blocks per lane");
  static_assert(Dk % kTokenTile == 0, "head dim: a multiple of the tile");

  /// Team scratch, floats: k, q [kStage][Dk], v [kStage][kTokenTile], then
  /// per token a, beta, kinv, qf [kStage] each.
  static constexpr int kK = 0;
  static constexpr int kQ = kK + kStage * Dk;
  static constexpr int kV = kQ + kStage * Dk;
  static constexpr int kA = kV + kStage * kTokenTile;
  static constexpr int kBeta = kA + kStage;
  static constexpr int kKinv = kBeta + kStage;
  static constexpr int kQf = kKinv + kStage;
  static constexpr int kScratchFloats = kQf + kStage;
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<kThreads, Shape::min_teams>,
                                    TeamKernelLaunch>;
  using Member = typename Policy::member_type;
  using ScratchView =
      Kokkos::View<float*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  RecurrenceParams<ActT, StateT, RingT, M> m;
  int m_items = 0;  // B * nv * kTiles

  /// Team scratch in bytes (16 bytes of slack for alignment).
  static constexpr int scratch_bytes() { return int(sizeof(float)) * (kScratchFloats + 4); }
  /// Work items (teams) of a batch of B sequences.
  static long long items(long long batch, int nv) { return batch * nv * kTiles; }
  static long long league(const ExecSpace& space, long long items) {
    return Shape::league(space, items);
  }

  /// A work item and the index entries it reads, loaded together; len 0:
  /// nothing to do (an empty or a padding row, or an index out of range).
  /// Lazy: `pending` history records to fold first, which is also the
  /// window's first record position.
  struct Item {
    int h = 0, tile = 0, t0 = 0, len = 0;
    std::uint32_t slot = 0, ring_row = 0;
    int pending = 0;
    bool bad = false;  // an index out of range (not padding): counted once per row
  };

  KOKKOS_INLINE_FUNCTION Item item_at(int item) const {
    Item it;
    it.tile = item % kTiles;
    const int bh = item / kTiles;
    it.h = bh % m.nv;
    const int b = bh / m.nv;
    const std::uint32_t o0 = m.in.row_offsets(b), o1 = m.in.row_offsets(b + 1);
    it.slot = m.slots(b);
    if constexpr (Verify) it.ring_row = m.ring_slots(b);
    it.t0 = static_cast<int>(o0);
    it.len = static_cast<int>(o1 - o0);
    // Padding rows (gdn::pad_slot) and indices outside their pools are no
    // work: none of their rows is read or written.
    const bool pad = it.slot == pad_slot || (Verify && it.ring_row == pad_slot);
    const bool ring_ok = !Verify || it.ring_row < m.ring.extent(0);
    if (pad) {
      it.len = 0;
    } else if (it.slot >= m.state.extent(0) || !ring_ok || o1 < o0 || o1 > m.in.m_qkv.extent(0)) {
      it.len = 0;
      it.bad = it.h == 0 && it.tile == 0;
    }
    if constexpr (Lazy) {
      if (it.len > 0) it.pending = pending_records(m.ledger(it.ring_row, 0), m.ring_len);
    }
    return it;
  }

  /// Items league_rank, + league_size, ...; the next item's index entries
  /// are loaded before the current item runs.
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    int item = team.league_rank();
    if (item >= m_items) return;
    // Team scratch is taken once per team: every take advances Kokkos' scratch pointer.
    float* const s = align16(ScratchView(team.team_scratch(0), kScratchFloats + 4).data());
    Item cur = item_at(item);
    for (; item < m_items; item += team.league_size()) {
      const int next = item + team.league_size();
      const Item nxt = next < m_items ? item_at(next) : Item();
      if (cur.len > 0) run_item(team, s, cur, nxt);
      if (cur.bad && team.team_rank() == 0) count_skipped_row(m.skipped);
      cur = nxt;
    }
  }

  KOKKOS_INLINE_FUNCTION void run_item(const Member& team, float* s, const Item& it,
                                       const Item& nxt) const {
    const int rank = team.team_rank();
    int lane = 0, group = 0, warp_group0 = 0;
    Shape::place(rank, lane, group, warp_group0);
    const int h = it.h, kh = h / m.group, g = h % m.group;
    const int tcol = it.tile * kTokenTile;  // the tile's first column in the head
    const int col0 = group * kCols;         // this thread's first tile column
    const bool record = Verify && it.len <= m.ring_len;

    StateT* const frag = &m.state(it.slot, h, lane * kRows, tcol + col0);
    float st[kRows][kCols];
    GDN_UNROLL
    for (int i = 0; i < kRows; ++i) load_frag<kCols>(frag + i * Dk, st[i]);
    if (nxt.len > 0) {
      prefetch_tile_l2(&m.state(nxt.slot, nxt.h, 0, nxt.tile * kTokenTile), Dk,
                       kTokenTile * int(sizeof(StateT)), long(Dk) * long(sizeof(StateT)), rank,
                       kThreads);
    }
    if constexpr (Lazy) {
      if (it.pending > 0) advance(team, s, st, it, kh, g, lane, col0, tcol);
    }

    // Record pointers: position `pending` (the window's first record) of the row.
    RingT* rec = nullptr;
    long rec_stride = 0;
    if constexpr (Verify) {
      if (record) {
        rec = &m.ring(it.ring_row, kh, it.pending, 0);
        rec_stride = static_cast<long>(m.ring.extent(3));
      }
    }
    const RingLayout lay{Dk, Dk, m.group};
    const long ocol = long(h) * Dk + tcol + col0;  // this thread's first output column

    for (int c0 = 0; c0 < it.len; c0 += kStage) {
      const int n = it.len - c0 < kStage ? it.len - c0 : kStage;
      const int t = it.t0 + c0;
      team.team_barrier();  // the last stage's (or item's) readers are done with scratch
      stage(rank, s, t, n, h, kh, tcol);
      team.team_barrier();
      norms(s, n, lane, group, warp_group0);
      team.team_barrier();
      if (record) write_key_records(rank, s, rec + c0 * rec_stride, rec_stride, n, g, it.tile, lay);
      for (int cb = 0; cb < kCols; cb += kCB) {
        run_tokens(st, s, n, lane, col0, cb, [&](int j, int c, float u, float o) {
          const int e = cb + c;  // the thread's column
          if (record && (c % kLanes) == lane) {
            rec[(c0 + j) * rec_stride + lay.delta_offset(g) + tcol + col0 + e] = RingT(u);
          }
          if ((c + kCB) % kLanes == lane) m.out.write(t + j, ocol + e, o);
        });
      }
    }
    if (!record) {
      GDN_UNROLL
      for (int i = 0; i < kRows; ++i) store_frag<kCols>(frag + i * Dk, st[i]);
    }
  }

  /// The stage's tokens 0 .. n-1 over columns [cb, cb + kCB) of this
  /// thread's fragment; `emit(j, c, u, o)` gets token j's delta factor and
  /// output of column cb + c.
  template <class Emit>
  KOKKOS_FORCEINLINE_FUNCTION static void run_tokens(float (&st)[kRows][kCols], const float* s,
                                                     int n, int lane, int col0, int cb,
                                                     const Emit& emit) {
    const float* const k = s + kK + lane * kRows;  // this lane's rows of token 0
    const float* const q = s + kQ + lane * kRows;
    const float* const v = s + kV + col0 + cb;
    float u[kCB], o[kBPL][kCB], kv[kBPL][kCB], sum[kCB];
    // Token 0's decay and key sums.
    token_sweep<kBPL, kCols, kCB, false, true>(st, cb, k, q, u, s[kA], k, o, kv);
    block_combine<kLanes, kStride>(kv, sum);
    GDN_SIMD
    for (int c = 0; c < kCB; ++c) u[c] = delta_factor(v[c], sum[c], s[kBeta], s[kKinv]);
    for (int j = 0; j < n; ++j) {
      const float* const kj = k + j * Dk;
      const float* const qj = q + j * Dk;
      const bool next = j + 1 < n;
      if (next) {
        token_sweep<kBPL, kCols, kCB, true, true>(st, cb, kj, qj, u, s[kA + j + 1], kj + Dk, o, kv);
      } else {
        token_sweep<kBPL, kCols, kCB, true, false>(st, cb, kj, qj, u, 0.0f, kj, o, kv);
      }
      block_combine<kLanes, kStride>(o, sum);
      const float qf = s[kQf + j];
      GDN_UNROLL
      for (int c = 0; c < kCB; ++c) emit(j, c, u[c], qf * sum[c]);
      if (next) {
        block_combine<kLanes, kStride>(kv, sum);
        const float* const vn = v + (j + 1) * kTokenTile;
        const float beta = s[kBeta + j + 1], kinv = s[kKinv + j + 1];
        GDN_SIMD
        for (int c = 0; c < kCB; ++c) u[c] = delta_factor(vn[c], sum[c], beta, kinv);
      }
    }
  }

  /// The stage's inputs into scratch as floats: k, q of key head kh, v of
  /// the tile, decay and beta (m.in, token_io.hpp); every copy of a thread in
  /// flight at once, completed by async_wait. The caller's barrier follows.
  KOKKOS_INLINE_FUNCTION void stage(int rank, float* s, int t, int n, int h, int kh,
                                    int tcol) const {
    const auto& x = m.in.m_qkv;
    const long qc = long(kh) * Dk;
    stage_rows<ActT>(rank, kThreads, s + kK, x, t, n, m.key_dim + qc, Dk, m.vec_qkv);
    stage_rows<ActT>(rank, kThreads, s + kQ, x, t, n, qc, Dk, m.vec_qkv);
    stage_rows<ActT>(rank, kThreads, s + kV, x, t, n, 2 * m.key_dim + long(h) * Dk + tcol,
                     kTokenTile, m.vec_qkv);
    for (int j = rank; j < n; j += kThreads) {
      s[kA + j] = m.in.decay(t + j, h);
      s[kBeta + j] = m.in.beta(t + j, h);
    }
    async_wait();
  }

  /// kinv and qf of the stage's tokens, a (token, key or query) per lane
  /// group; the groups of a warp take consecutive tasks, so every lane of a
  /// warp runs the lane sums together (a lane past the tasks sums token 0's
  /// key and discards it).
  KOKKOS_INLINE_FUNCTION void norms(float* s, int n, int lane, int group, int warp_group0) const {
    for (int w0 = warp_group0; w0 < 2 * n; w0 += kGroups) {
      const int e = w0 + (group - warp_group0);
      const bool valid = e < 2 * n;
      const int j = valid ? e / 2 : 0;
      const bool key = !valid || e % 2 == 0;
      const float* const x = s + (key ? kK : kQ) + j * Dk;
      const float ss = canonical_dot<kLanes, kStride, Dk>(x, x, lane);
      if (valid && lane == 0) {
        if (key) {
          s[kKinv + j] = key_inv_norm(ss);
        } else {
          s[kQf + j] = query_factor(ss, m.q_scale);
        }
      }
    }
  }

  /// The stage's keys (by the key head's first value head, tile 0) and this
  /// head's decays (tile 0) into records rec[0 .. n-1].
  KOKKOS_INLINE_FUNCTION void write_key_records(int rank, const float* s, RingT* rec,
                                                long rec_stride, int n, int g, int tile,
                                                const RingLayout& lay) const {
    if (tile != 0) return;
    if (g == 0) {
      for (int e = rank; e < n * Dk; e += kThreads) {
        const int j = e / Dk, i = e % Dk;
        rec[j * rec_stride + lay.key_offset() + i] = RingT(s[kK + e]);
      }
    }
    for (int j = rank; j < n; j += kThreads)
      rec[j * rec_stride + lay.decay_offset(g)] = RingT(s[kA + j]);
  }

  /// Lazy: folds the item's pending history records (positions 0 ..
  /// it.pending-1 of its ring row) into the fragment, kStage at a time: the
  /// team stages their keys, the tile's delta factors of head g and the
  /// decays (in k's, v's and a's regions), then every thread folds them in
  /// (fold_steps: fold_record, rounded where a step ended).
  KOKKOS_INLINE_FUNCTION void advance(const Member& team, float* s, float (&st)[kRows][kCols],
                                      const Item& it, int kh, int g, int lane, int col0,
                                      int tcol) const {
    const int rank = team.team_rank();
    const int row = static_cast<int>(it.ring_row);
    const RingLayout lay{Dk, Dk, m.group};
    const int uoff = lay.delta_offset(g) + tcol, aoff = lay.decay_offset(g);
    for (int p0 = 0; p0 < it.pending; p0 += kStage) {
      const int cnt = it.pending - p0 < kStage ? it.pending - p0 : kStage;
      team.team_barrier();  // the last records' (or item's) readers are done with scratch
      for (int e = rank; e < cnt * Dk; e += kThreads) {
        const int j = e / Dk, i = e % Dk;
        stage_ring_value(s + kK + e, &m.ring(row, kh, p0 + j, lay.key_offset() + i));
      }
      for (int e = rank; e < cnt * kTokenTile; e += kThreads) {
        const int j = e / kTokenTile, c = e % kTokenTile;
        stage_ring_value(s + kV + e, &m.ring(row, kh, p0 + j, uoff + c));
      }
      for (int j = rank; j < cnt; j += kThreads) {
        stage_ring_value(s + kA + j, &m.ring(row, kh, p0 + j, aoff));
      }
      async_wait();
      team.team_barrier();
      fold_steps<StateT>(st, m.ledger, row, p0, cnt, [&](int j, int cn) {
        fold_fragment<Shape::rows_outer>(st, cn, s + kK + j * Dk + lane * kRows, Dk,
                                         s + kV + j * kTokenTile + col0, kTokenTile, s + kA + j);
      });
    }
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_KERNELS_TOKEN_KERNEL_HPP
