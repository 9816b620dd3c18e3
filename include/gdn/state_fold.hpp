#ifndef GDN_STATE_FOLD_HPP
#define GDN_STATE_FOLD_HPP

/// \file state_fold.hpp
/// \brief `gdn::state_fold`: commit the accepted prefix of the ring, every layer in one launch.
///
/// The kernel is in impl/kernels/fold_kernel.hpp; it also folds the conv states (the
/// overload with a `ConvFold`), in the same launch.

#include <gdn/config.hpp>
#include <gdn/conv_inputs.hpp>
#include <gdn/impl/launch/eti.hpp>
#include <gdn/impl/launch/launch.hpp>
#include <gdn/impl/launch/profiling.hpp>
#include <gdn/impl/validate/static_checks.hpp>
#include <gdn/ring.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace gdn {

namespace Impl {

/// Both overloads of `gdn::state_fold`: the view type checks, then one launch
/// (with the conv pools `conv`, or none).
template <class ExecSpace, class StateRowsView, class StateView, class RingRowsView, class RingView,
          class AcceptedView>
void state_fold_impl(const ExecSpace& space, const HeadConfig& cfg, const StateRowsView& state_rows,
                     const StateView& state, const RingRowsView& ring_rows, const RingView& ring,
                     const AcceptedView& num_accepted,
                     const ConvFoldWords<typename ExecSpace::memory_space>& conv) {
  using M = typename ExecSpace::memory_space;
  static_assert(Kokkos::is_execution_space<ExecSpace>::value,
                "gdn::state_fold: the first argument must be a Kokkos execution space instance");
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW("gdn::state_fold", "state_rows", 2, "[L, B]", ExecSpace,
                                    StateRowsView);
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW("gdn::state_fold", "ring_rows", 2, "[L, B]", ExecSpace,
                                    RingRowsView);
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW("gdn::state_fold", "num_accepted", 1, "[B]", ExecSpace,
                                    AcceptedView);
  GDN_IMPL_STATIC_ASSERT_POOL_VIEW("gdn::state_fold", "state", "[slots, nv, Dk, Dv]", ExecSpace,
                                   StateView);
  GDN_IMPL_STATIC_ASSERT_WRITABLE("gdn::state_fold", "state", "is written", StateView);
  GDN_IMPL_STATIC_ASSERT_POOL_VIEW("gdn::state_fold", "ring",
                                   "[ring_rows, nk, RING_LEN, record_stride]", ExecSpace, RingView);
  using SP = PoolViewTraits<ExecSpace, StateView>;
  using RP = PoolViewTraits<ExecSpace, RingView>;
  ScopedRegion region("gdn::state_fold");
  using StateT = typename SP::value_type;
  using RingT = typename RP::value_type;
  FoldLauncher<ExecSpace, StateT, RingT>::fold(
      space, cfg, IndexTable<M>(state_rows), PoolView<StateT, M>(state), IndexTable<M>(ring_rows),
      Kokkos::View<const RingT****, Kokkos::LayoutRight, M>(ring), IndexView<M>(num_accepted),
      conv);
}

}  // namespace Impl

/// \brief Fold the first `num_accepted[b]` ring records into the state, for L layers at once.
///
/// For layer l and sequence b with `0 < n = num_accepted[b] <= RING_LEN`,
/// applies records p = 0 .. n-1 of ring row `ring_rows(l, b)`, in order, to
/// pool row `state_rows(l, b)` (the fold of docs/design.md, section 2, step 4).
/// With a float ring the result is bit-identical to `recurrence_fwd` over the
/// first n tokens from the same state, for float and bf16 pools. A row with
/// n == 0 or n > RING_LEN is neither read nor written (n > RING_LEN is a row
/// verify already committed). Non-blocking: the work is enqueued on `space`.
///
/// The three index arguments are std::uint32_t views (const or not) in any of
/// LayoutLeft, LayoutRight and LayoutStride, on every backend.
///
/// \param space         execution space instance
/// \param cfg           head geometry; Dk == Dv in {64, 128}
/// \param state_rows    [L, B] pool row of layer l, sequence b
/// \param state         [slots, nv, Dk, Dv] LayoutRight float or gdn::bf16 pool
///                      (all layers' rows)
/// \param ring_rows     [L, B] ring row of layer l, sequence b
/// \param ring          [ring_rows, nk, RING_LEN, record_stride] LayoutRight float or
///                      gdn::bf16, read only
/// \param num_accepted  [B] accepted tokens of each sequence
/// \throws gdn::InvalidArgument for a bad geometry or shape (before any launch); with
///         index checking on, also for out-of-range or conflicting rows.
template <class ExecSpace, class StateRowsView, class StateView, class RingRowsView, class RingView,
          class AcceptedView>
void state_fold(const ExecSpace& space, const HeadConfig& cfg, const StateRowsView& state_rows,
                const StateView& state, const RingRowsView& ring_rows, const RingView& ring,
                const AcceptedView& num_accepted) {
  Impl::state_fold_impl(space, cfg, state_rows, state, ring_rows, ring, num_accepted,
                        Impl::ConvFoldWords<typename ExecSpace::memory_space>());
}

/// \brief The fold above, and in the same launch the fold of the conv states.
///
/// Folds the recurrent state exactly as the overload without `conv`, and,
/// for layer l and sequence b with `0 < n = num_accepted[b] <= RING_LEN`,
/// sets conv state row `state_rows(l, b)` of `conv.conv_state` to the last W-1
/// inputs of (that row, `conv.conv_ring(ring_rows(l, b), 0 .. n-1, :)`), the
/// pre-conv inputs `conv1d_verify_ring` recorded: bit-identical to
/// `conv1d_fwd` over the first n tokens from the same conv state. Rows with
/// n == 0 or n > RING_LEN are not touched, in either pool. One launch on
/// `space` for both pools of every layer, after every argument is validated.
/// Non-blocking.
///
/// \param conv  conv_state [slots, conv_dim, W-1] (W = extent(2) + 1, 2 to 4) and
///              conv_ring [ring_rows, RING_LEN, >= conv_dim] (RING_LEN = ring.extent(2)),
///              LayoutRight, float or gdn::bf16 (the same type for both)
/// \throws gdn::InvalidArgument as the overload without `conv`, and for a conv pool whose
///         shape does not match conv_dim, W or RING_LEN; with index checking on, also
///         for rows out of range of the conv pools.
template <class ExecSpace, class StateRowsView, class StateView, class RingRowsView, class RingView,
          class AcceptedView, class ConvT>
void state_fold(const ExecSpace& space, const HeadConfig& cfg, const StateRowsView& state_rows,
                const StateView& state, const RingRowsView& ring_rows, const RingView& ring,
                const AcceptedView& num_accepted,
                const ConvFold<typename ExecSpace::memory_space, ConvT>& conv) {
  static_assert(Impl::IsStorageType<ConvT>::value,
                "gdn::state_fold: conv (gdn::ConvFold) value type must be float or gdn::bf16");
  Impl::state_fold_impl(space, cfg, state_rows, state, ring_rows, ring, num_accepted,
                        Impl::ConvFoldWords<typename ExecSpace::memory_space>(conv));
}

}  // namespace gdn

#endif  // GDN_STATE_FOLD_HPP
