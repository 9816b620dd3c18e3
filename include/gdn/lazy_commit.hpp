#ifndef GDN_LAZY_COMMIT_HPP
#define GDN_LAZY_COMMIT_HPP

/// \file lazy_commit.hpp
/// \brief Lazy commit: a speculative step that reads each state once and
/// writes it only every few steps, bit for bit the eager flow.
///
/// The eager flow runs `recurrence_verify_ring` and then `state_fold` every
/// step. The lazy flow keeps the accepted records of earlier steps in a
/// per-slot history (a `LazyRing`) and runs, every step:
///
///     recurrence_verify_lazy(...)   // folds the pending records in registers, then the window
///     lazy_accept(...)              // the accepted prefix becomes pending (device-side)
///
/// and `state_flush` whenever the caller wants the states committed (before a
/// slot is freed, or every few steps); a verify also commits a slot by itself
/// when its window does not fit behind the pending records. No call
/// synchronises with the host, so a decode loop can be captured in a CUDA
/// graph. Outputs, records and every committed state are bit for bit those
/// of the eager flow, for any flush schedule, for float and bf16 states
/// (docs/api.md, "Lazy commit").
///
/// The kernels are those of the verify and the fold (impl/kernels/token_kernel.hpp,
/// impl/kernels/fold_kernel.hpp), in their lazy mode; the ledger
/// is impl/kernels/lazy_kernel.hpp.

#include <gdn/config.hpp>
#include <gdn/conv1d.hpp>
#include <gdn/conv_inputs.hpp>
#include <gdn/impl/launch/eti.hpp>
#include <gdn/impl/launch/launch.hpp>
#include <gdn/impl/launch/profiling.hpp>
#include <gdn/impl/validate/static_checks.hpp>
#include <gdn/ring.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gdn {

/// \brief The words of one ledger row for a history of `capacity` records:
/// the pending count and one bit per record position.
constexpr std::size_t lazy_ledger_words(std::size_t capacity) { return 1 + (capacity + 31) / 32; }

/// \brief A history ring and its ledger: the pool the lazy flow keeps its
/// pending records in.
///
/// Row r of both belongs to one request of one layer (the tables that name
/// rows are those of the eager ring: `ring_slots` in the verify, `ring_rows`
/// in the fold). A zero-filled ledger row has no pending record: allocate the
/// ledger with Kokkos' default (zero) initialisation, and clear a row with
/// `lazy_drop` or `state_flush` before it serves another request.
template <class MemorySpace, class RingT = float>
struct LazyRing {
  static_assert(Impl::IsStorageType<RingT>::value,
                "gdn::LazyRing: the history type must be float or gdn::bf16");
  /// [ring_rows, nk, capacity, record_stride] LayoutRight: records in the layout of ring.hpp.
  /// The capacity should hold at least two windows; a float history keeps the flow
  /// bit-exact, a bf16 one rounds k, u and decay as a bf16 eager ring does.
  Kokkos::View<RingT****, Kokkos::LayoutRight, MemorySpace> history;
  /// [ring_rows, >= lazy_ledger_words(capacity)] LayoutRight: word 0 the pending records of
  /// the row, the other words a bit per record position (where an accepted step ended).
  Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, MemorySpace> ledger;
};

namespace Impl {

template <class ExecSpace, class Inputs, class SlotsView, class StateView, class OutView,
          class RingSlotsView, class RingT>
void recurrence_verify_lazy_checked(const ExecSpace& space, const HeadConfig& cfg,
                                    const Inputs& inputs, const SlotsView& state_slots,
                                    const StateView& state, const OutView& out,
                                    const RingSlotsView& ring_slots,
                                    const LazyRing<typename ExecSpace::memory_space, RingT>& lazy) {
  using M = typename ExecSpace::memory_space;
  GDN_IMPL_STATIC_ASSERT_VERIFY_ARGS(
      "gdn::recurrence_verify_lazy", "may be written (a commit when a window does not fit)",
      ExecSpace, Inputs, SlotsView, StateView, OutView, RingSlotsView);
  using ActT = typename InputsTraits<ExecSpace, Inputs>::activation_type;
  using SP = PoolViewTraits<ExecSpace, StateView>;
  ScopedRegion region("gdn::recurrence_verify_lazy");
  using StateT = typename SP::value_type;
  LazyVerifyLauncher<ExecSpace, ActT, StateT, RingT>::run(
      space, cfg, inputs, IndexView<M>(state_slots), PoolView<StateT, M>(state),
      Impl::OutView<ActT, M>(out), IndexView<M>(ring_slots), lazy.history, lazy.ledger);
}

}  // namespace Impl

