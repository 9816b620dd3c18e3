#ifndef GDN_IMPL_FOLD_KERNEL_HPP
#define GDN_IMPL_FOLD_KERNEL_HPP

/// \file fold_kernel.hpp
/// \brief The state fold kernel: commit the accepted prefix of every layer's ring in one launch.
///
/// Preconditions (checked on the host, validate.hpp): Dk == Dv == `Dk`; the
/// state pool is dense and 16-byte aligned; `state_rows` and `ring_rows` are
/// [L, B], `num_accepted` is [B].
///
/// Thread mapping. Work items: one per (layer l, sequence b, value head h,
/// tile of `rows_per_team` state rows), row tile fastest. Teams: one per
/// item on the host and for a float state on CUDA; for a bf16 state on CUDA
/// persistent teams (as many as are resident) take items league_rank,
/// + league_size, ..., and while a team applies one item's records the
/// asynchronous copies of its next item's tile and first chunk of records
/// into scratch are in flight (`prefetch_state`; two record buffers used in
/// turn), and the table entries (num_accepted, ring and state rows) of the
/// item after that are being loaded. A thread copies and reads only its own
/// slots of the state buffer, so on CUDA it starts the next tile's copies as
/// soon as it has read its slots (a warp sync, not a team barrier; the
/// mapping's `lean_barriers`), and a chunk ends with a team barrier only
/// when its record buffer is refilled before the next chunk's barrier. An
/// item whose `n = num_accepted[b]` is 0 or above RING_LEN is skipped
/// before anything of it is read. Team: `team_threads` threads; a work item
/// covers `cols_per_item` consecutive columns of one row (item_offset). On
/// CUDA a thread's items are consecutive rows of one column group and
/// neighbouring threads take neighbouring column groups (a row is read by 16
/// or 32 threads at once: coalesced), so that a thread fetches its rows' keys
/// with 16-byte loads; on the host items are dealt round-robin. Each thread
/// keeps its items in registers for the whole fold: the state is read once
/// and written once. Records are staged in scratch in chunks of
/// `chunk_records` (the tile's slice of k, this head's u, the decay; all of
/// a thread's copies in flight at once, `stage_async`; k and u with 16-byte
/// copies when the float ring allows), then each item applies them in order
/// with the same two operations the forward uses (token_step.hpp:
/// decay_state, delta_update). On CUDA the record loop
/// is the outer one (a thread's items share their columns, so u is fetched
/// once per record); on the host the item loop is, over blocks of
/// `apply_block` items that take each record together.

#include <gdn/bf16.hpp>
#include <gdn/impl/fast_div.hpp>
#include <gdn/impl/mapping.hpp>
#include <gdn/impl/token_step.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace gdn {
namespace Impl {

template <class ExecSpace, class StateT, class RingT, int Dk>
struct FoldKernel {
  using Map = FoldMapping<ExecSpace, StateT>;
  using MemSpace = typename ExecSpace::memory_space;
  /// Teams per SM (launch bound) and persistent teams (launch_teams; 0: one team per item).
  static constexpr int kMinTeams = Map::min_teams_per_sm(Dk);
  static constexpr int kPersistentTeams = Map::persistent_teams_per_sm(Dk);
  using Policy =
      Kokkos::TeamPolicy<ExecSpace, typename Map::schedule,
                         Kokkos::LaunchBounds<Map::team_threads, kMinTeams>, TeamKernelLaunch>;
  using Member = typename Policy::member_type;
  using ScratchView =
      Kokkos::View<float*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  static constexpr int kVec = Map::cols_per_item;
  static constexpr int kTileRows = Map::rows_per_team;
  static constexpr int kItemsPerRow = Dk / kVec;
  static constexpr int kItems = kTileRows * kItemsPerRow / Map::team_threads;  // per thread
  static constexpr int kChunk = Map::chunk_records;
  static_assert(Dk % kVec == 0 && Dk % kTileRows == 0, "fold mapping must tile the state");
  static_assert((kChunk * kTileRows) % 4 == 0 && Dk % 4 == 0,
                "staged records must stay 16-byte aligned");
  static_assert((kTileRows * kItemsPerRow) % Map::team_threads == 0,
                "fold items must divide evenly");
  /// Records in the outer loop (each element still sees them in order): when
  /// the items of a thread share their columns (GPU teams); the host keeps
  /// one item in registers across all records.
  static constexpr bool kRecordsOuter = Map::records_outer && Map::team_threads % kItemsPerRow == 0;
  /// Items (of one thread) that apply the records together when the item loop is outer.
  static constexpr int kApplyBlock = kItems % Map::apply_block == 0 ? Map::apply_block : 1;

