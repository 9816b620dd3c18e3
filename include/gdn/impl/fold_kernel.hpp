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
/// asynchronous copy of its next item's tile into scratch is in flight
/// (`prefetch_state`). An item whose `n = num_accepted[b]` is 0 or above
/// RING_LEN is skipped before anything of it is read. Team: `team_threads`
/// threads; a work item covers `cols_per_item` consecutive columns of one
/// row (item_offset). On CUDA a thread's items are consecutive rows of one
/// column group and neighbouring threads take neighbouring column groups (a
/// row is read by 16 or 32 threads at once: coalesced), so that a thread
/// fetches its rows' keys with 16-byte loads; on the host items are dealt
/// round-robin. Each thread keeps its items in registers for the whole fold:
/// the state is read once and written once. Records are staged in scratch in
/// chunks of `chunk_records` (the tile's slice of k, this head's u, the
/// decay; all of a thread's copies in flight at once, `stage_async`), then
/// each item applies them in order with the same two operations the forward
/// uses (token_step.hpp: decay_state, delta_update). On CUDA the record loop
/// is the outer one (a thread's items share their columns, so u is fetched
/// once per record); on the host the item loop is.

#include <gdn/bf16.hpp>
#include <gdn/impl/mapping.hpp>
#include <gdn/impl/token_step.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace gdn {
namespace Impl {

template <class ExecSpace, class StateT, class RingT, int Dk>
struct FoldKernel {
  using Map = FoldMapping<ExecSpace, StateT>;
  using MemSpace = typename ExecSpace::memory_space;
  using Policy = Kokkos::TeamPolicy<ExecSpace, typename Map::schedule,
                                    Kokkos::LaunchBounds<Map::team_threads, Map::min_teams_per_sm>>;
  using Member = typename Policy::member_type;
  using ScratchView =
      Kokkos::View<float*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  static constexpr int kVec = Map::cols_per_item;
  static constexpr int kTileRows = Map::rows_per_team;
  static constexpr int kItemsPerRow = Dk / kVec;
  static constexpr int kItems = kTileRows * kItemsPerRow / Map::team_threads;  // per thread
  static constexpr int kChunk = Map::chunk_records;
  static_assert(Dk % kVec == 0 && Dk % kTileRows == 0, "fold mapping must tile the state");
  static_assert((kChunk * kTileRows) % 4 == 0 && Dk % 4 == 0, "staged records must stay 16-byte aligned");
  static_assert((kTileRows * kItemsPerRow) % Map::team_threads == 0, "fold items must divide evenly");
  /// Records in the outer loop (each element still sees them in order): when
  /// the items of a thread share their columns (GPU teams); the host keeps
  /// one item in registers across all records.
  static constexpr bool kRecordsOuter = Map::records_outer && Map::team_threads % kItemsPerRow == 0;

  Kokkos::View<const std::uint32_t**, MemSpace> m_state_rows;       // [L, B]
  Kokkos::View<StateT****, Kokkos::LayoutRight, MemSpace> m_state;  // [slots, nv, Dk, Dv]
  Kokkos::View<const std::uint32_t**, MemSpace> m_ring_rows;        // [L, B]
  Kokkos::View<const RingT****, Kokkos::LayoutRight, MemSpace> m_ring;  // [ring_rows, nk, RING_LEN, record_stride]
  Kokkos::View<const std::uint32_t*, MemSpace> m_num_accepted;      // [B]
  int m_batch = 0;
  int m_nv = 0;
  int m_group = 1;
  int m_ring_len = 0;

  int m_items = 0;  // L * B * nv * tiles_per_head()

  /// Floats of the state prefetch buffer: one tile of the state, when the mapping prefetches.
  static constexpr int kStateBufFloats =
      Map::prefetch_state ? kTileRows * Dk * static_cast<int>(sizeof(StateT)) / 4 : 0;
  static_assert(!Map::prefetch_state || kVec * sizeof(StateT) == 16, "the state prefetch copies 16-byte items");

  // +4: room to align the scratch arrays to 16 bytes.
  KOKKOS_INLINE_FUNCTION static constexpr int scratch_floats() {
    return kStateBufFloats + kChunk * (kTileRows + Dk + 1) + 4;
  }
  KOKKOS_INLINE_FUNCTION static constexpr int tiles_per_head() { return Dk / kTileRows; }

  /// A work item (layer, sequence b, value head h, row tile), decoded.
  struct Item {
    int tile, h, b, layer;
    KOKKOS_INLINE_FUNCTION Item(const FoldKernel& k, int item) {
      // Unsigned: the indices are non-negative, and unsigned division is cheaper.
      const unsigned per_b = unsigned(tiles_per_head()) * unsigned(k.m_nv);
      const unsigned lb = unsigned(item) / per_b;
      const unsigned rest = unsigned(item) - lb * per_b;
      tile = static_cast<int>(rest % unsigned(tiles_per_head()));
      h = static_cast<int>(rest / unsigned(tiles_per_head()));
      layer = static_cast<int>(lb / unsigned(k.m_batch));
      b = static_cast<int>(lb - unsigned(layer) * unsigned(k.m_batch));
    }
  };

  /// The first item at or after `item` (stepping by `stride`) that has records to apply; -1 if none.
  KOKKOS_INLINE_FUNCTION int next_active(int item, int stride) const {
    const unsigned per_b = unsigned(tiles_per_head()) * unsigned(m_nv);
    for (; item < m_items; item += stride) {
      const std::uint32_t n = m_num_accepted((unsigned(item) / per_b) % unsigned(m_batch));
      if (n != 0u && n <= static_cast<std::uint32_t>(m_ring_len)) return item;
    }
    return -1;
  }

