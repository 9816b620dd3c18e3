#ifndef GDN_IMPL_FOLD_KERNEL_HPP
#define GDN_IMPL_FOLD_KERNEL_HPP

/// \file fold_kernel.hpp
/// \brief The state fold kernel: commit the accepted prefix of every layer's ring in one launch.
///
/// Preconditions (checked on the host, validate.hpp): Dk == Dv == `Dk`; the
/// state pool is dense and 16-byte aligned; `state_rows` and `ring_rows` are
/// [L, B], `num_accepted` is [B].
///
/// Thread mapping. League: one team per (layer l, sequence b, value head h,
/// tile of `rows_per_team` state rows), row tile fastest. A team whose
/// `n = num_accepted[b]` is 0 or above RING_LEN returns before reading
/// anything. Team: `team_threads` threads; a work item covers
/// `cols_per_item` consecutive columns of one row (item_offset). On CUDA a
/// thread's items are consecutive rows of one column group and neighbouring
/// threads take neighbouring column groups (a row is read by 16 or 32
/// threads at once: coalesced), so that a thread fetches its rows' keys
/// with 16-byte loads; on the host items are dealt round-robin. Each thread
/// keeps its items in registers for the whole fold:
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

  // +4: room to align the staging arrays to 16 bytes.
  KOKKOS_INLINE_FUNCTION static constexpr int scratch_floats() { return kChunk * (kTileRows + Dk + 1) + 4; }
  KOKKOS_INLINE_FUNCTION static constexpr int tiles_per_head() { return Dk / kTileRows; }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    constexpr int tiles = tiles_per_head();
    const int league = team.league_rank();
    const int tile = league % tiles;
    const int h = (league / tiles) % m_nv;
    const int lb = league / (tiles * m_nv);
    const int b = lb % m_batch;
    const int layer = lb / m_batch;
    const std::uint32_t n_acc = m_num_accepted(b);
    if (n_acc == 0u || n_acc > static_cast<std::uint32_t>(m_ring_len)) return;  // not ours to touch
    const int n = static_cast<int>(n_acc);
    const int kh = h / m_group;
    const int g = h % m_group;
    const int row0 = tile * kTileRows;
    const std::uint32_t ring_row = m_ring_rows(layer, b);
    StateT* const state_head =
        m_state.data() + (static_cast<std::size_t>(m_state_rows(layer, b)) * m_nv + h) * Dk * Dk;

    const int tid = team.team_rank();
    const long rec_stride = static_cast<long>(m_ring.stride(2));
    float s[kItems][kVec];
    GDN_UNROLL
    for (int it = 0; it < kItems; ++it) load_vec(state_head + item_offset(tid, it, row0), s[it]);

    ScratchView scratch(team.team_scratch(0), scratch_floats());
    float* const sk = align16(scratch.data());  // [chunk, rows_per_team]
    float* const su = sk + kChunk * kTileRows; // [chunk, Dv]
    float* const sd = su + kChunk * Dk;        // [chunk]
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
      stage_wait();
      team.team_barrier();
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
    for (int it = 0; it < kItems; ++it) store_vec(state_head + item_offset(tid, it, row0), s[it]);
  }

  /// Offset in the head's state (row * Dk + column) of item `it` of thread
  /// `tid` in the tile at row `row0`. Records outer (CUDA): the thread's items
  /// are kItems consecutive rows of one column group, a half warp covers a
  /// row (coalesced). Otherwise items are dealt round-robin, item e = tid +
  /// it * team_threads at row e / kItemsPerRow, column group e % kItemsPerRow.
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
