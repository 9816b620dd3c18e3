#ifndef GDN_IMPL_RECURRENCE_KERNEL_HPP
#define GDN_IMPL_RECURRENCE_KERNEL_HPP

/// \file recurrence_kernel.hpp
/// \brief The forward and verify-with-ring kernel (one functor, two modes).
///
/// Forward and verify are the same kernel: `Verify == false` always commits
/// the state; `Verify == true` records ring entries instead for rows of at
/// most RING_LEN tokens and commits longer rows. Sharing one body is what
/// makes verify's outputs bit-identical to the forward's: the same
/// instructions in the same order (see token_step.hpp).
///
/// Preconditions (checked on the host, validate.hpp): Dk == Dv == `Dk`;
/// `RecurrenceMapping::cols_per_lane * team_threads` divides Dv; the state
/// pool is dense (LayoutRight) and 16-byte aligned.
///
/// Thread mapping. Work items: one per (sequence b, value head h, tile of
/// `cols_per_team` state columns), tile fastest, so items that read the same
/// key and query are neighbours. League: one team per item on the host; on
/// CUDA as many persistent teams as fit on the device, each looping over
/// items and prefetching its next item's state tile and inputs into L2 while
/// it computes the current one. Team: `team_threads` lane groups of
/// `row_lanes` lanes; lane `l` of group `cg` owns rows
/// `[l*R, (l+1)*R)` (R = Dk/row_lanes) of columns
/// `[cg*cols_per_lane, (cg+1)*cols_per_lane)` of the tile, in registers
/// (CUDA: 8 lanes x 4 columns, 16x4 floats per lane at Dk = 128; host: 1
/// lane x 32 columns, vectorised over columns).
/// The state is read once before the first token and written at most once
/// after the last. Per chunk of `chunk_tokens` tokens the team stages k, q,
/// the tile's v, decay and beta in scratch (one global read per value), then
/// computes the q and k norms (one lane group per token), then every lane
/// runs `token_step` for each token of the chunk. Columns are independent in
/// the recurrence, so tiles never communicate; rows of one column are summed
/// across the lane group (mapping.hpp).

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>
#include <gdn/impl/mapping.hpp>
#include <gdn/impl/token_step.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace gdn {
namespace Impl {

template <class ExecSpace, class StateT, class RingT, int Dk, bool Verify>
struct RecurrenceKernel {
  using Map = RecurrenceMapping<ExecSpace>;
  using MemSpace = typename ExecSpace::memory_space;
  using Policy = Kokkos::TeamPolicy<ExecSpace, typename Map::schedule,
                                    Kokkos::LaunchBounds<Map::team_threads * Map::row_lanes,
                                                         Map::min_teams_per_sm>>;
  using Member = typename Policy::member_type;
  using ScratchView =
      Kokkos::View<float*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  static constexpr int kLanes = Map::row_lanes;
  static constexpr int kRows = Dk / kLanes;  // rows per lane (contiguous: lane*kRows + r)
  static constexpr int kCols = Map::cols_per_lane;
  static constexpr int kTeamCols = Map::cols_per_lane * Map::team_threads;
  static constexpr int kAcc = Map::row_accumulators;
  static constexpr int kNormAcc = Map::norm_accumulators;
  static constexpr int kChunk = Map::chunk_tokens;
  static constexpr int kLaneBlock = kRows + Map::stage_pad;  // staged floats per lane
  static constexpr int kStage = kLanes * kLaneBlock;         // staged floats per token (k or q)
  static constexpr int kScalars = 4;                         // decay, beta, qf, kinv
  static constexpr bool kContig = Map::contiguous_rows;
  static constexpr int kRowStride = kContig ? 1 : kLanes;   // staged distance between a lane's rows
  static constexpr bool kRS = Map::reduce_scatter;

  // The state row of this lane's r-th row, and where staged row i lives.
  KOKKOS_INLINE_FUNCTION static constexpr int lane_row(int lane, int r) {
    return kContig ? lane * kRows + r : r * kLanes + lane;
  }
  KOKKOS_INLINE_FUNCTION static constexpr int staged_at(int i) {
    return kContig ? (i / kRows) * kLaneBlock + i % kRows : i;
  }
  KOKKOS_INLINE_FUNCTION static constexpr int lane_stage_offset(int lane) {
    return kContig ? lane * kLaneBlock : lane;
  }
  static_assert(Dk % kLanes == 0, "row lanes must divide Dk");
  static_assert(Dk % kTeamCols == 0, "a team's column tile must divide Dv");
  static_assert(kRows % kAcc == 0 && kRows % kNormAcc == 0, "accumulators must divide rows per lane");
  static_assert(kLaneBlock % 4 == 0 && kTeamCols % 4 == 0, "staged blocks must stay 16-byte aligned");