/// \brief Verify a drafted window from the state advanced over the slot's pending records;
/// record the window behind them.
///
/// For sequence b with 0 < L tokens, state row `s = state_slots[b]` and
/// history row `r = ring_slots[b]` holding `c = lazy.ledger(r, 0)` pending
/// records: the kernel folds records 0 .. c-1 of row r into s's state in
/// registers (the fold's update, as `state_fold` applied them step by step),
/// then runs the window exactly as `recurrence_verify_ring` from that state.
/// - If `c + L <= capacity` (`lazy.history.extent(2)`): the state row is not
///   written; the window's records go to positions c .. c+L-1 of row r.
/// - Otherwise the history would overflow: the c records are committed first
///   (the state row is written, as `state_flush` would), the ledger row is
///   cleared, and the window's records go to positions 0 .. L-1.
/// - A row with L > capacity records nothing: its pending records and its
///   whole window are committed, as the eager verify commits a row longer
///   than RING_LEN (with index checking on it is an error instead: the
///   history must hold a window).
/// `out` is bit-identical to what the eager flow (verify, then fold, every
/// step) writes. An empty sequence or a padding row touches nothing.
/// Three launches on `space` (the commit of the rows that overflow, their
/// ledger, the verify); nothing is copied to the host.
///
/// \param space, cfg, inputs, state_slots, state, out, ring_slots  as in recurrence_verify_ring
/// \param lazy  the history ring (float or gdn::bf16) and its ledger
/// \throws gdn::InvalidArgument for a bad geometry or shape (before any launch); with
///         index checking on, also for bad offsets, slots, ring slots, a row longer than
///         the capacity, a pending count past the capacity, or a state or history row
///         used by two rows of the call.
template <class ExecSpace, class SlotsView, class StateView, class OutView, class RingSlotsView,
          class RingT>
void recurrence_verify_lazy(const ExecSpace& space, const HeadConfig& cfg,
                            const TokenInputs<typename ExecSpace::memory_space>& inputs,
                            const SlotsView& state_slots, const StateView& state,
                            const OutView& out, const RingSlotsView& ring_slots,
                            const LazyRing<typename ExecSpace::memory_space, RingT>& lazy) {
  Impl::recurrence_verify_lazy_checked(space, cfg, inputs, state_slots, state, out, ring_slots,
                                       lazy);
}

/// \brief `recurrence_verify_lazy` for the other inputs: `TokenInputs<M, gdn::bf16>`,
/// `GateInputs<M, float>` and `GateInputs<M, gdn::bf16>` (`out` of the same activation type).
template <class ExecSpace, class Inputs, class SlotsView, class StateView, class OutView,
          class RingSlotsView, class RingT, Impl::EnableIfOtherInputs<ExecSpace, Inputs> = 0>
void recurrence_verify_lazy(const ExecSpace& space, const HeadConfig& cfg, const Inputs& inputs,
                            const SlotsView& state_slots, const StateView& state,
                            const OutView& out, const RingSlotsView& ring_slots,
                            const LazyRing<typename ExecSpace::memory_space, RingT>& lazy) {
  Impl::recurrence_verify_lazy_checked(space, cfg, inputs, state_slots, state, out, ring_slots,
                                       lazy);
}

/// \brief The conv over a drafted window from the conv state advanced over the row's pending
/// inputs; records the window's inputs behind them.
///
/// The conv part of a lazy step: the same ledger as the layer's recurrent
/// `LazyRing` (`lazy`; its `history` is not touched), and `conv_history`
/// `[ring_rows, capacity, >= conv_dim]` holding the pre-conv inputs of the
/// pending records. For sequence b with 0 < L tokens and c pending records
/// in history row r = ring_slots[b]: the conv starts from the last W-1 inputs
/// of (conv state row, `conv_history(r, 0 .. c-1, :)`), so `out` is what
/// `conv1d_verify_ring` writes in the eager flow, and records the window's
/// inputs at positions c .. c+L-1. If c + L > capacity the conv state is
/// committed first (the row's last W-1 inputs are stored) and the window goes
/// to positions 0 .. L-1; a row with L > capacity records nothing and
/// commits. **Call it before the layer's `recurrence_verify_lazy`**, which
/// clears the ledger rows it commits; `lazy_accept`, `state_flush` (the
/// overload with a `ConvFold` of the conv state and this history) and
/// `lazy_drop` serve both. One launch; no host synchronisation.
///
/// \param conv_history  [ring_rows, capacity, >= conv_dim] LayoutRight, the type of qkv, with
///                      the rows and capacity of `lazy.history`
/// \throws gdn::InvalidArgument as conv1d_verify_ring, and for a conv_history or ledger of
///         another shape; with index checking on, as recurrence_verify_lazy.
template <class ExecSpace, class T, class SlotsView, class ConvStateView, class OutView,
          class RingSlotsView, class ConvHistoryView, class RingT>
