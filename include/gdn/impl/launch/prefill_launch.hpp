#ifndef GDN_IMPL_PREFILL_LAUNCH_HPP
#define GDN_IMPL_PREFILL_LAUNCH_HPP

/// \file prefill_launch.hpp
/// \brief The compiled entry point of recurrence_prefill (declaration) and its explicit
/// instantiations: for each enabled execution space among Serial, OpenMP and Cuda, activation
/// type float and bf16, state type float and bf16 (src/eti_prefill_*.cpp). The definitions are
/// in prefill_launch_impl.hpp, which only src/ includes.

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>
#include <gdn/impl/launch/view_types.hpp>
#include <gdn/impl/prefill/prefill_params.hpp>

#include <Kokkos_Core.hpp>

namespace gdn {
namespace Impl {

/// recurrence_prefill for one (execution space, activation type, state type), for either
/// input form.
template <class ExecSpace, class ActT, class StateT>
struct PrefillLauncher {
  using M = typename ExecSpace::memory_space;
  static void run(const ExecSpace& space, const HeadConfig& cfg, const TokenInputs<M, ActT>& in,
                  const IndexView<M>& state_slots, const PoolView<StateT, M>& state,
                  const OutView<ActT, M>& out, const WorkspaceView<M>& workspace,
                  PrefillPrecision precision);
  static void run(const ExecSpace& space, const HeadConfig& cfg, const GateInputs<M, ActT>& in,
                  const IndexView<M>& state_slots, const PoolView<StateT, M>& state,
                  const OutView<ActT, M>& out, const WorkspaceView<M>& workspace,
                  PrefillPrecision precision);
};

}  // namespace Impl
}  // namespace gdn

/// The prefill launchers of one execution space and activation type ACT.
#define GDN_ETI_PREFILL(PREFIX, SPACE, ACT)                               \
  PREFIX template struct ::gdn::Impl::PrefillLauncher<SPACE, ACT, float>; \
  PREFIX template struct ::gdn::Impl::PrefillLauncher<SPACE, ACT, ::gdn::bf16>;

#if defined(KOKKOS_ENABLE_SERIAL)
GDN_ETI_PREFILL(extern, Kokkos::Serial, float)
GDN_ETI_PREFILL(extern, Kokkos::Serial, ::gdn::bf16)
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
GDN_ETI_PREFILL(extern, Kokkos::OpenMP, float)
GDN_ETI_PREFILL(extern, Kokkos::OpenMP, ::gdn::bf16)
#endif
#if defined(KOKKOS_ENABLE_CUDA)
GDN_ETI_PREFILL(extern, Kokkos::Cuda, float)
GDN_ETI_PREFILL(extern, Kokkos::Cuda, ::gdn::bf16)
#endif

#endif  // GDN_IMPL_PREFILL_LAUNCH_HPP
