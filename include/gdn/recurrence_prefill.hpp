#ifndef GDN_RECURRENCE_PREFILL_HPP
#define GDN_RECURRENCE_PREFILL_HPP

/// \file recurrence_prefill.hpp
/// \brief `gdn::recurrence_prefill`: the recurrence over long prompts in the chunked WY/UT
/// form (tensor cores on CUDA), agreeing with the exact path within a stated tolerance.
///
/// The kernels are in impl/prefill/ (prefill_host.hpp, prefill_cuda.hpp).

#include <gdn/config.hpp>
#include <gdn/impl/launch/prefill_launch.hpp>
#include <gdn/impl/launch/profiling.hpp>
#include <gdn/impl/prefill/prefill_params.hpp>
#include <gdn/impl/validate/static_checks.hpp>
#include <gdn/impl/validate/validate.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gdn {

/// \brief The workspace of recurrence_prefill: bytes in the execution space's memory.
template <class MemorySpace>
using PrefillWorkspace = Kokkos::View<unsigned char*, Kokkos::LayoutRight, MemorySpace>;

/// \brief The workspace bytes recurrence_prefill needs for calls of at most `max_tokens`
/// tokens (`inputs.qkv.extent(0)`) in at most `max_rows` rows (`state_slots.extent(0)`).
///
/// One block per (chunk of 64 tokens, value head) with the chunk's matrices; about
/// `(max_tokens / 64 + max_rows) * nv * (4 * 64 * D + 64 * 64) * 4` bytes
/// (Dk = Dv = D). The same on every backend (the host kernels do not use it).
/// \throws gdn::InvalidArgument for a bad head geometry (as recurrence_fwd).
inline std::size_t prefill_workspace_bytes(const HeadConfig& cfg, std::size_t max_tokens,
                                           std::size_t max_rows) {
  Impl::check_heads(Impl::ArgCheck("gdn::prefill_workspace_bytes"), cfg);
  return Impl::prefill_bytes(cfg, max_tokens, max_rows);
}

namespace Impl {

/// The compile-time checks of recurrence_prefill, then the launch (every overload).
template <class ExecSpace, class Inputs, class SlotsView, class StateView, class OutView,
          class WsView>
void recurrence_prefill_checked(const ExecSpace& space, const HeadConfig& cfg, const Inputs& inputs,
                                const SlotsView& state_slots, const StateView& state,
                                const OutView& out, const WsView& workspace,
                                PrefillPrecision precision) {
  using M = typename ExecSpace::memory_space;
  GDN_IMPL_STATIC_ASSERT_FWD_ARGS("gdn::recurrence_prefill", "is written", ExecSpace, Inputs,
                                  SlotsView, StateView, OutView);
  static_assert(Kokkos::is_view<WsView>::value,
                "gdn::recurrence_prefill: workspace must be a Kokkos::View");
  static_assert(unsigned(WsView::rank) == 1,
                "gdn::recurrence_prefill: workspace must have rank 1 (bytes)");
  static_assert(
      std::is_same<typename WsView::array_layout, Kokkos::LayoutRight>::value ||
          std::is_same<typename WsView::array_layout, Kokkos::LayoutLeft>::value,
      "gdn::recurrence_prefill: workspace must be contiguous (LayoutRight or LayoutLeft)");
  static_assert(!std::is_const<typename WsView::value_type>::value,
                "gdn::recurrence_prefill: workspace is written and must not be const");
  static_assert(std::is_same<typename WsView::memory_space, M>::value,
                "gdn::recurrence_prefill: workspace must live in ExecSpace::memory_space");
  using ActT = typename InputsTraits<ExecSpace, Inputs>::activation_type;
  using SP = PoolViewTraits<ExecSpace, StateView>;
  using StateT = typename SP::value_type;
  ScopedRegion region("gdn::recurrence_prefill");
  const WorkspaceView<M> ws(reinterpret_cast<unsigned char*>(workspace.data()),
                            workspace.span() * sizeof(typename WsView::value_type));
  PrefillLauncher<ExecSpace, ActT, StateT>::run(space, cfg, inputs, IndexView<M>(state_slots),
                                                PoolView<StateT, M>(state),
                                                Impl::OutView<ActT, M>(out), ws, precision);
}

}  // namespace Impl

