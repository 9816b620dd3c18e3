#ifndef GDN_RECURRENCE_FWD_HPP
#define GDN_RECURRENCE_FWD_HPP

/// \file recurrence_fwd.hpp
/// \brief `gdn::recurrence_fwd`: the forward recurrence over a ragged batch.
///
/// The kernel itself is in impl/kernels/token_kernel.hpp (shared with verify).

#include <gdn/config.hpp>
#include <gdn/impl/launch/eti.hpp>
#include <gdn/impl/launch/launch.hpp>
#include <gdn/impl/launch/profiling.hpp>
#include <gdn/impl/validate/static_checks.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace gdn {

namespace Impl {

/// The compile-time checks of recurrence_fwd, then the launch (every overload).
template <class ExecSpace, class Inputs, class SlotsView, class StateView, class OutView>
void recurrence_fwd_checked(const ExecSpace& space, const HeadConfig& cfg, const Inputs& inputs,
                            const SlotsView& state_slots, const StateView& state,
                            const OutView& out) {
  using M = typename ExecSpace::memory_space;
  GDN_IMPL_STATIC_ASSERT_FWD_ARGS("gdn::recurrence_fwd", "is written", ExecSpace, Inputs, SlotsView,
                                  StateView, OutView);
  using ActT = typename InputsTraits<ExecSpace, Inputs>::activation_type;
  using SP = PoolViewTraits<ExecSpace, StateView>;
  ScopedRegion region("gdn::recurrence_fwd");
  using StateT = typename SP::value_type;
  FwdLauncher<ExecSpace, ActT, StateT>::run(space, cfg, inputs, IndexView<M>(state_slots),
                                            PoolView<StateT, M>(state),
                                            Impl::OutView<ActT, M>(out));
}

}  // namespace Impl

/// \brief Run the gated delta recurrence over every token of every sequence and commit the state.
///
/// For sequence b (tokens `[row_offsets[b], row_offsets[b+1])`) and every value
/// head, starts from pool row `state_slots[b]`, runs the recurrence of
/// docs/design.md (section 2) over the sequence's tokens in order, one token at a
/// time, writes `out` for every token and writes the final state back to the same
/// pool row. A row's bits do not depend on how its tokens are split into calls, nor
/// on the other rows of the batch. An empty sequence reads and writes nothing; any
/// length is allowed. Non-blocking: the work is enqueued on `space`.
///
/// \param space        execution space instance (Kokkos::Cuda, Kokkos::OpenMP, Kokkos::Serial)
/// \param cfg          head geometry; Dk == Dv in {64, 128}
/// \param inputs       qkv [tokens, conv_dim], decay and beta [tokens, nv], row_offsets [B+1]
///                     (TokenInputs); or raw gates a and b [tokens, nv] with A_log and
///                     dt_bias [nv] (GateInputs, the decay and beta computed in the kernel).
///                     float or gdn::bf16 activations (the overload below)
/// \param state_slots  [B] pool row of each sequence: a std::uint32_t view (const or not),
///                     LayoutLeft, LayoutRight or LayoutStride
/// \param state        [slots, nv, Dk, Dv] LayoutRight pool of float or gdn::bf16, read and written
/// \param out          [tokens, value_dim] of the inputs' activation type (float or gdn::bf16,
///                     rounded to nearest even), any layout; written for every token of every row
/// \throws gdn::InvalidArgument (a std::invalid_argument) for a bad head geometry or
///         view shape, before anything is launched; with index checking on
///         (checking.hpp) also for bad offsets or slots.
template <class ExecSpace, class SlotsView, class StateView, class OutView>
void recurrence_fwd(const ExecSpace& space, const HeadConfig& cfg,
                    const TokenInputs<typename ExecSpace::memory_space>& inputs,
                    const SlotsView& state_slots, const StateView& state, const OutView& out) {
  Impl::recurrence_fwd_checked(space, cfg, inputs, state_slots, state, out);
}

/// \brief `recurrence_fwd` for the other inputs: `TokenInputs<M, gdn::bf16>`,
/// `GateInputs<M, float>` and `GateInputs<M, gdn::bf16>` (`out` of the same activation type).
template <class ExecSpace, class Inputs, class SlotsView, class StateView, class OutView,
          Impl::EnableIfOtherInputs<ExecSpace, Inputs> = 0>
void recurrence_fwd(const ExecSpace& space, const HeadConfig& cfg, const Inputs& inputs,
                    const SlotsView& state_slots, const StateView& state, const OutView& out) {
  Impl::recurrence_fwd_checked(space, cfg, inputs, state_slots, state, out);
}

}  // namespace gdn

#endif  // GDN_RECURRENCE_FWD_HPP
