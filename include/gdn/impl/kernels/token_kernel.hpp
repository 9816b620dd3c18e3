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
/// canonical block of rows [16 l, 16 l + 16) of its group's 4 columns,
/// persistent teams; host: one thread holds the tile, swept 16 columns at a
/// time.
///
/// Pipeline. A team's work is a sequence of stages (up to Shape::stage = 16
/// tokens of an item). Two staging buffers in team scratch take turns:
/// while a stage computes on one, the next stage's k, q, the tile's v, decay
/// and beta are in flight into the other (asynchronous copies), and when
/// that stage is the next item's first, the next item's state tile is hinted
/// into L2. A stage: wait for its copies, barrier, (first stage) the
/// fragment from the pool and, lazy, the pending records folded in, (last
/// stage) the team's next item found and its index entries read, lane
/// groups compute the squared norms, barrier, issue the next copies, then
/// every thread runs the stage's tokens over its columns: for each token one
/// sweep applies its update and takes its readout sums and the next token's
/// decay and key sums (token_sweep); the lanes of a group reduce-scatter the
/// sums in the canonical tree (scatter_combine), so each lane ends with the
/// sums of its own columns, computes their delta factors, and the group
/// gathers the delta factors of all its columns (gather_columns). The lane
/// holding a column writes its output and record.

