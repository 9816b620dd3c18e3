#ifndef GDN_IMPL_LAUNCH_HPP
#define GDN_IMPL_LAUNCH_HPP

/// \file launch.hpp
/// \brief The compiled entry points behind the public API: validate, then launch.
///
/// Public functions (recurrence_fwd.hpp, verify_ring.hpp, state_fold.hpp)
/// take any compatible view type, check it at compile time and convert it to
/// the canonical types below; these launchers are explicitly instantiated in
/// src/ for each supported (execution space, state type, ring type) and
/// declared `extern` in eti.hpp, so callers link against them instead of
/// compiling kernels.

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>
#include <gdn/impl/cuda_carveout.hpp>
#include <gdn/impl/fold_kernel.hpp>
#include <gdn/impl/recurrence_kernel.hpp>
#include <gdn/impl/tuning.hpp>
#include <gdn/impl/validate.hpp>
#include <gdn/ring.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace gdn {
namespace Impl {

template <class M>
using IndexView = Kokkos::View<const std::uint32_t*, M>;  // [B]
template <class M>
using IndexTable = Kokkos::View<const std::uint32_t**, M>;  // [L, B]
template <class T, class M>
using PoolView = Kokkos::View<T****, Kokkos::LayoutRight, M>;  // state or ring pool
template <class M>
using OutView = Kokkos::View<float**, Kokkos::LayoutStride, M>;  // [tokens, value_dim]

/// Shared memory Kokkos asks for per team of `Kernel` (`team_size` vectors):
/// the kernel's team scratch plus Kokkos's own sizeof(double) * (team_size + 2)
/// bytes (+64 for rounding). Used for the persistent team count and the carveout.
template <class Kernel>
constexpr long long team_shmem_bytes(int team_size) {
  return static_cast<long long>(sizeof(float)) * Kernel::scratch_floats() +
         static_cast<long long>(sizeof(double)) * (team_size + 2) + 64;
}

template <class Kernel, class ExecSpace>
void launch_team_kernel(const char* label, const ExecSpace& space, long long league,
                        int team_threads, int vector_length, const Kernel& kernel) {
  if (league == 0) return;
  typename Kernel::Policy policy(space, static_cast<int>(league), team_threads, vector_length);
  policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(float) * Kernel::scratch_floats()));
  configure_carveout<Kernel>(space, team_threads * vector_length,
                             team_shmem_bytes<Kernel>(team_threads));
  Kokkos::parallel_for(label, policy, kernel);
}

/// Index checking mode for forward and verify: offsets, and the pool rows the call writes.
template <class ExecSpace, class M>
void check_recurrence_indices(const ArgCheck& c, const ExecSpace& space,
                              const IndexView<M>& offsets, std::size_t tokens,
                              const IndexView<M>& slots, std::size_t pool_rows,
                              const IndexView<M>* ring_slots, std::size_t ring_rows,
                              std::size_t ring_len) {
  space.fence();  // the caller may have written the indices asynchronously on this instance
  const std::vector<std::uint32_t> off = host_copy_1d(offsets);
  check_offsets_contents(c, off, tokens);
  const std::size_t batch = slots.extent(0);
  const std::vector<std::uint32_t> sl = host_copy_1d(slots);
  std::vector<char> used(batch), commit(batch), record(batch);
  for (std::size_t b = 0; b < batch; ++b) {
    const std::size_t len = off[b + 1] - off[b];
    used[b] = len > 0;
    record[b] = ring_slots != nullptr && len > 0 && len <= ring_len;
    commit[b] = len > 0 && !record[b];
  }
  // Recording rows only read their state row (several may share one); a
  // committing row writes it, so no other row of the call may use it.
  check_rows(c, "state_slots", "state.extent(0)", sl, used, commit, pool_rows, 0, "pool row");
  if (ring_slots) {
    const std::vector<std::uint32_t> rs = host_copy_1d(*ring_slots);
    check_rows(c, "ring_slots", "ring.extent(0)", rs, record, record, ring_rows, 0, "ring row");
  }
}

/// Work items of one recurrence launch (B * nv * column tiles), checked against INT_MAX / 2.
template <class ExecSpace, class StateT>
long long recurrence_league(const HeadConfig& cfg, std::size_t batch) {
  using Map = RecurrenceMapping<ExecSpace, StateT>;
  return static_cast<long long>(batch) * cfg.num_value_heads *
         (cfg.key_head_dim / (Map::cols_per_lane * Map::team_threads));
}