  Kokkos::View<const std::uint32_t**, MemSpace> m_state_rows;       // [L, B]
  Kokkos::View<StateT****, Kokkos::LayoutRight, MemSpace> m_state;  // [slots, nv, Dk, Dv]
  Kokkos::View<const std::uint32_t**, MemSpace> m_ring_rows;        // [L, B]
  // [ring_rows, nk, RING_LEN, record_stride]
  Kokkos::View<const RingT****, Kokkos::LayoutRight, MemSpace> m_ring;
  Kokkos::View<const std::uint32_t*, MemSpace> m_num_accepted;  // [B]
  int m_batch = 0;
  int m_nv = 0;
  int m_group = 1;
  FastDiv m_heads_div;  // division by nv * tiles_per_head() (item -> layer * B + b)
  FastDiv m_batch_div;  // division by m_batch
  FastDiv m_group_div;  // division by m_group
  int m_ring_len = 0;
  /// float ring, 16-byte aligned, record_stride a multiple of 4: records are
  /// staged with 16-byte copies (else one copy per value).
  bool m_vec_records = false;

  int m_items = 0;  // L * B * nv * tiles_per_head()

  /// Floats of the state prefetch buffer: one tile of the state, when the mapping prefetches.
  static constexpr int kStateBufFloats =
      Map::prefetch_state ? kTileRows * Dk * static_cast<int>(sizeof(StateT)) / 4 : 0;
  static_assert(!Map::prefetch_state || kVec * sizeof(StateT) == 16,
                "the state prefetch copies 16-byte items");
  /// Floats of one record buffer: a chunk's keys (the tile's rows), u, decays.
  static constexpr int kRecBufFloats = kChunk * (kTileRows + Dk) + ((kChunk + 3) / 4) * 4;
  /// Teams loop over items (league_rank, + league_size, ...); else one team per item.
  static constexpr bool kPersistent = kPersistentTeams > 0;
  static_assert(kPersistent || !Map::prefetch_state, "the state prefetch needs persistent teams");
  /// Record buffers: with the state prefetch, the next item's first chunk of
  /// records is staged into the second while this one computes.
  static constexpr int kRecBufs = Map::prefetch_state ? 2 : 1;

  // +4: room to align the scratch arrays to 16 bytes.
  KOKKOS_INLINE_FUNCTION static constexpr int scratch_floats() {
    return kStateBufFloats + kRecBufs * kRecBufFloats + 4;
  }
  KOKKOS_INLINE_FUNCTION static constexpr int tiles_per_head() { return Dk / kTileRows; }
  /// Records of the chunk that starts at record p0 of n.
  KOKKOS_INLINE_FUNCTION static constexpr int chunk_len(int n, int p0) {
    return (n - p0 < kChunk) ? (n - p0) : kChunk;
  }

  /// A work item (layer, sequence b, value head h, row tile), decoded, with
  /// the table entries its fold reads: n = num_accepted[b] records of ring
  /// row `ring_row` into state pool row `state_row`; key head kh, group
  /// position g. `index` -1: no item.
  struct Item {
    int index = -1;
    int n = 0;
    std::uint32_t ring_row = 0, state_row = 0;
    int tile = 0, h = 0, kh = 0, g = 0;
    KOKKOS_INLINE_FUNCTION Item() {}
    KOKKOS_INLINE_FUNCTION Item(const FoldKernel& k, int item) : index(item) {
      // Unsigned: the indices are non-negative; the run-time divisors through
      // FastDiv, the tile count is a compile-time constant.
      const unsigned lb = k.m_heads_div.div(unsigned(item));
      const unsigned rest = unsigned(item) - lb * unsigned(tiles_per_head()) * unsigned(k.m_nv);
      const unsigned layer = k.m_batch_div.div(lb);
      const unsigned b = lb - layer * unsigned(k.m_batch);
      n = static_cast<int>(k.m_num_accepted(b));
      ring_row = k.m_ring_rows(layer, b);
      state_row = k.m_state_rows(layer, b);
      tile = static_cast<int>(rest % unsigned(tiles_per_head()));
      h = static_cast<int>(rest / unsigned(tiles_per_head()));
      kh = static_cast<int>(k.m_group_div.div(unsigned(h)));
      g = h - kh * k.m_group;
    }
    /// Has records to apply: 0 < n <= RING_LEN (an item with index >= 0).
    KOKKOS_INLINE_FUNCTION bool active(const FoldKernel& k) const {
      return n != 0 && n <= k.m_ring_len;
    }
  };