/// \brief The recurrence over every token of every row in chunks of 64 tokens (the WY/UT
/// form), committing the state: recurrence_fwd's job for long prompts, within a tolerance.
///
/// For row b and every value head: starts from pool row `state_slots[b]`, writes `out` for
/// every token and the final state back to the same pool row, like recurrence_fwd, but
/// computes a chunk at a time (docs/design.md, "The chunked prefill"): per chunk the
/// normalised queries and keys, the cumulative log-decays, the lower-triangular system
/// `(I + L)` solved for `W` and `U`, then `D = U - W S`, the outputs `diag(G) Q^ S + P D`
/// and the next state `G_C S + Kd^T D`. Not bit-identical to recurrence_fwd: it agrees with
/// it and with a float64 evaluation within the bounds of docs/api.md. A row's bits do not
/// depend on the other rows of the batch; they do depend on where its chunks start (a row
/// split into two calls gives other bits). Its final state seeds the exact path (verify,
/// fold, recurrence_fwd) like any other state. Rows of any length, shorter than a chunk
/// too; empty rows and padding rows (`gdn::pad_slot`) read and write nothing.
/// Non-blocking: the work is enqueued on `space`; the call allocates nothing.
///
/// On CUDA the products run on tensor cores in the given `precision`; the host backends
/// compute in float32 whichever precision is given.
///
/// \param space        execution space instance (Kokkos::Cuda, Kokkos::OpenMP, Kokkos::Serial)
/// \param cfg          head geometry; Dk == Dv in {64, 128}
/// \param inputs       as recurrence_fwd: TokenInputs (decay, beta given) or GateInputs (raw
///                     gates), float or gdn::bf16 activations
/// \param state_slots  [B] pool row of each row (std::uint32_t, any of the three layouts)
/// \param state        [slots, nv, Dk, Dv] LayoutRight pool of float or gdn::bf16
/// \param out          [tokens, value_dim] of the inputs' activation type
/// \param workspace    rank-1 contiguous view (`gdn::PrefillWorkspace<M>`, or any value type)
///                     of at least `prefill_workspace_bytes(cfg, tokens, B)` bytes, 16-byte
///                     aligned; its contents are scratch, overwritten by the call
/// \param precision    PrefillPrecision::bf16 or PrefillPrecision::tf32x3 (CUDA's products)
/// \throws gdn::InvalidArgument as recurrence_fwd, and for a workspace too small or
///         misaligned (`workspace`) or a precision that is not one of the enumerators
///         (`precision`), before anything is launched.
template <class ExecSpace, class Inputs, class SlotsView, class StateView, class OutView,
          class WsView>
void recurrence_prefill(const ExecSpace& space, const HeadConfig& cfg, const Inputs& inputs,
                        const SlotsView& state_slots, const StateView& state, const OutView& out,
                        const WsView& workspace, PrefillPrecision precision) {
  Impl::recurrence_prefill_checked(space, cfg, inputs, state_slots, state, out, workspace,
                                   precision);
}

/// \brief recurrence_prefill without a workspace: allocates one of
/// `prefill_workspace_bytes(cfg, qkv.extent(0), B)` bytes in the space's memory, runs the
/// call and fences `space` before releasing it. So this overload allocates and blocks; it
/// cannot be captured in a CUDA graph. Throws as the overload above.
template <class ExecSpace, class Inputs, class SlotsView, class StateView, class OutView>
void recurrence_prefill(const ExecSpace& space, const HeadConfig& cfg, const Inputs& inputs,
                        const SlotsView& state_slots, const StateView& state, const OutView& out,
                        PrefillPrecision precision) {
  static_assert(Kokkos::is_view<SlotsView>::value,
                "gdn::recurrence_prefill: state_slots must be a Kokkos::View");
  Impl::check_heads(Impl::ArgCheck("gdn::recurrence_prefill"), cfg);
  const std::size_t bytes = Impl::prefill_bytes(cfg, inputs.qkv.extent(0), state_slots.extent(0));
  PrefillWorkspace<typename ExecSpace::memory_space> ws(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gdn::prefill_workspace"), bytes);
  recurrence_prefill(space, cfg, inputs, state_slots, state, out, ws, precision);
  space.fence();
}

}  // namespace gdn

#endif  // GDN_RECURRENCE_PREFILL_HPP