/// The run length of a recurrence call whose kernel shares k and q over runs
/// of items (RecurrenceKernel::kKqRuns), as a shift: the longest run up to
/// Map::kq_run_max whose length is a power of two that divides the items of
/// one key head of a row (`group` value heads x the tiles of a head: a run
/// never spans two key heads), provided the busiest of `league` persistent
/// teams then runs at most Map::kq_run_slack_pct (10) per cent more items than
/// with single items (the work the runs save per item is a few per cent).
/// With more runs than teams the plan (run_plan.hpp) balances the teams to
/// within one item; with fewer, each of `runs` teams takes one run.
/// 0: single items.
template <class Kernel>
int kq_run_shift(long long items, long long league, int group) {
  if (!Kernel::kKqRuns || league <= 0) return 0;
  const long long per_key_head = static_cast<long long>(group) * Kernel::tiles_per_head();
  if (const int forced = forced_kq_run(); forced > 0) {  // tests (tuning.hpp)
    int shift = 0;
    while ((2LL << shift) <= forced && per_key_head % (2LL << shift) == 0) ++shift;
    return shift;
  }
  auto busiest = [&](int shift) {  // items of the busiest team (a run each if runs <= league)
    const RunPlan plan = make_run_plan(static_cast<int>(items), static_cast<int>(league), shift,
                                       Kernel::Map::kq_run_balance_rounds);
    return busiest_team_items(plan, static_cast<int>(league), static_cast<int>(items));
  };
  int shift = 0;
  for (int sh = 1; (1LL << sh) <= Kernel::kRunMax && per_key_head % (1LL << sh) == 0; ++sh) {
    if (busiest(sh) * 100 <= busiest(0) * (100 + Kernel::Map::kq_run_slack_pct)) shift = sh;
  }
  return shift;
}

template <class ExecSpace, class StateT, class RingT, bool Verify>
void launch_recurrence(const char* label, const ExecSpace& space, const HeadConfig& cfg,
                       const TokenInputs<typename ExecSpace::memory_space>& in,
                       const IndexView<typename ExecSpace::memory_space>& slots,
                       const PoolView<StateT, typename ExecSpace::memory_space>& state,
                       const OutView<typename ExecSpace::memory_space>& out,
                       const IndexView<typename ExecSpace::memory_space>& ring_slots,
                       const PoolView<RingT, typename ExecSpace::memory_space>& ring) {
  auto run = [&](auto dk_tag, auto short_tag) {
    constexpr int Dk = decltype(dk_tag)::value;
    using Kernel =
        RecurrenceKernel<ExecSpace, StateT, RingT, Dk, Verify, decltype(short_tag)::value>;
    Kernel k;
    k.m_qkv = in.qkv;
    k.m_decay = in.decay;
    k.m_beta = in.beta;
    k.m_offsets = in.row_offsets;
    k.m_slots = slots;
    k.m_state = state;
    k.m_out = out;
    k.m_ring_slots = ring_slots;
    k.m_ring = ring;
    k.m_nv = cfg.num_value_heads;
    k.m_group = cfg.group_size();
    k.m_nv_div = FastDiv(static_cast<std::uint32_t>(k.m_nv));
    k.m_group_div = FastDiv(static_cast<std::uint32_t>(k.m_group));
    k.m_ring_len = Verify ? static_cast<int>(ring.extent(2)) : 0;
    k.m_key_dim = cfg.key_dim();
    k.m_q_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(Dk)));
    k.m_vec_inputs = in.qkv.stride(1) == 1 && in.qkv.stride(0) % 4 == 0 && aligned16(in.qkv.data());
    k.m_staged_norms = k.m_vec_inputs && in.qkv.extent(0) >= 2 * slots.extent(0);
    const long long items =
        recurrence_league<ExecSpace, StateT>(cfg, slots.extent(0));  // <= INT_MAX / 2 (checked)
    k.m_items = static_cast<int>(items);
    long long league = launch_teams(space, items, Kernel::kPersistentTeams,
                                    team_shmem_bytes<Kernel>(Kernel::kTeamSize));
    if (const int forced = forced_persistent_teams(); forced > 0 && Kernel::kPersistentTeams > 0) {
      if (forced < league) league = forced;  // tests (tuning.hpp)
    }
    const int run_shift = kq_run_shift<Kernel>(items, league, k.m_group);
    if ((items >> run_shift) < league) league = items >> run_shift;  // a run per team
    if constexpr (Kernel::kKqRuns) {
      k.m_runs = make_run_plan(k.m_items, static_cast<int>(league), run_shift,
                               Kernel::Map::kq_run_balance_rounds);
    }
    launch_team_kernel(label, space, league, Kernel::kTeamSize, Kernel::Map::vector_length, k);
  };
  // Short rows may have a kernel of their own (Map::has_short_kernel): verify
  // windows of RING_LEN <= short_window_max, a forward with at most one token
  // per row (a decode step). Only the speed depends on the choice.
  using Map = RecurrenceMapping<ExecSpace, StateT>;
  const bool short_rows =
      Verify ? ring.extent(2) <= static_cast<std::size_t>(Map::short_window_max(Verify))
             : in.qkv.extent(0) <= slots.extent(0);
  auto run_dk = [&](auto dk_tag) {
    if constexpr (Map::has_short_kernel(decltype(dk_tag)::value, Verify)) {
      if (short_rows) {
        run(dk_tag, std::true_type());
        return;
      }
    }
    run(dk_tag, std::false_type());
  };
  if (cfg.key_head_dim == 64) {
    run_dk(std::integral_constant<int, 64>());
  } else {
    run_dk(std::integral_constant<int, 128>());
  }
}