  Kokkos::View<const float**, Kokkos::LayoutStride, MemSpace> m_qkv;    // [tokens, conv_dim]
  Kokkos::View<const float**, Kokkos::LayoutStride, MemSpace> m_decay;  // [tokens, nv]
  Kokkos::View<const float**, Kokkos::LayoutStride, MemSpace> m_beta;   // [tokens, nv]
  Kokkos::View<const std::uint32_t*, MemSpace> m_offsets;               // [B+1]
  Kokkos::View<const std::uint32_t*, MemSpace> m_slots;                 // [B]
  Kokkos::View<StateT****, Kokkos::LayoutRight, MemSpace> m_state;      // [slots, nv, Dk, Dv]
  Kokkos::View<float**, Kokkos::LayoutStride, MemSpace> m_out;          // [tokens, value_dim]
  Kokkos::View<const std::uint32_t*, MemSpace> m_ring_slots;            // [B] (verify only)
  Kokkos::View<RingT****, Kokkos::LayoutRight, MemSpace> m_ring;  // [ring_rows, nk, RING_LEN, record_stride]
  int m_nv = 0;
  int m_group = 1;
  int m_tiles = 1;
  int m_items = 0;  // B * nv * tiles
  int m_ring_len = 0;
  long m_key_dim = 0;
  float m_q_scale = 1.0f;

  // +4: room to align the staging arrays to 16 bytes.
  KOKKOS_INLINE_FUNCTION static constexpr int scratch_floats() {
    return kChunk * (2 * kStage + kTeamCols + kScalars) + 4;
  }
  KOKKOS_INLINE_FUNCTION static constexpr int tiles_per_head() { return Dk / kTeamCols; }

  KOKKOS_INLINE_FUNCTION StateT* tile_origin(int b, int h, int tile) const {
    return m_state.data() + (static_cast<std::size_t>(m_slots(b)) * m_nv + h) * Dk * Dk + tile * kTeamCols;
  }

