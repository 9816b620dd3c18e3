#ifndef GDN_IMPL_LAUNCH_HPP
#define GDN_IMPL_LAUNCH_HPP

/// \file launch.hpp
/// \brief The compiled entry points behind the public API (declarations only).
///
/// The public functions (recurrence_fwd.hpp, verify_ring.hpp, state_fold.hpp)
/// check their view types at compile time and convert them to the canonical
/// types of params.hpp; these launchers validate on the host, then launch.
/// They are defined in launch_impl.hpp, which only src/ includes, and
/// instantiated there for each supported (execution space, activation type,
/// state type, ring type) (eti.hpp): a user's translation unit never parses the kernels.

#include <gdn/config.hpp>
#include <gdn/impl/launch/params.hpp>

#include <cstddef>
#include <cstdint>

namespace gdn {
namespace Impl {

/// recurrence_fwd for one (execution space, activation type, state type), for
/// either input form (TokenInputs: gates given; GateInputs: raw gates).
template <class ExecSpace, class ActT, class StateT>
struct FwdLauncher {
  using M = typename ExecSpace::memory_space;
  static void run(const ExecSpace& space, const HeadConfig& cfg, const TokenInputs<M, ActT>& in,
                  const IndexView<M>& state_slots, const PoolView<StateT, M>& state,
                  const OutView<ActT, M>& out);
  static void run(const ExecSpace& space, const HeadConfig& cfg, const GateInputs<M, ActT>& in,
                  const IndexView<M>& state_slots, const PoolView<StateT, M>& state,
                  const OutView<ActT, M>& out);
};

/// recurrence_verify_ring for one (execution space, activation type, state type, ring type),
/// for either input form.
template <class ExecSpace, class ActT, class StateT, class RingT>
struct VerifyLauncher {
  using M = typename ExecSpace::memory_space;
  static void run(const ExecSpace& space, const HeadConfig& cfg, const TokenInputs<M, ActT>& in,
                  const IndexView<M>& state_slots, const PoolView<StateT, M>& state,
                  const OutView<ActT, M>& out, const IndexView<M>& ring_slots,
                  const PoolView<RingT, M>& ring);
  static void run(const ExecSpace& space, const HeadConfig& cfg, const GateInputs<M, ActT>& in,
                  const IndexView<M>& state_slots, const PoolView<StateT, M>& state,
                  const OutView<ActT, M>& out, const IndexView<M>& ring_slots,
                  const PoolView<RingT, M>& ring);
};

/// state_fold for one (execution space, state type, ring type), with the
/// conv pools of any type or none (`conv.word_bytes == 0`): one launch.
template <class ExecSpace, class StateT, class RingT>
struct FoldLauncher {
  using M = typename ExecSpace::memory_space;
  static void fold(const ExecSpace& space, const HeadConfig& cfg, const IndexTable<M>& state_rows,
                   const PoolView<StateT, M>& state, const IndexTable<M>& ring_rows,
                   const Kokkos::View<const RingT****, Kokkos::LayoutRight, M>& ring,
                   const IndexView<M>& num_accepted, const ConvFoldWords<M>& conv);
};

/// recurrence_verify_lazy for one (execution space, activation type, state type, history
/// type), for either input form.
template <class ExecSpace, class ActT, class StateT, class RingT>
struct LazyVerifyLauncher {
  using M = typename ExecSpace::memory_space;
  static void run(const ExecSpace& space, const HeadConfig& cfg, const TokenInputs<M, ActT>& in,
                  const IndexView<M>& state_slots, const PoolView<StateT, M>& state,
                  const OutView<ActT, M>& out, const IndexView<M>& ring_slots,
                  const PoolView<RingT, M>& history, const Ledger<M>& ledger);
  static void run(const ExecSpace& space, const HeadConfig& cfg, const GateInputs<M, ActT>& in,
                  const IndexView<M>& state_slots, const PoolView<StateT, M>& state,
                  const OutView<ActT, M>& out, const IndexView<M>& ring_slots,
                  const PoolView<RingT, M>& history, const Ledger<M>& ledger);
};

/// state_flush for one (execution space, state type, history type), with the
/// conv pools of any type or none (`conv.word_bytes == 0`).
template <class ExecSpace, class StateT, class RingT>
struct FlushLauncher {
  using M = typename ExecSpace::memory_space;
  static void flush(const ExecSpace& space, const HeadConfig& cfg, const IndexTable<M>& state_rows,
                    const PoolView<StateT, M>& state, const IndexTable<M>& ring_rows,
                    const Kokkos::View<const RingT****, Kokkos::LayoutRight, M>& history,
                    const Ledger<M>& ledger, const ConvFoldWords<M>& conv);
};

/// lazy_accept and lazy_drop for one execution space (they touch only the ledger).
template <class ExecSpace>
struct LedgerLauncher {
  using M = typename ExecSpace::memory_space;
  static void accept(const ExecSpace& space, const IndexTable<M>& ring_rows,
                     const Ledger<M>& ledger, std::size_t history_rows, std::size_t capacity,
                     const IndexView<M>& num_accepted);
  static void drop(const ExecSpace& space, const IndexTable<M>& ring_rows, const Ledger<M>& ledger,
                   std::size_t history_rows, std::size_t capacity);
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_LAUNCH_HPP