/// recurrence_fwd for one (execution space, state type).
template <class ExecSpace, class StateT>
struct FwdLauncher {
  using M = typename ExecSpace::memory_space;
  static void run(const ExecSpace& space, const HeadConfig& cfg, const TokenInputs<M>& in,
                  const IndexView<M>& state_slots, const PoolView<StateT, M>& state,
                  const OutView<M>& out) {
    const ArgCheck c("gdn::recurrence_fwd");
    check_heads(c, cfg);
    const std::size_t batch = state_slots.extent(0);
    const std::size_t tokens = check_inputs(c, cfg, in, batch);
    check_state(c, cfg, state, batch > 0);
    check_out(c, cfg, out, tokens);
    check_league(c, "state_slots", recurrence_league<ExecSpace, StateT>(cfg, batch));
    if (index_checking_enabled()) {
      check_recurrence_indices<ExecSpace, M>(c, space, in.row_offsets, tokens, state_slots,
                                             state.extent(0), nullptr, 0, 0);
    }
    launch_recurrence<ExecSpace, StateT, float, false>("gdn::recurrence_fwd::kernel", space, cfg,
                                                       in, state_slots, state, out, IndexView<M>(),
                                                       PoolView<float, M>());
  }
};

/// recurrence_verify_ring and state_fold for one (execution space, state type, ring type).
template <class ExecSpace, class StateT, class RingT>
struct RingLauncher {
  using M = typename ExecSpace::memory_space;

  static void verify(const ExecSpace& space, const HeadConfig& cfg, const TokenInputs<M>& in,
                     const IndexView<M>& state_slots, const PoolView<StateT, M>& state,
                     const OutView<M>& out, const IndexView<M>& ring_slots,
                     const PoolView<RingT, M>& ring) {
    const ArgCheck c("gdn::recurrence_verify_ring");
    check_heads(c, cfg);
    const std::size_t batch = state_slots.extent(0);
    const std::size_t tokens = check_inputs(c, cfg, in, batch);
    check_state(c, cfg, state, batch > 0);
    check_out(c, cfg, out, tokens);
    if (!(ring_slots.extent(0) == batch)) {
      c.fail("ring_slots", "extent(0) == B = " + to_str(batch) + " (state_slots.extent(0))",
             "extent(0) = " + to_str(ring_slots.extent(0)));
    }
    check_ring(c, cfg, ring, batch > 0);
    check_league(c, "state_slots", recurrence_league<ExecSpace, StateT>(cfg, batch));
    if (index_checking_enabled()) {
      check_recurrence_indices<ExecSpace, M>(c, space, in.row_offsets, tokens, state_slots,
                                             state.extent(0), &ring_slots, ring.extent(0),
                                             ring.extent(2));
    }
    launch_recurrence<ExecSpace, StateT, RingT, true>("gdn::recurrence_verify_ring::kernel", space,
                                                      cfg, in, state_slots, state, out, ring_slots,
                                                      ring);
  }