  /// Item `item`, or none (index -1) past the last item.
  KOKKOS_INLINE_FUNCTION Item item_at(int item) const {
    return item < m_items ? Item(*this, item) : Item();
  }

  /// A record buffer in team scratch (16-byte aligned arrays).
  struct RecBuf {
    float* k;  // [chunk, rows_per_team]: the tile's slice of each record's key
    float* u;  // [chunk, Dv]
    float* d;  // [chunk]
    KOKKOS_INLINE_FUNCTION explicit RecBuf(float* p)
        : k(p), u(p + kChunk * kTileRows), d(u + kChunk * Dk) {}
  };

  /// The first item at or after `item` (stepping by `stride`) that has records to apply; none if
  /// none.
  KOKKOS_INLINE_FUNCTION Item next_active(int item, int stride) const {
    for (; item < m_items; item += stride) {
      const Item it(*this, item);
      if (it.active(*this)) return it;
    }
    return Item();
  }

  /// The state of item `it`'s head (its tile's rows start at tile * rows_per_team).
  KOKKOS_INLINE_FUNCTION StateT* state_head(const Item& it) const {
    return m_state.data() + (static_cast<std::size_t>(it.state_row) * m_nv + it.h) * Dk * Dk;
  }

  /// Start this thread's asynchronous copies of its items of `it`'s tile into the state buffer.
  KOKKOS_INLINE_FUNCTION void prefetch_tile(const Item& it, StateT* sbuf, int tid) const {
    const StateT* const head = state_head(it);
    GDN_UNROLL
    for (int i = 0; i < kItems; ++i) {
      stage_async_bytes<16>(sbuf + (i * Map::team_threads + tid) * kVec,
                            head + item_offset(tid, i, it.tile * kTileRows));
    }
  }

  /// Start this thread's share of the copies of `it`'s records p0 .. p0 + np
  /// - 1 (the tile's keys, this head's u, its decay) into `rb`, all in
  /// flight at once (stage_async). Unsigned indices: divisions by the
  /// (power-of-two) widths are shifts.
  KOKKOS_INLINE_FUNCTION void stage_records(const Item& it, int p0, int np, const RecBuf& rb,
                                            int tid) const {
    const int row0 = it.tile * kTileRows;
    const long rec_stride = static_cast<long>(m_ring.stride(2));
    const RingT* const rec =
        &m_ring(it.ring_row, it.kh, p0, 0);  // record p at rec + p * rec_stride
    const RingT* const u0 = rec + Dk + it.g * Dk;
    if constexpr (std::is_same<RingT, float>::value) {
      if (m_vec_records) {
        constexpr unsigned kKW = kTileRows / 4;  // 16-byte words of the tile's keys
        constexpr unsigned kUW = Dk / 4;         // 16-byte words of u
        GDN_NO_UNROLL
        for (unsigned e = tid; e < unsigned(np) * kKW; e += Map::team_threads) {
          stage_async_bytes<16>(rb.k + 4 * e, rec + (e / kKW) * rec_stride + row0 + 4 * (e % kKW));
        }
        GDN_NO_UNROLL
        for (unsigned e = tid; e < unsigned(np) * kUW; e += Map::team_threads) {
          stage_async_bytes<16>(rb.u + 4 * e, u0 + (e / kUW) * rec_stride + 4 * (e % kUW));
        }
        stage_decays(it, np, rec, rec_stride, rb, tid);
        return;
      }
    }
    GDN_NO_UNROLL
    for (unsigned e = tid; e < unsigned(np * kTileRows); e += Map::team_threads) {
      stage_async(rb.k + e, rec + (e / kTileRows) * rec_stride + row0 + e % kTileRows);
    }
    GDN_NO_UNROLL
    for (unsigned e = tid; e < unsigned(np * Dk); e += Map::team_threads) {
      stage_async(rb.u + e, u0 + (e / Dk) * rec_stride + e % Dk);
    }
    stage_decays(it, np, rec, rec_stride, rb, tid);
  }