void conv1d_verify_lazy(const ExecSpace& space, const HeadConfig& cfg,
                        const ConvInputs<typename ExecSpace::memory_space, T>& inputs,
                        const SlotsView& state_slots, const ConvStateView& conv_state,
                        const OutView& out, const RingSlotsView& ring_slots,
                        const ConvHistoryView& conv_history,
                        const LazyRing<typename ExecSpace::memory_space, RingT>& lazy) {
  using M = typename ExecSpace::memory_space;
  GDN_IMPL_CONV_VERIFY_STATIC_CHECKS("gdn::conv1d_verify_lazy", "conv_history", ExecSpace, T,
                                     SlotsView, ConvStateView, OutView, RingSlotsView,
                                     ConvHistoryView);
  Impl::ScopedRegion region("gdn::conv1d_verify_lazy");
  using Y = typename Impl::ConvOutTraits<ExecSpace, OutView>::value_type;
  Impl::ConvLauncher<ExecSpace, T, Y>::verify_lazy(
      space, cfg, inputs, Impl::IndexView<M>(state_slots), Impl::ConvPool<T, M>(conv_state),
      Impl::ConvOut<Y, M>(out), Impl::IndexView<M>(ring_slots), Impl::ConvPool<T, M>(conv_history),
      lazy.history.extent(2), lazy.ledger);
}

/// \brief Take the accepted prefix of the last lazy verify's windows, on the device.
///
/// For layer l and sequence b with `n = num_accepted[b] > 0`: the first n
/// records of the last window of history row `ring_rows(l, b)` become
/// pending, the last of them ending a step. A row whose window the verify
/// committed (longer than the capacity) is passed n > capacity, as the eager
/// fold is passed n > RING_LEN, and is left as it is; so is a padding entry.
/// One launch on `space`.
///
/// \param ring_rows     [L, B] history row of layer l, sequence b (std::uint32_t, any layout)
/// \param lazy          the history ring and its ledger (only the ledger is written)
/// \param num_accepted  [B] accepted tokens of each sequence
/// \throws gdn::InvalidArgument for a bad shape; with index checking on, also for a
///         row out of range, a row two entries accept into, or a pending count past
///         the capacity.
template <class ExecSpace, class RingRowsView, class AcceptedView, class RingT>
void lazy_accept(const ExecSpace& space, const RingRowsView& ring_rows,
                 const LazyRing<typename ExecSpace::memory_space, RingT>& lazy,
                 const AcceptedView& num_accepted) {
  using M = typename ExecSpace::memory_space;
  static_assert(Kokkos::is_execution_space<ExecSpace>::value,
                "gdn::lazy_accept: the first argument must be a Kokkos execution space instance");
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW("gdn::lazy_accept", "ring_rows", 2, "[L, B]", ExecSpace,
                                    RingRowsView);
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW("gdn::lazy_accept", "num_accepted", 1, "[B]", ExecSpace,
                                    AcceptedView);
  Impl::ScopedRegion region("gdn::lazy_accept");
  Impl::LedgerLauncher<ExecSpace>::accept(space, Impl::IndexTable<M>(ring_rows), lazy.ledger,
                                          lazy.history.extent(0), lazy.history.extent(2),
                                          Impl::IndexView<M>(num_accepted));
}

namespace Impl {
/// Both overloads of `gdn::state_flush`: the view type checks, then the launcher.
template <class ExecSpace, class StateRowsView, class StateView, class RingRowsView, class RingT>
void state_flush_impl(const ExecSpace& space, const HeadConfig& cfg,
                      const StateRowsView& state_rows, const StateView& state,
                      const RingRowsView& ring_rows,
                      const LazyRing<typename ExecSpace::memory_space, RingT>& lazy,
                      const ConvFoldWords<typename ExecSpace::memory_space>& conv) {
  using M = typename ExecSpace::memory_space;
  static_assert(Kokkos::is_execution_space<ExecSpace>::value,
                "gdn::state_flush: the first argument must be a Kokkos execution space instance");
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW("gdn::state_flush", "state_rows", 2, "[L, B]", ExecSpace,
                                    StateRowsView);
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW("gdn::state_flush", "ring_rows", 2, "[L, B]", ExecSpace,
                                    RingRowsView);
  GDN_IMPL_STATIC_ASSERT_POOL_VIEW("gdn::state_flush", "state", "[slots, nv, Dk, Dv]", ExecSpace,
                                   StateView);
  GDN_IMPL_STATIC_ASSERT_WRITABLE("gdn::state_flush", "state", "is written", StateView);
  using StateT = typename PoolViewTraits<ExecSpace, StateView>::value_type;
  ScopedRegion region("gdn::state_flush");
  FlushLauncher<ExecSpace, StateT, RingT>::flush(
      space, cfg, IndexTable<M>(state_rows), PoolView<StateT, M>(state), IndexTable<M>(ring_rows),
      Kokkos::View<const RingT****, Kokkos::LayoutRight, M>(lazy.history), lazy.ledger, conv);
}
}  // namespace Impl

