#ifndef GDN_IMPL_LAUNCH_IMPL_HPP
#define GDN_IMPL_LAUNCH_IMPL_HPP

/// \file launch_impl.hpp
/// \brief Definitions of the launchers of launch.hpp: validate, then launch.
/// Included only by the explicit instantiations in src/.

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>
#include <gdn/impl/kernels/fold_kernel.hpp>
#include <gdn/impl/kernels/token_kernel.hpp>
#include <gdn/impl/launch/head_dim.hpp>
#include <gdn/impl/launch/launch.hpp>
#include <gdn/impl/validate/validate.hpp>
#include <gdn/ring.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#if defined(KOKKOS_ENABLE_CUDA) && !defined(__CUDACC__)
#error "the CUDA instantiations of gdn's launchers are compiled by nvcc (nvcc_wrapper)"
#endif

namespace gdn {
namespace Impl {

/// Launches `kernel` over `kernel.m_items` work items (`Kernel::league` teams).
template <class Kernel, class ExecSpace>
void launch_team_kernel(const char* label, const ExecSpace& space, Kernel&& kernel) {
  using K = std::decay_t<Kernel>;
#if defined(KOKKOS_ENABLE_CUDA)
  // Kokkos 3.4's CUDA team launch keeps 8 * (team size + 2) bytes of a block's
  // 48 KB of shared memory for itself and throws from inside parallel_for above
  // the rest, which also leaves Kokkos' allocation tracking off for the thread:
  // a kernel's scratch must fit.
  static_assert(!std::is_same<ExecSpace, Kokkos::Cuda>::value ||
                    K::scratch_bytes() + 8 * (K::kThreads + 2) <= 48 * 1024,
                "team scratch above the CUDA TeamPolicy limit of Kokkos");
#endif
  if (kernel.m_items == 0) return;
  const long long league = K::league(space, kernel.m_items);
  typename K::Policy policy(space, static_cast<int>(league), K::kThreads);
  policy.set_scratch_size(0, Kokkos::PerTeam(K::scratch_bytes()));
  Kokkos::parallel_for(label, policy, kernel);
}

/// The forward, verify or lazy verify kernel (token_kernel.hpp) over the
/// call's batch, after the call's arguments were validated.
template <class ExecSpace, class ActT, class StateT, class RingT, bool Verify, bool Lazy = false>
void launch_recurrence(const char* label, const ExecSpace& space, const HeadConfig& cfg,
                       RecurrenceParams<ActT, StateT, RingT, typename ExecSpace::memory_space> p) {
  p.nv = cfg.num_value_heads;
  p.group = cfg.group_size();
  p.key_dim = cfg.key_dim();
  p.skipped = skip_counter<typename ExecSpace::memory_space>();
  p.q_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.key_head_dim)));
  const auto& qkv = p.in.m_qkv;
  p.vec_qkv =
      qkv.stride(1) == 1 && qkv.stride(0) % (16 / sizeof(ActT)) == 0 && aligned16(qkv.data());
  const long long batch = static_cast<long long>(p.slots.extent(0));
  with_head_dim(cfg.key_head_dim, [&](auto dk) {
    using Kernel = TokenKernel<ExecSpace, ActT, StateT, RingT, decltype(dk)::value, Verify, Lazy>;
    // Items <= INT_MAX / 2 (check_league).
    Kernel k{p, static_cast<int>(Kernel::items(batch, p.nv)),
             FastDiv(static_cast<std::uint32_t>(p.nv)),
             FastDiv(static_cast<std::uint32_t>(p.group))};
    launch_team_kernel(label, space, k);
  });
}

/// Work items of a forward or verify launch over `batch` sequences.
inline long long recurrence_items(const HeadConfig& cfg, std::size_t batch) {
  return static_cast<long long>(batch) * cfg.num_value_heads * (cfg.key_head_dim / kTokenTile);
}

