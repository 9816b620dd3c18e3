#ifndef GDN_VERIFY_RING_HPP
#define GDN_VERIFY_RING_HPP

/// \file verify_ring.hpp
/// \brief `gdn::recurrence_verify_ring`: verify a drafted window and record a ring.
///
/// The kernel itself is in impl/kernels/token_kernel.hpp (shared with the forward).

#include <gdn/config.hpp>
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

/// The compile-time checks of recurrence_verify_ring, then the launch (every overload).
template <class ExecSpace, class Inputs, class SlotsView, class StateView, class OutView,
          class RingSlotsView, class RingView>
void recurrence_verify_ring_checked(const ExecSpace& space, const HeadConfig& cfg,
                                    const Inputs& inputs, const SlotsView& state_slots,
                                    const StateView& state, const OutView& out,
                                    const RingSlotsView& ring_slots, const RingView& ring) {
  using M = typename ExecSpace::memory_space;
  GDN_IMPL_STATIC_ASSERT_VERIFY_ARGS("gdn::recurrence_verify_ring",
                                     "may be written (rows longer than RING_LEN)", ExecSpace,
                                     Inputs, SlotsView, StateView, OutView, RingSlotsView);
  using ActT = typename InputsTraits<ExecSpace, Inputs>::activation_type;
  using SP = PoolViewTraits<ExecSpace, StateView>;
  GDN_IMPL_STATIC_ASSERT_POOL_VIEW("gdn::recurrence_verify_ring", "ring",
                                   "[ring_rows, nk, RING_LEN, record_stride]", ExecSpace, RingView);
  GDN_IMPL_STATIC_ASSERT_WRITABLE("gdn::recurrence_verify_ring", "ring", "is written", RingView);
  using RP = PoolViewTraits<ExecSpace, RingView>;
  ScopedRegion region("gdn::recurrence_verify_ring");
  using StateT = typename SP::value_type;
  using RingT = typename RP::value_type;
  VerifyLauncher<ExecSpace, ActT, StateT, RingT>::run(
      space, cfg, inputs, IndexView<M>(state_slots), PoolView<StateT, M>(state),
      Impl::OutView<ActT, M>(out), IndexView<M>(ring_slots), PoolView<RingT, M>(ring));
}

}  // namespace Impl

/// \brief Run the recurrence over a drafted window; record a ring instead of writing the state
/// back.
///
/// `out` is bit-identical to what `recurrence_fwd` writes from the same state.
/// A sequence of length L with 0 < L <= RING_LEN (= ring.extent(2)) leaves its
/// state pool row untouched and writes, for every position p < L and key head
/// kh, the record `ring(ring_slots[b], kh, p, 0 : ring_record_elements)`
/// (layout in ring.hpp); its other records and every record's padding are not
/// touched. The record's decay is the one the kernel used (computed from the
/// raw gates for GateInputs), so the fold reproduces the forward either way.
/// A sequence with L > RING_LEN writes no record and commits its
/// state exactly as the forward does. An empty sequence touches nothing.
/// Non-blocking: the work is enqueued on `space`.
///
/// \param space        execution space instance
/// \param cfg          head geometry; Dk == Dv in {64, 128}
/// \param inputs       qkv [tokens, conv_dim], decay and beta [tokens, nv], row_offsets [B+1]
///                     (TokenInputs); or raw gates (GateInputs, as in recurrence_fwd);
///                     float or gdn::bf16 activations (the overload below)
/// \param state_slots  [B] pool row of each sequence: a std::uint32_t view (const or not),
///                     LayoutLeft, LayoutRight or LayoutStride
/// \param state        [slots, nv, Dk, Dv] LayoutRight float or gdn::bf16 pool
/// \param out          [tokens, value_dim] of the inputs' activation type, any layout
/// \param ring_slots   [B] ring row of each sequence, any of the layouts of state_slots
/// \param ring         [ring_rows, nk, RING_LEN, record_stride] LayoutRight float or gdn::bf16;
///                     record_stride >= ring_record_elements(Dk, Dv, G). A bf16 ring
///                     rounds k, u and decay, so a fold from it is not bit-exact.
/// \throws gdn::InvalidArgument for a bad geometry or shape (before any launch); with
///         index checking on, also for bad offsets, slots or ring slots.
template <class ExecSpace, class SlotsView, class StateView, class OutView, class RingSlotsView,
          class RingView>
void recurrence_verify_ring(const ExecSpace& space, const HeadConfig& cfg,
                            const TokenInputs<typename ExecSpace::memory_space>& inputs,
                            const SlotsView& state_slots, const StateView& state,
                            const OutView& out, const RingSlotsView& ring_slots,
                            const RingView& ring) {
  Impl::recurrence_verify_ring_checked(space, cfg, inputs, state_slots, state, out, ring_slots,
                                       ring);
}

/// \brief `recurrence_verify_ring` for the other inputs: `TokenInputs<M, gdn::bf16>`,
/// `GateInputs<M, float>` and `GateInputs<M, gdn::bf16>` (`out` of the same activation type).
template <class ExecSpace, class Inputs, class SlotsView, class StateView, class OutView,
          class RingSlotsView, class RingView, Impl::EnableIfOtherInputs<ExecSpace, Inputs> = 0>
void recurrence_verify_ring(const ExecSpace& space, const HeadConfig& cfg, const Inputs& inputs,
                            const SlotsView& state_slots, const StateView& state,
                            const OutView& out, const RingSlotsView& ring_slots,
                            const RingView& ring) {
  Impl::recurrence_verify_ring_checked(space, cfg, inputs, state_slots, state, out, ring_slots,
                                       ring);
}

}  // namespace gdn

#endif  // GDN_VERIFY_RING_HPP