  /// The state of item `it`'s head (its tile's rows start at tile * rows_per_team).
  KOKKOS_INLINE_FUNCTION StateT* state_head(const Item& it) const {
    return m_state.data() + (static_cast<std::size_t>(m_state_rows(it.layer, it.b)) * m_nv + it.h) * Dk * Dk;
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

  /// Teams take items league_rank, + league_size, ... (one item per team
  /// unless the mapping asks for persistent teams). With `prefetch_state`
  /// the next item's tile is in flight into scratch while this one computes.
  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int stride = team.league_size();
    int item = next_active(team.league_rank(), stride);
    if (item < 0) return;  // rows with nothing to apply are not ours to touch
    ScratchView scratch(team.team_scratch(0), scratch_floats());
    float* const base = align16(scratch.data());
    StateT* const sbuf = reinterpret_cast<StateT*>(base);  // [kItems][team_threads] items (prefetch_state)
    float* const sk = base + kStateBufFloats;               // [chunk, rows_per_team]
    float* const su = sk + kChunk * kTileRows;              // [chunk, Dv]
    float* const sd = su + kChunk * Dk;                     // [chunk]
    const int tid = team.team_rank();
    if constexpr (Map::prefetch_state) prefetch_tile(Item(*this, item), sbuf, tid);
    while (item >= 0) {
      const int next = next_active(item + stride, stride);
      fold_item(team, Item(*this, item), next, sbuf, sk, su, sd, tid);
      item = next;
    }
  }

  /// Apply `item`'s accepted records to its tile (read once, written once);
  /// with `prefetch_state`, start the copies of tile `next` (-1: none).
  KOKKOS_INLINE_FUNCTION void fold_item(const Member& team, const Item& item, int next, StateT* sbuf, float* sk,
                                        float* su, float* sd, int tid) const {
    const int n = static_cast<int>(m_num_accepted(item.b));
    const int kh = item.h / m_group;
    const int g = item.h - kh * m_group;
    const int row0 = item.tile * kTileRows;
    const std::uint32_t ring_row = m_ring_rows(item.layer, item.b);
    StateT* const head = state_head(item);
    const long rec_stride = static_cast<long>(m_ring.stride(2));
    float s[kItems][kVec];
    if constexpr (!Map::prefetch_state) {
      GDN_UNROLL
      for (int it = 0; it < kItems; ++it) load_vec(head + item_offset(tid, it, row0), s[it]);
    }
    for (int p0 = 0; p0 < n; p0 += kChunk) {
      const int np = (n - p0 < kChunk) ? (n - p0) : kChunk;
      // All of a thread's copies in flight at once (stage_async, mapping.hpp).
      // Unsigned indices: divisions by the (power-of-two) widths are shifts.
      const RingT* const rec = &m_ring(ring_row, kh, p0, 0);  // record p at rec + p * rec_stride
      GDN_NO_UNROLL
      for (unsigned e = tid; e < unsigned(np * kTileRows); e += Map::team_threads) {
        stage_async(sk + e, rec + (e / kTileRows) * rec_stride + row0 + e % kTileRows);
      }
      GDN_NO_UNROLL
      for (unsigned e = tid; e < unsigned(np * Dk); e += Map::team_threads) {
        stage_async(su + e, rec + (e / Dk) * rec_stride + Dk + g * Dk + e % Dk);
      }
      GDN_NO_UNROLL
      for (int p = tid; p < np; p += Map::team_threads) {
        stage_async(sd + p, rec + p * rec_stride + Dk + m_group * Dk + g);
      }
      stage_wait();  // this thread's copies (records, and the prefetched tile) have landed
      if constexpr (Map::prefetch_state) {
        if (p0 == 0) {
          GDN_UNROLL
          for (int it = 0; it < kItems; ++it) load_vec(sbuf + (it * Map::team_threads + tid) * kVec, s[it]);
        }
      }
      team.team_barrier();
      if constexpr (Map::prefetch_state) {
        // The buffer's items were this thread's own and are in registers now.
        if (p0 == 0 && next >= 0) prefetch_tile(Item(*this, next), sbuf, tid);
      }
      if constexpr (kRecordsOuter) {
        // A thread's items share their columns and are consecutive rows:
        // one fetch of u, of the items' keys and of the decay per record,
        // then every item (row) applies it.
        const int j = (tid % kItemsPerRow) * kVec;
        const int i0 = (tid / kItemsPerRow) * kItems;  // the thread's first row in the tile
        for (int p = 0; p < np; ++p) {
          const float dec = sd[p];
          float u[kVec];
          load_scratch<kVec>(su + p * Dk + j, u);
          float kval[kItems];
          load_scratch<kItems>(sk + p * kTileRows + i0, kval);
          GDN_UNROLL
          for (int it = 0; it < kItems; ++it) {
            GDN_UNROLL
            for (int c = 0; c < kVec; ++c) s[it][c] = delta_update(kval[it], u[c], decay_state(s[it][c], dec));
          }
        }
      } else {
        GDN_UNROLL
        for (int it = 0; it < kItems; ++it) {
          const int i = item_offset(tid, it, 0) / Dk;  // row in the tile
          const int j = item_offset(tid, it, 0) % Dk;
          for (int p = 0; p < np; ++p) {
            const float kval = sk[p * kTileRows + i];
            const float dec = sd[p];
            float u[kVec];
            load_scratch<kVec>(su + p * Dk + j, u);
            GDN_UNROLL GDN_SIMD
            for (int c = 0; c < kVec; ++c) s[it][c] = delta_update(kval, u[c], decay_state(s[it][c], dec));
          }
        }
      }
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