/// The kernel parameters of a forward (no ring), a verify (its ring) or a lazy
/// verify (its history ring; the caller adds the ledger).
template <class RingT, class M, class Inputs, class StateT>
RecurrenceParams<typename Inputs::activation_type, StateT, RingT, M> recurrence_params(
    const Inputs& in, const IndexView<M>& state_slots, const PoolView<StateT, M>& state,
    const OutView<typename Inputs::activation_type, M>& out, const IndexView<M>& ring_slots = {},
    const PoolView<RingT, M>& ring = {}) {
  using ActT = typename Inputs::activation_type;
  RecurrenceParams<ActT, StateT, RingT, M> p;
  p.in = TokenReader<ActT, M>(in);
  p.slots = state_slots;
  p.state = state;
  p.out.m_out = out;
  p.ring_slots = ring_slots;
  p.ring = ring;
  p.ring_len = static_cast<int>(ring.extent(2));
  return p;
}

/// recurrence_fwd for either input form: validate, then launch.
template <class ExecSpace, class Inputs, class StateT>
void run_fwd(
    const ExecSpace& space, const HeadConfig& cfg, const Inputs& in,
    const IndexView<typename ExecSpace::memory_space>& state_slots,
    const PoolView<StateT, typename ExecSpace::memory_space>& state,
    const OutView<typename Inputs::activation_type, typename ExecSpace::memory_space>& out) {
  using ActT = typename Inputs::activation_type;
  const ArgCheck c("gdn::recurrence_fwd");
  const std::size_t batch = state_slots.extent(0);
  const std::size_t tokens = check_recurrence_shapes(c, cfg, in, batch, state, out);
  check_league(c, "state_slots", recurrence_items(cfg, batch));
  if (index_checking_enabled()) {
    check_call_indices(c, space, in.row_offsets, tokens, state_slots, state.extent(0), nullptr, 0,
                       0, kRecurrencePools);
    check_gate_params(c, cfg, in);
  }
  launch_recurrence<ExecSpace, ActT, StateT, float, false>(
      "gdn::recurrence_fwd::kernel", space, cfg,
      recurrence_params<float>(in, state_slots, state, out));
}

/// recurrence_verify_ring for either input form: validate, then launch.
template <class ExecSpace, class Inputs, class StateT, class RingT>
void run_verify(
    const ExecSpace& space, const HeadConfig& cfg, const Inputs& in,
    const IndexView<typename ExecSpace::memory_space>& state_slots,
    const PoolView<StateT, typename ExecSpace::memory_space>& state,
    const OutView<typename Inputs::activation_type, typename ExecSpace::memory_space>& out,
    const IndexView<typename ExecSpace::memory_space>& ring_slots,
    const PoolView<RingT, typename ExecSpace::memory_space>& ring) {
  using ActT = typename Inputs::activation_type;
  const ArgCheck c("gdn::recurrence_verify_ring");
  const std::size_t batch = state_slots.extent(0);
  const std::size_t tokens = check_recurrence_shapes(c, cfg, in, batch, state, out);
  check_ring_slots(c, ring_slots, batch);
  check_ring(c, cfg, ring, batch > 0);
  check_league(c, "state_slots", recurrence_items(cfg, batch));
  if (index_checking_enabled()) {
    check_call_indices(c, space, in.row_offsets, tokens, state_slots, state.extent(0), &ring_slots,
                       ring.extent(0), ring.extent(2), kRecurrencePools);
    check_gate_params(c, cfg, in);
  }
  launch_recurrence<ExecSpace, ActT, StateT, RingT, true>(
      "gdn::recurrence_verify_ring::kernel", space, cfg,
      recurrence_params(in, state_slots, state, out, ring_slots, ring));
}