  // Persistent teams: pull the next work item's state tile and first inputs into L2.
  KOKKOS_INLINE_FUNCTION void prefetch_item(const Member& team, int item) const {
    const int tile = item % m_tiles;
    const int h = (item / m_tiles) % m_nv;
    const int b = item / (m_tiles * m_nv);
    const std::uint32_t t0 = m_offsets(b);
    const std::uint32_t t1 = m_offsets(b + 1);
    if (t1 <= t0) return;
    const int tid = team.team_rank() * kLanes + vector_lane();
    const int nthreads = Map::team_threads * kLanes;
    const StateT* origin = tile_origin(b, h, tile);
    for (int row = tid; row < Dk; row += nthreads) prefetch_l2(origin + row * Dk);
    const int nt = (t1 - t0 < std::uint32_t(kChunk)) ? int(t1 - t0) : kChunk;
    const long q_base = static_cast<long>(h / m_group) * Dk;
    const long v_base = 2 * m_key_dim + static_cast<long>(h) * Dk + tile * kTeamCols;
    constexpr int kLines = Dk / 32;  // 128-byte lines of q (and of k)
    for (int e = tid; e < nt * (2 * kLines + 1); e += nthreads) {
      const int tt = e / (2 * kLines + 1);
      const int l = e % (2 * kLines + 1);
      const long col = l < kLines ? q_base + 32 * l : l < 2 * kLines ? m_key_dim + q_base + 32 * (l - kLines) : v_base;
      prefetch_l2(&m_qkv(t0 + tt, col));
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    ScratchView scratch(team.team_scratch(0), scratch_floats());
    float* const base = reinterpret_cast<float*>((reinterpret_cast<std::uintptr_t>(scratch.data()) + 15) &
                                                 ~std::uintptr_t(15));
    float* const sk = base;                      // [chunk][lanes][rows + pad]
    float* const sq = sk + kChunk * kStage;      // [chunk][lanes][rows + pad]
    float* const sv = sq + kChunk * kStage;      // [chunk][cols_per_team]
    float* const ssc = sv + kChunk * kTeamCols;  // [chunk][4]: decay, beta, qf, kinv
    const int step = Map::persistent ? team.league_size() : m_items;
    for (int item = team.league_rank(); item < m_items; item += step) {
      if (Map::persistent && item + step < m_items) prefetch_item(team, item + step);
      run_item(team, item, sk, sq, sv, ssc);
    }
  }

  KOKKOS_INLINE_FUNCTION void run_item(const Member& team, int item, float* sk, float* sq, float* sv,
                                       float* ssc) const {
    const int tile = item % m_tiles;
    const int h = (item / m_tiles) % m_nv;
    const int b = item / (m_tiles * m_nv);
    const std::uint32_t t_begin = m_offsets(b);
    const std::uint32_t t_end = m_offsets(b + 1);
    if (t_end <= t_begin) return;  // empty row: nothing read, nothing written
    const int len = static_cast<int>(t_end - t_begin);
    const bool record = Verify && len <= m_ring_len;
    const int kh = h / m_group;
    const int g = h % m_group;
    const int lane = vector_lane();
    const int cg = team.team_rank();
    const int tile_col0 = tile * kTeamCols;
    const int col0 = tile_col0 + cg * kCols;  // first state column of this lane
    const std::uint32_t ring_row = record ? m_ring_slots(b) : 0u;

    StateT* const origin = tile_origin(b, h, tile) + cg * kCols;
    float s[kRows][kCols];
    GDN_UNROLL
    for (int r = 0; r < kRows; ++r) load_vec(origin + lane_row(lane, r) * Dk, s[r]);

    const long q_base = static_cast<long>(kh) * Dk;
    const long k_base = m_key_dim + q_base;
    const long v_base = 2 * m_key_dim + static_cast<long>(h) * Dk + tile_col0;
    const bool write_key = record && g == 0 && tile == 0;
    const bool write_decay = record && tile == 0;
    const float* const sk_lane = sk + lane_stage_offset(lane);
    const float* const sq_lane = sq + lane_stage_offset(lane);

    for (int c0 = 0; c0 < len; c0 += kChunk) {
      const int nt = (len - c0 < kChunk) ? (len - c0) : kChunk;
      const std::uint32_t tok0 = t_begin + static_cast<std::uint32_t>(c0);
      // Stage the chunk's inputs: every value is read from global memory once per team.
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, nt * Dk), [&](const int e) {
        const int tt = e / Dk;
        const int i = e % Dk;
        const int at = tt * kStage + staged_at(i);
        const float kval = m_qkv(tok0 + tt, k_base + i);
        sk[at] = kval;
        sq[at] = m_qkv(tok0 + tt, q_base + i);
        if (write_key) m_ring(ring_row, kh, c0 + tt, i) = from_float<RingT>(kval);
      });
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, nt * kTeamCols), [&](const int e) {
        sv[e] = m_qkv(tok0 + e / kTeamCols, v_base + e % kTeamCols);
      });
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, nt), [&](const int tt) {
        const float dec = m_decay(tok0 + tt, h);
        ssc[tt * kScalars + 0] = dec;
        ssc[tt * kScalars + 1] = m_beta(tok0 + tt, h);
        if (write_decay) {
          m_ring(ring_row, kh, c0 + tt, Dk + m_group * Dk + g) = from_float<RingT>(dec);
        }
      });
      team.team_barrier();
      // Norms: lane group cg takes tokens cg, cg + team_threads, ...
      for (int tt = cg; tt < nt; tt += Map::team_threads) {
        const float qq = lane_sum_squares<kRows, kLanes, kNormAcc, kRowStride, kRS>(sq_lane + tt * kStage);
        const float kk = lane_sum_squares<kRows, kLanes, kNormAcc, kRowStride, kRS>(sk_lane + tt * kStage);
        if (lane == 0) {
          ssc[tt * kScalars + 2] = query_factor(qq, m_q_scale);
          ssc[tt * kScalars + 3] = key_inv_norm(kk);
        }
      }
      team.team_barrier();
      for (int tt = 0; tt < nt; ++tt) {
        float v[kCols];
        load_scratch<kCols>(sv + tt * kTeamCols + cg * kCols, v);
        const float* sc = ssc + tt * kScalars;
        const float qf = sc[2];
        const std::uint32_t tok = tok0 + static_cast<std::uint32_t>(tt);
        float u[kCols];
        token_step<kRows, kCols, kLanes, kAcc, kRowStride, kRS>(s, sk_lane + tt * kStage, sq_lane + tt * kStage, v, sc[0],
                                               sc[1], sc[3], u, [&](const int c, const float o) {
                                                 m_out(tok, static_cast<long>(h) * Dk + col0 + c) = qf * o;
                                               });
        if (record) {
          // Lane l writes the columns c with c % row_lanes == l: one store per value.
          GDN_UNROLL
          for (int c = 0; c < kCols; ++c) {
            if (c % kLanes == lane) {
              m_ring(ring_row, kh, c0 + tt, Dk + g * Dk + col0 + c) = from_float<RingT>(u[c]);
            }
          }
        }
      }
      team.team_barrier();  // the chunk's scratch is consumed before the next is staged
    }
    if (!record) {
      GDN_UNROLL
      for (int r = 0; r < kRows; ++r) store_vec(origin + lane_row(lane, r) * Dk, s[r]);
    }
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_RECURRENCE_KERNEL_HPP
