#ifndef GDN_IMPL_LAZY_LAUNCH_IMPL_HPP
#define GDN_IMPL_LAZY_LAUNCH_IMPL_HPP

/// \file lazy_launch_impl.hpp
/// \brief Definitions of the lazy-commit launchers of launch.hpp
/// (lazy_commit.hpp): validate, then launch. Included only by the explicit
/// instantiations in src/.

#include <gdn/impl/kernels/lazy_kernel.hpp>
#include <gdn/impl/launch/launch_impl.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gdn {
namespace Impl {

/// The fold kernel's parameters in its lazy mode (state_flush, and the
/// commit before a lazy verify), with the conv pools of width `width` or none.
template <class StateT, class RingT, class M>
FoldParams<StateT, RingT, M> lazy_fold_params(
    const HeadConfig& cfg, const IndexTable<M>& state_rows, const PoolView<StateT, M>& state,
    const IndexTable<M>& ring_rows,
    const Kokkos::View<const RingT****, Kokkos::LayoutRight, M>& history, const Ledger<M>& ledger,
    const ConvFoldWords<M>& conv = ConvFoldWords<M>(), int width = 0) {
  FoldParams<StateT, RingT, M> p =
      fold_params(cfg, state_rows, state, ring_rows, history, IndexView<M>(), conv, width);
  p.ledger = ledger;
  return p;
}

/// A [B] index view as the [1, B] table of one layer.
template <class M>
IndexTable<M> one_layer(const IndexView<M>& v) {
  const std::size_t n = v.extent(0), stride = n > 0 ? v.stride(0) : 1;
  return IndexTable<M>(v.data(), Kokkos::LayoutStride(1, n * stride, n, stride));
}

/// Launches the lazy fold kernel over the [L, B] entries of `p` (`items`
/// state items, `conv_items` conv items). `sparse`: few entries have work
/// (the commit before a verify: only the rows that overflow), so the league
/// is capped at the teams the device holds at once, each looping over items
/// (FoldKernel's loop), instead of a team per item.
template <class ExecSpace, class StateT, class RingT>
void launch_lazy_fold(const char* label, const ExecSpace& space, const HeadConfig& cfg,
                      const FoldParams<StateT, RingT, typename ExecSpace::memory_space>& p,
                      long long items, long long conv_items = 0, bool sparse = false) {
  with_head_dim(cfg.key_head_dim, [&](auto dk) {
    using Kernel = FoldKernel<ExecSpace, StateT, RingT, decltype(dk)::value, true>;
    // items + conv_items <= INT_MAX / 2 (check_league).
    Kernel k{p, static_cast<int>(p.state_rows.extent(1)), static_cast<int>(items),
             static_cast<int>(conv_items)};
    if (!sparse) {
      launch_team_kernel(label, space, k);
      return;
    }
    if (k.m_items + k.m_conv_items == 0) return;
    const long long resident = space.concurrency() / Kernel::kThreads;
    long long league = Kernel::league(space, items + conv_items);
    if (resident >= 1 && league > resident) league = resident;
    typename Kernel::Policy policy(space, static_cast<int>(league), Kernel::kThreads);
    policy.set_scratch_size(0, Kokkos::PerTeam(Kernel::scratch_bytes()));
    Kokkos::parallel_for(label, policy, k);
  });
}

/// Work items of the lazy fold kernel over `layers` x `batch` entries: the
/// state items, and the conv items for `conv_dim` channels (0: none).
template <class ExecSpace, class StateT, class RingT>
long long lazy_fold_items(const HeadConfig& cfg, std::size_t layers, std::size_t batch,
                          long long* conv_items = nullptr) {
  long long items = 0;
  with_head_dim(cfg.key_head_dim, [&](auto dk) {
    using Kernel = FoldKernel<ExecSpace, StateT, RingT, decltype(dk)::value, true>;
    items = Kernel::items(static_cast<long long>(layers), static_cast<long long>(batch),
                          cfg.num_value_heads);
    if (conv_items) {
      *conv_items = Kernel::conv_items(static_cast<long long>(layers),
                                       static_cast<long long>(batch), cfg.conv_dim());
    }
  });
  return items;
}

/// recurrence_verify_lazy for either input form: validate, then three
/// launches (lazy_kernel.hpp): the commit of the rows whose window does not
/// fit behind their pending records, the ledger of those rows, the verify.
template <class ExecSpace, class Inputs, class StateT, class RingT>
void run_verify_lazy(
    const ExecSpace& space, const HeadConfig& cfg, const Inputs& in,
    const IndexView<typename ExecSpace::memory_space>& state_slots,
    const PoolView<StateT, typename ExecSpace::memory_space>& state,
    const OutView<typename Inputs::activation_type, typename ExecSpace::memory_space>& out,
    const IndexView<typename ExecSpace::memory_space>& ring_slots,
    const PoolView<RingT, typename ExecSpace::memory_space>& history,
    const Ledger<typename ExecSpace::memory_space>& ledger) {
  using M = typename ExecSpace::memory_space;
  using ActT = typename Inputs::activation_type;
  const ArgCheck c("gdn::recurrence_verify_lazy");
  const std::size_t batch = state_slots.extent(0);
  const long long commit_items = lazy_fold_items<ExecSpace, StateT, RingT>(cfg, 1, batch);
  check_verify_lazy(c, space, cfg, in, state_slots, state, out, ring_slots, history, ledger,
                    recurrence_items(cfg, batch), commit_items);
  // The rows whose window would overflow their history commit first, then the
  // ledger takes the window, then the verify runs behind the pending records.
  FoldParams<StateT, RingT, M> fp =
      lazy_fold_params(cfg, one_layer(state_slots), state, one_layer(ring_slots),
                       Kokkos::View<const RingT****, Kokkos::LayoutRight, M>(history), ledger);
  fp.offsets = in.row_offsets;
  fp.tokens = in.qkv.extent(0);
  fp.skipped = SkipCounter<M>();  // the verify kernel counts a skipped row, once
  launch_lazy_fold("gdn::recurrence_verify_lazy::commit", space, cfg, fp, commit_items, 0, true);
  launch_ledger("gdn::recurrence_verify_lazy::ledger", space, static_cast<long long>(batch),
                LedgerBeforeVerify<ExecSpace>{ledger, in.row_offsets, state_slots, ring_slots,
                                              static_cast<int>(history.extent(2)), state.extent(0),
                                              in.qkv.extent(0)});
  RecurrenceParams<ActT, StateT, RingT, M> p =
      recurrence_params(in, state_slots, state, out, ring_slots, history);
  p.ledger = ledger;
  launch_recurrence<ExecSpace, ActT, StateT, RingT, true, true>(
      "gdn::recurrence_verify_lazy::kernel", space, cfg, p);
}

template <class ExecSpace, class ActT, class StateT, class RingT>
void LazyVerifyLauncher<ExecSpace, ActT, StateT, RingT>::run(
    const ExecSpace& space, const HeadConfig& cfg, const TokenInputs<M, ActT>& in,
    const IndexView<M>& state_slots, const PoolView<StateT, M>& state, const OutView<ActT, M>& out,
    const IndexView<M>& ring_slots, const PoolView<RingT, M>& history, const Ledger<M>& ledger) {
  run_verify_lazy(space, cfg, in, state_slots, state, out, ring_slots, history, ledger);
}

template <class ExecSpace, class ActT, class StateT, class RingT>
void LazyVerifyLauncher<ExecSpace, ActT, StateT, RingT>::run(
    const ExecSpace& space, const HeadConfig& cfg, const GateInputs<M, ActT>& in,
    const IndexView<M>& state_slots, const PoolView<StateT, M>& state, const OutView<ActT, M>& out,
    const IndexView<M>& ring_slots, const PoolView<RingT, M>& history, const Ledger<M>& ledger) {
  run_verify_lazy(space, cfg, in, state_slots, state, out, ring_slots, history, ledger);
}

/// The [L, B] ring_rows table of lazy_accept (B = num_accepted.extent(0)) or
/// lazy_drop, and its rows in the checking mode: in range (or padding), each
/// written by one entry. Returns the table's entries.
template <class ExecSpace, class M>
std::vector<std::uint32_t> check_ledger_rows(const ArgCheck& c, const ExecSpace& space,
                                             const IndexTable<M>& ring_rows,
                                             const Ledger<M>& ledger, std::size_t capacity,
                                             const std::vector<char>* active) {
  space.fence();  // the caller may have written the tables asynchronously on this instance
  const std::size_t batch = ring_rows.extent(1);
  const std::vector<std::uint32_t> rr = host_copy_2d(ring_rows);
  std::vector<char> used(rr.size());
  for (std::size_t e = 0; e < rr.size(); ++e) {
    used[e] = rr[e] != pad_slot && (active == nullptr || (*active)[e]);
  }
  check_rows(c, "ring_rows", "lazy.ledger.extent(0)", rr, used, used, ledger.extent(0), batch,
             "history row");
  check_pending(c, host_copy_2d(ledger), ledger.extent(1), rr, used, capacity, "ring_rows", batch);
  return rr;
}

template <class ExecSpace>
void LedgerLauncher<ExecSpace>::accept(const ExecSpace& space, const IndexTable<M>& ring_rows,
                                       const Ledger<M>& ledger, std::size_t history_rows,
                                       std::size_t capacity, const IndexView<M>& num_accepted) {
  const ArgCheck c("gdn::lazy_accept");
  check_ledger(c, ledger, history_rows, capacity);
  const std::size_t layers = ring_rows.extent(0), batch = num_accepted.extent(0);
  check_table_batch(c, "ring_rows", ring_rows, num_accepted);
  check_league(c, "ring_rows", static_cast<long long>(layers * batch));
  if (index_checking_enabled()) {
    const std::vector<std::uint32_t> na = host_copy_1d(num_accepted);
    std::vector<char> active(layers * batch);
    for (std::size_t e = 0; e < active.size(); ++e) active[e] = na[e % batch] > 0;
    check_ledger_rows(c, space, ring_rows, ledger, capacity, &active);
  }
  launch_ledger("gdn::lazy_accept", space, static_cast<long long>(layers * batch),
                LedgerAccept<ExecSpace>{ledger, ring_rows, num_accepted, static_cast<int>(capacity),
                                        static_cast<int>(batch)});
}

template <class ExecSpace>
void LedgerLauncher<ExecSpace>::drop(const ExecSpace& space, const IndexTable<M>& ring_rows,
                                     const Ledger<M>& ledger, std::size_t history_rows,
                                     std::size_t capacity) {
  const ArgCheck c("gdn::lazy_drop");
  check_ledger(c, ledger, history_rows, capacity);
  const std::size_t layers = ring_rows.extent(0), batch = ring_rows.extent(1);
  check_league(c, "ring_rows", static_cast<long long>(layers * batch));
  if (index_checking_enabled()) check_ledger_rows(c, space, ring_rows, ledger, capacity, nullptr);
  launch_ledger(
      "gdn::lazy_drop", space, static_cast<long long>(layers * batch),
      LedgerClear<ExecSpace>{ledger, ring_rows, IndexTable<M>(), static_cast<int>(batch)});
}

/// Index checking mode of a flush: every entry without padding clears its
/// ledger row (check_ledger_rows); one with pending records also writes its
/// state row (and conv state row), so those must be in range and differ.
template <class ExecSpace, class M>
void check_flush_indices(const ArgCheck& c, const ExecSpace& space, const IndexTable<M>& state_rows,
                         const IndexTable<M>& ring_rows, const Ledger<M>& ledger,
                         std::size_t capacity, std::size_t pool_rows,
                         const ConvFoldWords<M>& conv) {
  const std::size_t batch = state_rows.extent(1);
  const std::vector<std::uint32_t> sr = host_copy_2d(state_rows);
  std::vector<char> entry(sr.size());
  for (std::size_t e = 0; e < sr.size(); ++e) entry[e] = sr[e] != pad_slot;
  const std::vector<std::uint32_t> rr =
      check_ledger_rows(c, space, ring_rows, ledger, capacity, &entry);
  const std::vector<std::uint32_t> lw = host_copy_2d(ledger);
  std::vector<char> writes(sr.size());
  for (std::size_t e = 0; e < sr.size(); ++e) {
    writes[e] = entry[e] && rr[e] != pad_slot && lw[std::size_t(rr[e]) * ledger.extent(1)] > 0;
  }
  check_rows(c, "state_rows", "state.extent(0)", sr, writes, writes, pool_rows, batch, "pool row");
  if (conv.word_bytes != 0) {
    conv.visit([&](const auto& conv_state, const auto&) {
      check_rows(c, "state_rows", "conv.conv_state.extent(0)", sr, writes, writes,
                 conv_state.extent(0), batch, "conv state row");
    });
  }
}

template <class ExecSpace, class StateT, class RingT>
void FlushLauncher<ExecSpace, StateT, RingT>::flush(
    const ExecSpace& space, const HeadConfig& cfg, const IndexTable<M>& state_rows,
    const PoolView<StateT, M>& state, const IndexTable<M>& ring_rows,
    const Kokkos::View<const RingT****, Kokkos::LayoutRight, M>& history, const Ledger<M>& ledger,
    const ConvFoldWords<M>& conv) {
  const ArgCheck c("gdn::state_flush");
  check_heads(c, cfg);
  const std::size_t layers = state_rows.extent(0), batch = state_rows.extent(1);
  check_ring_rows_table(c, state_rows, ring_rows);
  const bool any = layers * batch > 0;
  check_state(c, cfg, state, any);
  check_ring(c, cfg, history, any, "lazy.history");
  check_ledger(c, ledger, history.extent(0), history.extent(2));
  const std::size_t capacity = history.extent(2);
  const bool with_conv = conv.word_bytes != 0;
  const int width = with_conv ? check_conv_fold(c, cfg, conv, capacity, any) : 0;
  if (with_conv) check_conv_history_rows(c, conv, history.extent(0));
  long long conv_items = 0;
  const long long items = lazy_fold_items<ExecSpace, StateT, RingT>(
      cfg, layers, batch, with_conv ? &conv_items : nullptr);
  check_league(c, "state_rows", items + conv_items);
  if (index_checking_enabled()) {
    check_flush_indices(c, space, state_rows, ring_rows, ledger, capacity, state.extent(0), conv);
  }
  launch_lazy_fold(
      "gdn::state_flush::kernel", space, cfg,
      lazy_fold_params(cfg, state_rows, state, ring_rows, history, ledger, conv, width), items,
      conv_items);
  launch_ledger("gdn::state_flush::ledger", space, static_cast<long long>(layers * batch),
                LedgerClear<ExecSpace>{ledger, ring_rows, state_rows, static_cast<int>(batch),
                                       state.extent(0)});
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_LAZY_LAUNCH_IMPL_HPP