template <class ExecSpace, class ActT, class StateT>
void FwdLauncher<ExecSpace, ActT, StateT>::run(const ExecSpace& space, const HeadConfig& cfg,
                                               const TokenInputs<M, ActT>& in,
                                               const IndexView<M>& state_slots,
                                               const PoolView<StateT, M>& state,
                                               const OutView<ActT, M>& out) {
  run_fwd(space, cfg, in, state_slots, state, out);
}

template <class ExecSpace, class ActT, class StateT>
void FwdLauncher<ExecSpace, ActT, StateT>::run(const ExecSpace& space, const HeadConfig& cfg,
                                               const GateInputs<M, ActT>& in,
                                               const IndexView<M>& state_slots,
                                               const PoolView<StateT, M>& state,
                                               const OutView<ActT, M>& out) {
  run_fwd(space, cfg, in, state_slots, state, out);
}

template <class ExecSpace, class ActT, class StateT, class RingT>
void VerifyLauncher<ExecSpace, ActT, StateT, RingT>::run(
    const ExecSpace& space, const HeadConfig& cfg, const TokenInputs<M, ActT>& in,
    const IndexView<M>& state_slots, const PoolView<StateT, M>& state, const OutView<ActT, M>& out,
    const IndexView<M>& ring_slots, const PoolView<RingT, M>& ring) {
  run_verify(space, cfg, in, state_slots, state, out, ring_slots, ring);
}

template <class ExecSpace, class ActT, class StateT, class RingT>
void VerifyLauncher<ExecSpace, ActT, StateT, RingT>::run(
    const ExecSpace& space, const HeadConfig& cfg, const GateInputs<M, ActT>& in,
    const IndexView<M>& state_slots, const PoolView<StateT, M>& state, const OutView<ActT, M>& out,
    const IndexView<M>& ring_slots, const PoolView<RingT, M>& ring) {
  run_verify(space, cfg, in, state_slots, state, out, ring_slots, ring);
}

/// Index checking mode of the fold: every active (layer, b) entry (0 < n <=
/// RING_LEN, no padding row in either table) writes its state row (and conv
/// state row), so those must all differ; ring rows are only read.
template <class ExecSpace, class M>
void check_fold_indices(const ArgCheck& c, const ExecSpace& space, const IndexTable<M>& state_rows,
                        const IndexTable<M>& ring_rows, const IndexView<M>& num_accepted,
                        std::size_t pool_rows, std::size_t ring_pool_rows, std::size_t ring_len,
                        const ConvFoldWords<M>& conv) {
  space.fence();  // the caller may have written the tables asynchronously on this instance
  const std::size_t batch = num_accepted.extent(0);
  const std::vector<std::uint32_t> na = host_copy_1d(num_accepted);
  const std::vector<std::uint32_t> sr = host_copy_2d(state_rows);
  const std::vector<std::uint32_t> rr = host_copy_2d(ring_rows);
  std::vector<char> active(sr.size());
  for (std::size_t e = 0; e < active.size(); ++e) {
    const std::uint32_t n = na[e % batch];
    active[e] = n > 0 && n <= ring_len && sr[e] != pad_slot && rr[e] != pad_slot;
  }
  check_rows(c, "state_rows", "state.extent(0)", sr, active, active, pool_rows, batch, "pool row");
  const std::vector<char> shared(active.size(), 0);
  check_rows(c, "ring_rows", "ring.extent(0)", rr, active, shared, ring_pool_rows, batch,
             "ring row");
  if (conv.word_bytes != 0) {
    conv.visit([&](const auto& conv_state, const auto& conv_ring) {
      check_rows(c, "state_rows", "conv.conv_state.extent(0)", sr, active, active,
                 conv_state.extent(0), batch, "conv state row");
      check_rows(c, "ring_rows", "conv.conv_ring.extent(0)", rr, active, shared,
                 conv_ring.extent(0), batch, "conv ring row");
    });
  }
}