  /// stage_records' decays (one value per record).
  KOKKOS_INLINE_FUNCTION void stage_decays(const Item& it, int np, const RingT* rec,
                                           long rec_stride, const RecBuf& rb, int tid) const {
    GDN_NO_UNROLL
    for (int p = tid; p < np; p += Map::team_threads) {
      stage_async(rb.d + p, rec + p * rec_stride + Dk + m_group * Dk + it.g);
    }
  }

  /// Teams take items league_rank, + league_size, ... (one item per team
  /// unless the mapping asks for persistent teams). With `prefetch_state`
  /// the next item's tile and its first chunk of records are in flight into
  /// scratch while this one computes (two record buffers, used in turn).
  /// The table entries of the item after the next one are loaded while this
  /// one computes, and only then looked at (their latency hidden).
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int stride = team.league_size();
    Item it = next_active(team.league_rank(), stride);
    if (it.index < 0) return;  // rows with nothing to apply are not ours to touch
    ScratchView scratch(team.team_scratch(0), scratch_floats());
    float* const base = align16(scratch.data());
    StateT* const sbuf =
        reinterpret_cast<StateT*>(base);  // [kItems][team_threads] items (prefetch_state)
    RecBuf cur(base + kStateBufFloats);
    RecBuf other(base + kStateBufFloats + (kRecBufs - 1) * kRecBufFloats);
    const int tid = team.team_rank();
    if constexpr (Map::prefetch_state) {
      prefetch_tile(it, sbuf, tid);
      stage_records(it, 0, chunk_len(it.n, 0), cur, tid);
    }
    if constexpr (!kPersistent) {  // one team per item: nothing to look ahead to
      Item unused;
      fold_item(team, it, Item(), unused, stride, sbuf, cur, other, tid);
      return;
    }
    Item next = next_active(it.index + stride, stride);
    while (true) {
      Item after;  // the candidate after `next` (fold_item loads it)
      fold_item(team, it, next, after, stride, sbuf, cur, other, tid);
      if (next.index < 0) break;
      it = next;
      next = (after.index < 0 || after.active(*this)) ? after
                                                      : next_active(after.index + stride, stride);
      if constexpr (kRecBufs == 2) {
        const RecBuf t = cur;
        cur = other;
        other = t;
      }
    }
  }