/// \brief Commit every pending record of the given rows, for L layers at once.
///
/// For layer l and sequence b: folds the pending records of history row
/// `ring_rows(l, b)` into pool row `state_rows(l, b)` (bit for bit the states
/// of the eager flow) and clears the ledger row. An entry with no pending
/// record is not read or written (its ledger row is cleared); an entry with
/// `gdn::pad_slot` in either table is skipped. Call it before a slot's state
/// is read by anything but a lazy verify, or before its rows are reassigned.
/// Two launches (the fold, then the ledger) on `space`.
///
/// \param state_rows  [L, B] pool row of layer l, sequence b
/// \param state       [slots, nv, Dk, Dv] LayoutRight float or gdn::bf16 pool
/// \param ring_rows   [L, B] history row of layer l, sequence b
/// \param lazy        the history ring (read) and its ledger (cleared)
/// \throws gdn::InvalidArgument for a bad geometry or shape; with index checking on, also
///         for rows out of range, a pool row two entries write, or a pending count past
///         the capacity.
template <class ExecSpace, class StateRowsView, class StateView, class RingRowsView, class RingT>
void state_flush(const ExecSpace& space, const HeadConfig& cfg, const StateRowsView& state_rows,
                 const StateView& state, const RingRowsView& ring_rows,
                 const LazyRing<typename ExecSpace::memory_space, RingT>& lazy) {
  Impl::state_flush_impl(space, cfg, state_rows, state, ring_rows, lazy,
                         Impl::ConvFoldWords<typename ExecSpace::memory_space>());
}

/// \brief The flush above, and in the same launch the conv states' (conv1d_verify_lazy).
///
/// Also sets conv state row `state_rows(l, b)` of `conv.conv_state` to the
/// last W-1 inputs of (that row, the pending inputs `conv.conv_ring(ring_rows(l, b),
/// 0 .. c-1, :)`): `conv.conv_ring` is the conv history, [ring_rows, capacity,
/// >= conv_dim].
template <class ExecSpace, class StateRowsView, class StateView, class RingRowsView, class RingT,
          class ConvT>
void state_flush(const ExecSpace& space, const HeadConfig& cfg, const StateRowsView& state_rows,
                 const StateView& state, const RingRowsView& ring_rows,
                 const LazyRing<typename ExecSpace::memory_space, RingT>& lazy,
                 const ConvFold<typename ExecSpace::memory_space, ConvT>& conv) {
  static_assert(Impl::IsStorageType<ConvT>::value,
                "gdn::state_flush: conv (gdn::ConvFold) value type must be float or gdn::bf16");
  Impl::state_flush_impl(space, cfg, state_rows, state, ring_rows, lazy,
                         Impl::ConvFoldWords<typename ExecSpace::memory_space>(conv));
}

/// \brief Drop the pending records of the given history rows (their tokens are discarded).
///
/// Clears ledger row `ring_rows(l, b)` of every entry but padding: the state
/// row keeps the value it had at the last commit. Use it when a request ends
/// without needing its state, or before a row serves another request whose
/// state is committed. One launch on `space`.
///
/// \param ring_rows  [L, B] history rows (any shape of [L, B]; std::uint32_t, any layout)
/// \throws gdn::InvalidArgument with index checking on, for a row out of range or twice
///         in the table.
template <class ExecSpace, class RingRowsView, class RingT>
void lazy_drop(const ExecSpace& space, const RingRowsView& ring_rows,
               const LazyRing<typename ExecSpace::memory_space, RingT>& lazy) {
  using M = typename ExecSpace::memory_space;
  static_assert(Kokkos::is_execution_space<ExecSpace>::value,
                "gdn::lazy_drop: the first argument must be a Kokkos execution space instance");
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW("gdn::lazy_drop", "ring_rows", 2, "[L, B]", ExecSpace,
                                    RingRowsView);
  Impl::ScopedRegion region("gdn::lazy_drop");
  Impl::LedgerLauncher<ExecSpace>::drop(space, Impl::IndexTable<M>(ring_rows), lazy.ledger,
                                        lazy.history.extent(0), lazy.history.extent(2));
}

}  // namespace gdn

#endif  // GDN_LAZY_COMMIT_HPP
