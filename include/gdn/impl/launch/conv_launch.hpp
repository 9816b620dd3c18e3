#ifndef GDN_IMPL_CONV_LAUNCH_HPP
#define GDN_IMPL_CONV_LAUNCH_HPP

/// \file conv_launch.hpp
/// \brief The compiled entry points behind the conv1d calls: ConvLauncher's
/// declarations and the list of its explicit instantiations.
///
/// - `fwd`: conv1d_fwd; `verify`: conv1d_verify_ring; `verify_lazy`:
///   conv1d_verify_lazy (conv1d.hpp). Each validates on the host, packs a
///   ConvParams (conv_params.hpp) and launches ConvKernel (conv_kernel.hpp).
/// - The conv part of `state_fold` and `state_flush` runs in the fold kernel
///   (fold_kernel.hpp), which calls the conv kernel's commit routine.
/// - Defined in conv_launch_impl.hpp, which only src/ includes; instantiated in
///   src/eti_conv_*.cpp for each enabled execution space, activation type
///   (float, bf16) and output type (float, bf16).

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>
#include <gdn/impl/launch/conv_params.hpp>  // ConvInputs, the conv pools, the index views

#include <cstddef>

namespace gdn {
namespace Impl {

/// conv1d_fwd, conv1d_verify_ring and conv1d_verify_lazy for one (execution space, activation
/// type, output type).
template <class ExecSpace, class T, class Y>
struct ConvLauncher {
  using M = typename ExecSpace::memory_space;
  static void fwd(const ExecSpace& space, const HeadConfig& cfg, const ConvInputs<M, T>& in,
                  const IndexView<M>& state_slots, const ConvPool<T, M>& conv_state,
                  const ConvOut<Y, M>& out);
  static void verify(const ExecSpace& space, const HeadConfig& cfg, const ConvInputs<M, T>& in,
                     const IndexView<M>& state_slots, const ConvPool<T, M>& conv_state,
                     const ConvOut<Y, M>& out, const IndexView<M>& ring_slots,
                     const ConvPool<T, M>& conv_ring);
  static void verify_lazy(const ExecSpace& space, const HeadConfig& cfg, const ConvInputs<M, T>& in,
                          const IndexView<M>& state_slots, const ConvPool<T, M>& conv_state,
                          const ConvOut<Y, M>& out, const IndexView<M>& ring_slots,
                          const ConvPool<T, M>& conv_history, std::size_t capacity,
                          const Ledger<M>& ledger);
};

}  // namespace Impl
}  // namespace gdn

#define GDN_ETI_CONV_SPACE(PREFIX, SPACE)                                      \
  PREFIX template struct ::gdn::Impl::ConvLauncher<SPACE, float, float>;       \
  PREFIX template struct ::gdn::Impl::ConvLauncher<SPACE, float, ::gdn::bf16>; \
  PREFIX template struct ::gdn::Impl::ConvLauncher<SPACE, ::gdn::bf16, float>; \
  PREFIX template struct ::gdn::Impl::ConvLauncher<SPACE, ::gdn::bf16, ::gdn::bf16>;

#if defined(KOKKOS_ENABLE_SERIAL)
GDN_ETI_CONV_SPACE(extern, Kokkos::Serial)
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
GDN_ETI_CONV_SPACE(extern, Kokkos::OpenMP)
#endif
#if defined(KOKKOS_ENABLE_CUDA)
GDN_ETI_CONV_SPACE(extern, Kokkos::Cuda)
#endif

#endif  // GDN_IMPL_CONV_LAUNCH_HPP