  /// Apply `item`'s accepted records to its tile (read once, written once)
  /// from record buffer `cur`, and set `after` to item next + stride (none
  /// if past the end or `next` is none). With `prefetch_state` the item's
  /// tile and first chunk of records were started before (by the team's
  /// previous item or operator()), and this one starts those of `next` (if
  /// any) into the state buffer and `other`.
  KOKKOS_INLINE_FUNCTION void fold_item(const Member& team, const Item& item, const Item& next,
                                        Item& after, int stride, StateT* sbuf, const RecBuf& cur,
                                        const RecBuf& other, int tid) const {
    const int n = item.n;
    const int row0 = item.tile * kTileRows;
    StateT* const head = state_head(item);
    float s[kItems][kVec];
    if constexpr (!Map::prefetch_state) {
      GDN_UNROLL
      for (int it = 0; it < kItems; ++it) load_vec(head + item_offset(tid, it, row0), s[it]);
    }
    for (int p0 = 0; p0 < n; p0 += kChunk) {
      const int np = chunk_len(n, p0);
      if (!Map::prefetch_state || p0 > 0) stage_records(item, p0, np, cur, tid);
      stage_wait();  // this thread's copies (records, and the prefetched tile) have landed
      if constexpr (Map::prefetch_state) {
        if (p0 == 0) {
          GDN_UNROLL
          for (int it = 0; it < kItems; ++it)
            load_vec(sbuf + (it * Map::team_threads + tid) * kVec, s[it]);
          // The state buffer's slots are this thread's own (prefetch_tile):
          // once its reads are ordered before the next tile's copies (a warp
          // sync, not a team barrier), those copies start without waiting
          // for the other warps (more of the state in flight).
          if (Map::lean_barriers && next.index >= 0) {
            vector_sync();
            prefetch_tile(next, sbuf, tid);
          }
        }
      }
      team.team_barrier();
      if constexpr (Map::prefetch_state) {
        // `other` was last read before this item's barrier above (its
        // previous use: the item before, whose reads precede that barrier).
        if (p0 == 0 && next.index >= 0) {
          if (!Map::lean_barriers) prefetch_tile(next, sbuf, tid);
          stage_records(next, 0, chunk_len(next.n, 0), other, tid);
        }
      }
      // Loaded here, looked at after the records are applied.
      if (p0 == 0 && next.index >= 0) after = item_at(next.index + stride);
      if constexpr (kRecordsOuter) {
        // A thread's items share their columns and are consecutive rows:
        // one fetch of u, of the items' keys and of the decay per record,
        // then every item (row) applies it.
        const int j = (tid % kItemsPerRow) * kVec;
        const int i0 = (tid / kItemsPerRow) * kItems;  // the thread's first row in the tile
        for (int p = 0; p < np; ++p) {
          const float dec = cur.d[p];
          float u[kVec];
          load_scratch<kVec>(cur.u + p * Dk + j, u);
          float kval[kItems];
          load_scratch<kItems>(cur.k + p * kTileRows + i0, kval);
          GDN_UNROLL
          for (int it = 0; it < kItems; ++it) {
            GDN_UNROLL
            for (int c = 0; c < kVec; ++c)
              s[it][c] = delta_update(kval[it], u[c], decay_state(s[it][c], dec));
          }
        }
      } else {
        // Blocks of kApplyBlock items take each record in turn: that many
        // independent update chains (one item alone is a chain of dependent
        // multiply and FMA latencies). Each item still applies the records
        // in order.
        for (int i0 = 0; i0 < kItems; i0 += kApplyBlock) {
          for (int p = 0; p < np; ++p) {
            const float dec = cur.d[p];
            GDN_UNROLL
            for (int b = 0; b < kApplyBlock; ++b) {
              const int it = i0 + b;
              const int i = item_offset(tid, it, 0) / Dk;  // row in the tile
              const int j = item_offset(tid, it, 0) % Dk;
              const float kval = cur.k[p * kTileRows + i];
              float u[kVec];
              load_scratch<kVec>(cur.u + p * Dk + j, u);
              GDN_UNROLL GDN_SIMD for (int c = 0; c < kVec; ++c) s[it][c] =
                  delta_update(kval, u[c], decay_state(s[it][c], dec));
            }
          }
        }
      }
      // The next chunk of this item is staged into `cur`, and without the
      // state prefetch a persistent team's next item too: only after everyone
      // has read it. Otherwise the next write to `cur` (the item after next's
      // records) comes after the next item's first barrier.
      if (!Map::lean_barriers || p0 + kChunk < n || (kPersistent && !Map::prefetch_state))
        team.team_barrier();
    }
    GDN_UNROLL
    for (int it = 0; it < kItems; ++it) store_vec(head + item_offset(tid, it, row0), s[it]);
  }

  /// Offset in the head's state (row * Dk + column) of item `it` of thread
  /// `tid` in the tile at row `row0`. Records outer (CUDA): the thread's items
  /// are kItems consecutive rows of one column group, and the kItemsPerRow
  /// (16 bf16, 32 float) neighbouring threads cover a row (coalesced).
  /// Otherwise items are dealt round-robin, item e = tid + it * team_threads
  /// at row e / kItemsPerRow, column group e % kItemsPerRow.
  KOKKOS_INLINE_FUNCTION static int item_offset(int tid, int it, int row0) {
    if constexpr (kRecordsOuter) {
      return (row0 + (tid / kItemsPerRow) * kItems + it) * Dk + (tid % kItemsPerRow) * kVec;
    } else {
      const int e = tid + it * Map::team_threads;
      return (row0 + e / kItemsPerRow) * Dk + (e % kItemsPerRow) * kVec;
    }
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_FOLD_KERNEL_HPP
