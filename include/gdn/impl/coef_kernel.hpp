#ifndef GDN_IMPL_COEF_KERNEL_HPP
#define GDN_IMPL_COEF_KERNEL_HPP

/// \file coef_kernel.hpp
/// \brief The forward's parallel pass over every chunk of every row: step 2
/// of chunk_algebra.hpp and the norms, into the caller's workspace
/// (workspace.hpp), for the tiled kernel to stage instead of computing.
///
/// Nothing here depends on the state, so every chunk of every row is
/// independent. For token j of a chunk and value head h the pass writes the
/// record `coef(h, t_j, :)` (CoefRecord): row j of akk and akq (entries past
/// the triangle 0), the decay, beta, kinv_j, qf_j and Gam_j, each by the
/// functions the tiled kernel calls without a workspace (key_pair_dots,
/// decay_products, the same products), so the bits are the same.
///
/// Chunk numbering. Row b's chunks get the ids `first(b) + c`, c = 0 ..
/// ceil(len_b / C) - 1, with `first(b) = (row_offsets[b] + b (C - 1)) / C`
/// (integer division): ids of different rows never collide, and every id is
/// below `(T + B (C - 1)) / C + 1` (`coef_chunk_ids`). A team finds its row by a
/// binary search of `first` over the offsets; ids that belong to no chunk
/// are idle teams.
///
/// Thread mapping. Work items are (chunk id, key head kh), kh fastest; one
/// team per item (CUDA: 128 threads, lane groups of Dk / 16 lanes as in the
/// tiled kernel; host: one thread). The team stages the chunk's keys and
/// queries, computes the key head's dot products and norms once (a lane
/// group per token pair; host: host_key_dots), then for each of the G value
/// heads stages its decays and betas and writes its records, a thread per
/// (token, coefficient column), so a warp's stores are contiguous.
/// On CUDA, rows of at most one chunk are the streaming kernel's, which
/// needs no coefficients: with `m_long_only` their chunks are idle.

#include <gdn/config.hpp>
#include <gdn/impl/backend.hpp>
#include <gdn/impl/chunk_algebra.hpp>
#include <gdn/impl/host_algebra.hpp>
#include <gdn/impl/params.hpp>
#include <gdn/impl/stream_kernel.hpp>
#include <gdn/workspace.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace gdn {
namespace Impl {

/// Chunk ids of a batch of `batch` rows and `tokens` tokens (see above).
inline long long coef_chunk_ids(long long tokens, long long batch) {
  return (tokens + batch * (chunk_tokens - 1)) / chunk_tokens + 1;
}

template <class ExecSpace, class ActT, class StateT, int Dk>
struct CoefKernel {
  using Traits = TeamTraits<ExecSpace, Dk>;
  static constexpr int kLanes = Traits::lanes;
  static constexpr int kThreads = Traits::threads;
  static constexpr int kGroups = kThreads / kLanes;
  static constexpr int kC = chunk_tokens;
  static constexpr int kR = CoefRecord::kFloats;
  /// Keys, queries and the key head's dots (dkk, dkq); the value-head
  /// regions of ChunkScratch are a 4-column stub, unused.
  using Scratch = ChunkScratch<Dk, kC, 4, true>;
  using Policy = Kokkos::TeamPolicy<ExecSpace, TeamKernelLaunch>;
  using Member = typename Policy::member_type;
  using ScratchView =
      Kokkos::View<float*, typename ExecSpace::scratch_memory_space, Kokkos::MemoryUnmanaged>;

  RecurrenceParams<ActT, StateT, float, typename ExecSpace::memory_space> m;
  int m_items = 0;  // coef_chunk_ids(T, B) * nk
  int m_nk = 1;
  bool m_long_only = false;  // CUDA: only rows longer than a chunk (beside StreamKernel)

  static constexpr int scratch_bytes() { return int(sizeof(float)) * (Scratch::kFloats + 4); }
  static long long league(const ExecSpace&, long long items) { return items; }

  /// The first chunk id of row b.
  KOKKOS_FORCEINLINE_FUNCTION int first_id(int b) const {
    return static_cast<int>((static_cast<long long>(m.in.row_offsets(b)) + static_cast<long long>(b) * (kC - 1)) /
                            kC);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int item = team.league_rank();
    if (item >= m_items) return;
    const int kh = item % m_nk, id = item / m_nk;
    // The row: the last b with first_id(b) <= id (first_id is non-decreasing).
    int lo = 0, hi = static_cast<int>(m.slots.extent(0)) - 1;
    while (lo < hi) {
      const int mid = (lo + hi + 1) / 2;
      if (first_id(mid) <= id) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const int b = lo;
    const int t0 = static_cast<int>(m.in.row_offsets(b));
    const int len = static_cast<int>(m.in.row_offsets(b + 1)) - t0;
    const int c0 = (id - first_id(b)) * kC;
    if (c0 >= len || m.slots(b) == pad_slot || (m_long_only && len <= kC)) return;
    const int t = t0 + c0, n = len - c0 < kC ? len - c0 : kC;

    ScratchView area(team.team_scratch(0), Scratch::kFloats + 4);
    const Scratch s(align16(area.data()));
    const int rank = team.team_rank();
    const auto& x = m.in.m_qkv;
    stage_rows<ActT>(rank, kThreads, s.k, x, t, n, m.key_dim + long(kh) * Dk, Dk, m.vec_qkv);
    stage_rows<ActT>(rank, kThreads, s.q, x, t, n, long(kh) * Dk, Dk, m.vec_qkv);
    async_wait();
    team.team_barrier();
    if constexpr (kThreads == 1) {
      host_key_dots(s, n, m.q_scale);
    } else {
      key_head_dots<kLanes, kGroups>(s, n, rank, m.q_scale);
    }
    for (int g = 0; g < m.group; ++g) {
      const int h = kh * m.group + g;
      team.team_barrier();  // the dots are in scratch; the last head's readers are done
      for (int j = rank; j < n; j += kThreads) {
        s.a[j] = m.in.decay(t + j, h);
        s.beta[j] = m.in.beta(t + j, h);
      }
      team.team_barrier();
      for (int e = rank; e < n * kC; e += kThreads) {  // (token j, coefficient column i)
        const int j = e / kC, i = e % kC;
        float* const rec = &m.coef(h, t + j, 0);
        float gji, gam;
        decay_products<kC>(s.a, j, i, gji, gam);
        rec[CoefRecord::kAkk + i] = i < j ? gji * s.dkk[j * kC + i] : 0.0f;
        rec[CoefRecord::kAkq + i] = i <= j ? gji * s.dkq[j * kC + i] : 0.0f;
        if (i == 0) {
          rec[CoefRecord::kDecay] = s.a[j];
          rec[CoefRecord::kBeta] = s.beta[j];
          rec[CoefRecord::kKinv] = s.kinv[j];
          rec[CoefRecord::kQf] = s.qf[j];
          rec[CoefRecord::kGam] = gam;
          for (int p = CoefRecord::kGam + 1; p < kR; ++p) rec[p] = 0.0f;
        }
      }
    }
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_COEF_KERNEL_HPP