#include <gdn/config.hpp>
#include <gdn/impl/backend/backend.hpp>
#include <gdn/impl/core/fast_div.hpp>
#include <gdn/impl/core/token_step.hpp>
#include <gdn/impl/kernels/lazy_kernel.hpp>
#include <gdn/impl/launch/params.hpp>
#include <gdn/ring.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace gdn {
namespace Impl {

/// `n` rows of `W` channels of an activation tensor into `dst` ([n][W]
/// floats of team scratch), by `threads` threads: row j starts at `src + j *
/// pitch`, its channels `cs` apart. Contiguous, 16-byte aligned rows (`vec`,
/// cs == 1): float words by async copies (completed by async_wait), bf16
/// words loaded 8 values at a time and widened; otherwise a value at a time.
template <class ActT, int W>
KOKKOS_INLINE_FUNCTION void stage_rows(int rank, int threads, float* dst, const ActT* src,
                                       long pitch, long cs, int n, bool vec) {
  if (vec) {
    constexpr int kE = 16 / int(sizeof(ActT));  // values per 16-byte word
    constexpr int kWords = W / kE;
    static_assert(W % kE == 0, "whole 16-byte words per row");
    for (int e = rank; e < n * kWords; e += threads) {
      const int j = e / kWords, w = kE * (e % kWords);
      const ActT* const p = src + j * pitch + w;
      if constexpr (std::is_same<ActT, float>::value) {
        async_copy<16>(dst + kE * e, p);
      } else {
        float v[kE];
        load_frag<kE>(p, v);
        store_frag<kE>(dst + kE * e, v);
      }
    }
  } else {
    for (int e = rank; e < n * W; e += threads) {
      const int j = e / W, i = e % W;
      dst[e] = to_float(src[j * pitch + i * cs]);
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
  static constexpr int kRows = Dk / kLanes;                     // fragment rows per thread
  static constexpr int kBPL = kRows / kBlockRows;               // canonical blocks per lane
  static constexpr int kTiles = Dk / kTokenTile;                // tiles per head
  static constexpr int kStage = Shape::stage;                   // tokens staged per barrier
  static constexpr int kOwn = own_cols<kLanes, kCB>();          // columns a lane holds after a sum
  static constexpr int kDup = kLanes > kCB ? kLanes / kCB : 1;  // lanes sharing them
  static_assert(kGroups * kLanes == kThreads && kCols % kCB == 0, "threads cover the tile once");
  static_assert(kBPL * kBlockRows * kLanes == Dk, "whole canonical blocks per lane");
  static_assert(Dk % kTokenTile == 0, "head dim: a multiple of the tile");

  /// A staging buffer in team scratch, floats: k, q [kStage][Dk], v
  /// [kStage][kTokenTile], then per token a, beta, kinv, qf [kStage] each.
  static constexpr int kK = 0;
  static constexpr int kQ = kK + kStage * Dk;
  static constexpr int kV = kQ + kStage * Dk;
  static constexpr int kA = kV + kStage * kTokenTile;
  static constexpr int kBeta = kA + kStage;
  static constexpr int kKinv = kBeta + kStage;
  static constexpr int kQf = kKinv + kStage;
  static constexpr int kBufFloats = kQf + kStage;
  /// Team scratch: two staging buffers (one computed on while the other
  /// fills), then the next item's fields (kItemWords words, handed from the
  /// stage that finds it to the team's next turn of its loop).
  static constexpr int kItemWords = 8;
  static constexpr int kNext = 2 * kBufFloats;
  static constexpr int kScratchFloats = kNext + kItemWords;
  static_assert(kBufFloats % 4 == 0, "16-byte aligned buffers");
  using Policy = Kokkos::TeamPolicy<ExecSpace, Kokkos::LaunchBounds<kThreads, Shape::min_teams>,
                                    TeamKernelLaunch>;
  using Member = typename Policy::member_type;
  using ScratchView =
      Kokkos::View<float*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  RecurrenceParams<ActT, StateT, RingT, M> m;
  int m_items = 0;      // B * nv * kTiles
  FastDiv m_nv_div;     // division by nv (item decoding)
  FastDiv m_group_div;  // division by G (a value head's key head)

  /// Team scratch in bytes (16 bytes of slack for alignment).
  static constexpr int scratch_bytes() { return int(sizeof(float)) * (kScratchFloats + 4); }
  /// Work items (teams) of a batch of B sequences.
  static long long items(long long batch, int nv) { return batch * nv * kTiles; }
  static long long league(const ExecSpace& space, long long items) {
    return Shape::league(space, items);
  }

  /// A work item and the index entries it reads, loaded together; index -1:
  /// none. Lazy: `pending` history records to fold first, which is also the
  /// window's first record position.
  struct Item {
    int index = -1, h = 0, tile = 0, t0 = 0, len = 0;
    std::uint32_t slot = 0, ring_row = 0;
    int pending = 0;
    /// To and from kItemWords words of team scratch.
    KOKKOS_INLINE_FUNCTION void save(float* p) const {
      const int w[kItemWords] = {index, h, tile, t0, len, int(slot), int(ring_row), pending};
      for (int i = 0; i < kItemWords; ++i) p[i] = bits_to_float(unsigned(w[i]));
    }
    KOKKOS_INLINE_FUNCTION static Item load(const float* p) {
      int w[kItemWords];
      for (int i = 0; i < kItemWords; ++i) w[i] = int(float_to_bits(p[i]));
      Item it;
      it.index = w[0];
      it.h = w[1];
      it.tile = w[2];
      it.t0 = w[3];
      it.len = w[4];
      it.slot = std::uint32_t(w[5]);
      it.ring_row = std::uint32_t(w[6]);
      it.pending = w[7];
      return it;
    }
  };

  /// The item at `item`; len 0: nothing to do (an empty or a padding row, or
  /// an index out of range, which `bad` reports once per row).
  KOKKOS_INLINE_FUNCTION Item item_at(int item, bool& bad) const {
    Item it;
    it.index = item;
    it.tile = item % kTiles;
    const int bh = item / kTiles;
    const int b = static_cast<int>(m_nv_div.div(unsigned(bh)));
    it.h = bh - b * m.nv;
    const std::uint32_t o0 = m.in.row_offsets(b), o1 = m.in.row_offsets(b + 1);
    it.slot = m.slots(b);
    if constexpr (Verify) it.ring_row = m.ring_slots(b);
    it.t0 = static_cast<int>(o0);
    it.len = static_cast<int>(o1 - o0);
    bad = false;
    // Padding rows (gdn::pad_slot) and indices outside their pools are no
    // work: none of their rows is read or written.
    const bool pad = it.slot == pad_slot || (Verify && it.ring_row == pad_slot);
    const bool ring_ok = !Verify || it.ring_row < m.ring.extent(0);
    if (pad) {
      it.len = 0;
    } else if (it.slot >= m.state.extent(0) || !ring_ok || o1 < o0 || o1 > m.in.m_qkv.extent(0)) {
      it.len = 0;
      bad = it.h == 0 && it.tile == 0;
    }
    if constexpr (Lazy) {
      if (it.len > 0) it.pending = pending_records(m.ledger(it.ring_row, 0), m.ring_len);
    }
    return it;
  }

  /// The first item with work among `item`, + league size, ... (index -1:
  /// none), counting the skipped rows with an index out of range.
  KOKKOS_INLINE_FUNCTION Item find(const Member& team, int item) const {
    for (; item < m_items; item += team.league_size()) {
      bool bad = false;
      const Item it = item_at(item, bad);
      if (bad && team.team_rank() == 0) count_skipped_row(m.skipped);
      if (it.len > 0) return it;
    }
    return Item();
  }

  /// Items league_rank, + league_size, ...: each item's stages in turn,
  /// the next stage's inputs (and, before an item's last stage computes, the
  /// next item's state tile) in flight while the current one computes.
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    if (team.league_rank() >= m_items) return;
    // Team scratch is taken once per team: every take advances Kokkos' scratch pointer.
    float* const s = align16(ScratchView(team.team_scratch(0), kScratchFloats + 4).data());
    Item cur = find(team, team.league_rank());
    if (cur.index < 0) return;
    issue_inputs(team.team_rank(), s, cur.t0, cur.len < kStage ? cur.len : kStage, cur.h, cur.tile);
    prefetch_state(team.team_rank(), cur);
    int buf = 0;
    while (cur.index >= 0) {
      run_item(team, s, buf, cur);
      cur = Item::load(s + kNext);  // saved by run_item's last stage, before its second barrier
    }
  }

  /// The item's stages; the last one finds the team's next item, issues its
  /// first stage's copies and saves it to scratch (kNext).
  KOKKOS_INLINE_FUNCTION void run_item(const Member& team, float* s, int& buf,
                                       const Item& it) const {
    const int rank = team.team_rank();
    int lane = 0, group = 0, gl0 = 0;
    Shape::place(rank, lane, group, gl0);
    const int h = it.h, kh = static_cast<int>(m_group_div.div(unsigned(h))), g = h - kh * m.group;
    const int tcol = it.tile * kTokenTile;       // the tile's first column in the head
    const int col0 = group * kCols;              // this thread's first tile column
    const int oc = own_col0<kLanes, kCB>(lane);  // its first column of each sum
    const bool record = Verify && it.len <= m.ring_len;
    // The stores of a lane (columns col0 + cb + oc + i): outputs by the first
    // of the kDup lanes holding a column, records by the last.
    const bool writes_out = lane % kDup == 0, writes_rec = lane % kDup == kDup - 1;
    const long os0 = static_cast<long>(m.out.m_out.stride(0));
    const long os1 = static_cast<long>(m.out.m_out.stride(1));
    ActT* const orow =
        m.out.m_out.data() + long(it.t0) * os0 + (long(h) * Dk + tcol + col0 + oc) * os1;
    RingT* rec = nullptr;  // record position `pending` (the window's first) of the row
    int rec_stride = 0;
    const RingLayout lay{Dk, Dk, m.group};
    if constexpr (Verify) {
      if (record) {
        rec = &m.ring(it.ring_row, kh, it.pending, 0);
        rec_stride = static_cast<int>(m.ring.extent(3));
      }
    }
    RingT* const urow = record ? rec + lay.delta_offset(g) + tcol + col0 + oc : nullptr;

    float st[kRows][kCols];
    for (int c0 = 0; c0 < it.len; c0 += kStage) {
      const int n = it.len - c0 < kStage ? it.len - c0 : kStage;
      const bool last = c0 + kStage >= it.len;
      float* const in = s + buf * kBufFloats;
      float* const other = s + (1 - buf) * kBufFloats;
      async_wait();
      team.team_barrier();  // this stage's inputs (and the item's state) have landed
      if (c0 == 0) {
        load_state(it, lane, col0, st);
        if constexpr (Lazy) {
          if (it.pending > 0) advance(team, other, st, it, kh, g, lane, col0, tcol);
        }
      }
      Item nxt;
      if (last) {
        // Its index entries load while the norms compute.
        nxt = find(team, it.index + team.league_size());
        if (rank == 0) nxt.save(s + kNext);
      }
      norms(in, n, lane, group, group - gl0);
      team.team_barrier();  // the norms are in; the state buffer and `other` are free
      if (!last || nxt.index >= 0) {
        // The next stage: this item's next tokens, or the next item's first.
        const int nt = last ? nxt.t0 : it.t0 + c0 + kStage;
        const int rest = last ? nxt.len : it.len - c0 - kStage;
        issue_inputs(rank, other, nt, rest < kStage ? rest : kStage, last ? nxt.h : h,
                     last ? nxt.tile : it.tile);
        if (last) prefetch_state(rank, nxt);
      }
      if (record)
        write_key_records(rank, in, rec + c0 * rec_stride, rec_stride, n, g, it.tile, lay);
      for (int cb = 0; cb < kCols; cb += kCB) {
        run_tokens(st, in, n, lane, gl0, col0, cb,
                   [&](int j, const float(&u)[kOwn], const float(&o)[kOwn]) {
                     if (writes_out) {
                       ActT* const op = orow + long(c0 + j) * os0 + long(cb) * os1;
                       GDN_UNROLL
                       for (int i = 0; i < kOwn; ++i) op[i * os1] = from_float<ActT>(o[i]);
                     }
                     if (record && writes_rec) {
                       RingT* const up = urow + (c0 + j) * rec_stride + cb;
                       GDN_UNROLL
                       for (int i = 0; i < kOwn; ++i) up[i] = RingT(u[i]);
                     }
                   });
      }
      buf = 1 - buf;
    }
    if (!record) {
      StateT* const frag = &m.state(it.slot, h, lane * kRows, tcol + col0);
      GDN_UNROLL
      for (int i = 0; i < kRows; ++i) store_frag<kCols>(frag + i * Dk, st[i]);
    }
  }

  /// This thread's fragment of the item's state tile.
  KOKKOS_INLINE_FUNCTION void load_state(const Item& it, int lane, int col0,
                                         float (&st)[kRows][kCols]) const {
    const StateT* const frag = &m.state(it.slot, it.h, lane * kRows, it.tile * kTokenTile + col0);
    GDN_UNROLL
    for (int i = 0; i < kRows; ++i) load_frag<kCols>(frag + i * Dk, st[i]);
  }

  /// A hint of the item's state tile into L2 (CUDA), shared by the team.
  KOKKOS_INLINE_FUNCTION void prefetch_state(int rank, const Item& it) const {
    prefetch_tile_l2(&m.state(it.slot, it.h, 0, it.tile * kTokenTile), Dk,
                     kTokenTile * int(sizeof(StateT)), long(Dk) * long(sizeof(StateT)), rank,
                     kThreads);
  }

  /// The stage's tokens 0 .. n-1 over columns [cb, cb + kCB) of this
  /// thread's fragment; `emit(j, u, o)` gets token j's delta factors and
  /// outputs of this lane's columns cb + own_col0 + i (i < kOwn).
  template <class Emit>
  KOKKOS_FORCEINLINE_FUNCTION static void run_tokens(float (&st)[kRows][kCols], const float* in,
                                                     int n, int lane, int gl0, int col0, int cb,
                                                     const Emit& emit) {
    const float* const k = in + kK + lane * kRows;  // this lane's rows of token 0
    const float* const q = in + kQ + lane * kRows;
    const float* const v = in + kV + col0 + cb + own_col0<kLanes, kCB>(lane);
    float u[kCB], uo[kOwn], sum[kOwn], o[kBPL][kCB], kv[kBPL][kCB];
    // Token 0's decay and key sums.
    token_sweep<kBPL, kCols, kCB, false, true>(st, cb, k, q, u, in[kA], k, o, kv);
    scatter_combine<kLanes, kStride>(kv, lane, sum);
    GDN_SIMD
    for (int i = 0; i < kOwn; ++i) uo[i] = delta_factor(v[i], sum[i], in[kBeta], in[kKinv]);
    gather_columns<kLanes, kStride, kCB>(uo, u, gl0);
    for (int j = 0; j < n; ++j) {
      const float* const kj = k + j * Dk;
      const float* const qj = q + j * Dk;
      const bool next = j + 1 < n;
      if (next) {
        token_sweep<kBPL, kCols, kCB, true, true>(st, cb, kj, qj, u, in[kA + j + 1], kj + Dk, o,
                                                  kv);
      } else {
        token_sweep<kBPL, kCols, kCB, true, false>(st, cb, kj, qj, u, 0.0f, kj, o, kv);
      }
      float ksum[kOwn];
      if (next) {
        scatter_combine<kLanes, kStride>(o, kv, lane, sum, ksum);
      } else {
        scatter_combine<kLanes, kStride>(o, lane, sum);
      }
      const float qf = in[kQf + j];
      GDN_SIMD
      for (int i = 0; i < kOwn; ++i) sum[i] = qf * sum[i];
      emit(j, uo, sum);
      if (next) {
        const float* const vn = v + (j + 1) * kTokenTile;
        const float beta = in[kBeta + j + 1], kinv = in[kKinv + j + 1];
        GDN_SIMD
        for (int i = 0; i < kOwn; ++i) uo[i] = delta_factor(vn[i], ksum[i], beta, kinv);
        gather_columns<kLanes, kStride, kCB>(uo, u, gl0);
      }
    }
  }

  /// Tokens t .. t+n-1 of value head h's inputs into staging buffer `in`
  /// as floats: k, q of its key head, v of column tile `tile`, decay and beta
  /// (m.in, token_io.hpp); copies in flight until the next async_wait, which
  /// the stage's barrier follows.
  KOKKOS_INLINE_FUNCTION void issue_inputs(int rank, float* in, int t, int n, int h,
                                           int tile) const {
    const int kh = static_cast<int>(m_group_div.div(unsigned(h)));
    const auto& x = m.in.m_qkv;
    const long pitch = static_cast<long>(x.stride(0)), cs = static_cast<long>(x.stride(1));
    const ActT* const row = x.data() + long(t) * pitch;
    const long qc = long(kh) * Dk;
    stage_rows<ActT, Dk>(rank, kThreads, in + kK, row + (m.key_dim + qc) * cs, pitch, cs, n,
                         m.vec_qkv);
    stage_rows<ActT, Dk>(rank, kThreads, in + kQ, row + qc * cs, pitch, cs, n, m.vec_qkv);
    stage_rows<ActT, kTokenTile>(rank, kThreads, in + kV,
                                 row + (2 * m.key_dim + long(h) * Dk + tile * kTokenTile) * cs,
                                 pitch, cs, n, m.vec_qkv);
    for (int j = rank; j < n; j += kThreads) {
      in[kA + j] = m.in.decay(t + j, h);
      in[kBeta + j] = m.in.beta(t + j, h);
    }
  }

  /// kinv and qf of the stage's tokens, a (token, key or query) per lane
  /// group; the groups of a warp take consecutive tasks, so every lane of a
  /// warp runs the lane sums together (a lane past the tasks sums token 0's
  /// key and discards it).
  KOKKOS_INLINE_FUNCTION void norms(float* in, int n, int lane, int group, int warp_group0) const {
    for (int w0 = warp_group0; w0 < 2 * n; w0 += kGroups) {
      const int e = w0 + (group - warp_group0);
      const bool valid = e < 2 * n;
      const int j = valid ? e / 2 : 0;
      const bool key = !valid || e % 2 == 0;
      const float* const x = in + (key ? kK : kQ) + j * Dk;
      const float ss = canonical_dot<kLanes, kStride, Dk>(x, x, lane);
      if (valid && lane == 0) {
        if (key) {
          in[kKinv + j] = key_inv_norm(ss);
        } else {
          in[kQf + j] = query_factor(ss, m.q_scale);
        }
      }
    }
  }

  /// The stage's keys (by the key head's first value head, tile 0) and this
  /// head's decays (tile 0) into records rec[0 .. n-1].
  KOKKOS_INLINE_FUNCTION void write_key_records(int rank, const float* in, RingT* rec,
                                                int rec_stride, int n, int g, int tile,
                                                const RingLayout& lay) const {
    if (tile != 0) return;
    if (g == 0) {
      for (int e = rank; e < n * Dk; e += kThreads) {
        const int j = e / Dk, i = e % Dk;
        rec[j * rec_stride + lay.key_offset() + i] = RingT(in[kK + e]);
      }
    }
    for (int j = rank; j < n; j += kThreads)
      rec[j * rec_stride + lay.decay_offset(g)] = RingT(in[kA + j]);
  }

  /// Lazy: folds the item's pending history records (positions 0 ..
  /// it.pending-1 of its ring row) into the fragment, kStage at a time: the
  /// team stages their keys, the tile's delta factors of head g and the
  /// decays into staging buffer `sb` (in k's, v's and a's regions), then
  /// every thread folds them in (fold_steps: fold_record, rounded where a
  /// step ended).
  KOKKOS_INLINE_FUNCTION void advance(const Member& team, float* sb, float (&st)[kRows][kCols],
                                      const Item& it, int kh, int g, int lane, int col0,
                                      int tcol) const {
    const int rank = team.team_rank();
    const int row = static_cast<int>(it.ring_row);
    const RingLayout lay{Dk, Dk, m.group};
    const int uoff = lay.delta_offset(g) + tcol, aoff = lay.decay_offset(g);
    for (int p0 = 0; p0 < it.pending; p0 += kStage) {
      const int cnt = it.pending - p0 < kStage ? it.pending - p0 : kStage;
      if (p0 > 0) team.team_barrier();  // the last records' readers are done with `sb`
      for (int e = rank; e < cnt * Dk; e += kThreads) {
        const int j = e / Dk, i = e % Dk;
        stage_ring_value(sb + kK + e, &m.ring(row, kh, p0 + j, lay.key_offset() + i));
      }
      for (int e = rank; e < cnt * kTokenTile; e += kThreads) {
        const int j = e / kTokenTile, c = e % kTokenTile;
        stage_ring_value(sb + kV + e, &m.ring(row, kh, p0 + j, uoff + c));
      }
      for (int j = rank; j < cnt; j += kThreads) {
        stage_ring_value(sb + kA + j, &m.ring(row, kh, p0 + j, aoff));
      }
      async_wait();
      team.team_barrier();
      fold_steps<StateT>(st, m.ledger, row, p0, cnt, [&](int j, int cn) {
        fold_fragment<Shape::rows_outer>(st, cn, sb + kK + j * Dk + lane * kRows, Dk,
                                         sb + kV + j * kTokenTile + col0, kTokenTile, sb + kA + j);
      });
    }
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_KERNELS_TOKEN_KERNEL_HPP