  static void fold(const ExecSpace& space, const HeadConfig& cfg, const IndexTable<M>& state_rows,
                   const PoolView<StateT, M>& state, const IndexTable<M>& ring_rows,
                   const Kokkos::View<const RingT****, Kokkos::LayoutRight, M>& ring,
                   const IndexView<M>& num_accepted) {
    const ArgCheck c("gdn::state_fold");
    check_heads(c, cfg);
    const std::size_t layers = state_rows.extent(0);
    const std::size_t batch = num_accepted.extent(0);
    if (!(state_rows.extent(1) == batch)) {
      c.fail("state_rows", "shape [L, B] with B = num_accepted.extent(0) = " + to_str(batch),
             "shape " + extents_str(state_rows));
    }
    if (!(ring_rows.extent(0) == layers && ring_rows.extent(1) == batch)) {
      c.fail("ring_rows",
             "shape [L, B] = [" + to_str(layers) + ", " + to_str(batch) +
                 "] (the shape of state_rows)",
             "shape " + extents_str(ring_rows));
    }
    const bool any = layers * batch > 0;
    check_state(c, cfg, state, any);
    check_ring(c, cfg, ring, any);
    const long long league = static_cast<long long>(layers) * batch * cfg.num_value_heads *
                             (cfg.key_head_dim / FoldMapping<ExecSpace, StateT>::rows_per_team);
    check_league(c, "state_rows", league);
    if (index_checking_enabled()) {
      space.fence();
      const std::vector<std::uint32_t> na = host_copy_1d(num_accepted);
      const std::vector<std::uint32_t> sr = host_copy_2d(state_rows);
      const std::vector<std::uint32_t> rr = host_copy_2d(ring_rows);
      std::vector<char> active(layers * batch);
      for (std::size_t e = 0; e < active.size(); ++e) {
        const std::uint32_t n = na[e % batch];
        active[e] = n > 0 && n <= ring.extent(2);
      }
      // Every active (layer, b) writes its state row: all must differ. Ring rows are only read.
      check_rows(c, "state_rows", "state.extent(0)", sr, active, active, state.extent(0), batch,
                 "pool row");
      const std::vector<char> shared(active.size(), 0);
      check_rows(c, "ring_rows", "ring.extent(0)", rr, active, shared, ring.extent(0), batch,
                 "ring row");
    }
    auto run = [&](auto dk_tag) {
      constexpr int Dk = decltype(dk_tag)::value;
      using Kernel = FoldKernel<ExecSpace, StateT, RingT, Dk>;
      Kernel k;
      k.m_state_rows = state_rows;
      k.m_state = state;
      k.m_ring_rows = ring_rows;
      k.m_ring = ring;
      k.m_num_accepted = num_accepted;
      k.m_batch = static_cast<int>(batch);
      k.m_nv = cfg.num_value_heads;
      k.m_group = cfg.group_size();
      k.m_heads_div = FastDiv(static_cast<std::uint32_t>(k.m_nv * Kernel::tiles_per_head()));
      k.m_batch_div =
          FastDiv(static_cast<std::uint32_t>(batch > 0 ? batch : 1));  // B = 0: no items
      k.m_group_div = FastDiv(static_cast<std::uint32_t>(k.m_group));
      k.m_ring_len = static_cast<int>(ring.extent(2));
      k.m_vec_records =
          std::is_same<RingT, float>::value && ring.stride(2) % 4 == 0 && aligned16(ring.data());
      const long long items =
          static_cast<long long>(layers) * batch * cfg.num_value_heads * Kernel::tiles_per_head();
      k.m_items = static_cast<int>(items);  // <= INT_MAX / 2 (check_league)
      const long long lg = launch_teams(space, items, Kernel::kPersistentTeams,
                                        team_shmem_bytes<Kernel>(Kernel::Map::team_threads));
      launch_team_kernel("gdn::state_fold::kernel", space, lg, Kernel::Map::team_threads, 1, k);
    };
    if (cfg.key_head_dim == 64) {
      run(std::integral_constant<int, 64>());
    } else {
      run(std::integral_constant<int, 128>());
    }
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_LAUNCH_HPP