/// The fold kernel's parameters (the arguments validated; `width`: the conv
/// width W, 0 without conv pools).
template <class StateT, class RingT, class M>
FoldParams<StateT, RingT, M> fold_params(
    const HeadConfig& cfg, const IndexTable<M>& state_rows, const PoolView<StateT, M>& state,
    const IndexTable<M>& ring_rows,
    const Kokkos::View<const RingT****, Kokkos::LayoutRight, M>& ring,
    const IndexView<M>& num_accepted, const ConvFoldWords<M>& conv, int width) {
  const bool with_conv = conv.word_bytes != 0;
  FoldParams<StateT, RingT, M> p;
  p.state_rows = state_rows;
  p.state = state;
  p.ring_rows = ring_rows;
  p.ring = ring;
  p.num_accepted = num_accepted;
  p.skipped = skip_counter<M>();
  p.conv = conv;
  p.nv = cfg.num_value_heads;
  p.group = cfg.group_size();
  p.ring_len = static_cast<int>(ring.extent(2));
  p.conv_dim = with_conv ? static_cast<int>(cfg.conv_dim()) : 0;
  p.conv_keep = width - 1;
  if (with_conv) {
    conv.visit([&](const auto& conv_state, const auto& conv_ring) {
      const std::size_t lanes = 16 / static_cast<std::size_t>(conv.word_bytes);
      p.conv_vec = cfg.conv_dim() % long(lanes) == 0 && conv_ring.extent(2) % lanes == 0 &&
                   aligned16(conv_state.data()) && aligned16(conv_ring.data());
    });
  }
  return p;
}

template <class ExecSpace, class StateT, class RingT>
void FoldLauncher<ExecSpace, StateT, RingT>::fold(
    const ExecSpace& space, const HeadConfig& cfg, const IndexTable<M>& state_rows,
    const PoolView<StateT, M>& state, const IndexTable<M>& ring_rows,
    const Kokkos::View<const RingT****, Kokkos::LayoutRight, M>& ring,
    const IndexView<M>& num_accepted, const ConvFoldWords<M>& conv) {
  const ArgCheck c("gdn::state_fold");
  check_heads(c, cfg);
  const std::size_t layers = state_rows.extent(0);
  const std::size_t batch = num_accepted.extent(0);
  check_fold_tables(c, state_rows, ring_rows, num_accepted);
  const bool any = layers * batch > 0;
  check_state(c, cfg, state, any);
  check_ring(c, cfg, ring, any);
  const bool with_conv = conv.word_bytes != 0;
  const int width = with_conv ? check_conv_fold(c, cfg, conv, ring.extent(2), any) : 0;
  long long items = 0, conv_items = 0;
  with_head_dim(cfg.key_head_dim, [&](auto dk) {
    using Kernel = FoldKernel<ExecSpace, StateT, RingT, decltype(dk)::value>;
    items = Kernel::items(static_cast<long long>(layers), static_cast<long long>(batch),
                          cfg.num_value_heads);
    if (with_conv) {
      conv_items = Kernel::conv_items(static_cast<long long>(layers), static_cast<long long>(batch),
                                      cfg.conv_dim());
    }
  });
  check_league(c, "state_rows", items + conv_items);
  if (index_checking_enabled()) {
    check_fold_indices(c, space, state_rows, ring_rows, num_accepted, state.extent(0),
                       ring.extent(0), ring.extent(2), conv);
  }
  const FoldParams<StateT, RingT, M> p =
      fold_params(cfg, state_rows, state, ring_rows, ring, num_accepted, conv, width);
  with_head_dim(cfg.key_head_dim, [&](auto dk) {
    using Kernel = FoldKernel<ExecSpace, StateT, RingT, decltype(dk)::value>;
    // Both counts are <= INT_MAX / 2 together (checked above).
    Kernel k{p, static_cast<int>(batch), static_cast<int>(items), static_cast<int>(conv_items)};
    launch_team_kernel("gdn::state_fold::kernel", space, k);
  });
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_LAUNCH_IMPL_HPP
