#ifndef GDN_IMPL_ETI_HPP
#define GDN_IMPL_ETI_HPP

/// \file eti.hpp
/// \brief Explicit template instantiation: the supported set, compiled once in src/.
///
/// For each enabled execution space among Serial, OpenMP and Cuda, state type
/// float and bf16, ring type float and bf16. Callers see these declarations
/// and link against the library instead of compiling the kernels.

#include <gdn/bf16.hpp>
#include <gdn/impl/launch.hpp>

#include <Kokkos_Core.hpp>

#define GDN_ETI_SPACE(PREFIX, SPACE)                                           \
  PREFIX template struct ::gdn::Impl::FwdLauncher<SPACE, float>;               \
  PREFIX template struct ::gdn::Impl::FwdLauncher<SPACE, ::gdn::bf16>;         \
  PREFIX template struct ::gdn::Impl::RingLauncher<SPACE, float, float>;       \
  PREFIX template struct ::gdn::Impl::RingLauncher<SPACE, float, ::gdn::bf16>; \
  PREFIX template struct ::gdn::Impl::RingLauncher<SPACE, ::gdn::bf16, float>; \
  PREFIX template struct ::gdn::Impl::RingLauncher<SPACE, ::gdn::bf16, ::gdn::bf16>;

#if defined(KOKKOS_ENABLE_SERIAL)
GDN_ETI_SPACE(extern, Kokkos::Serial)
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
GDN_ETI_SPACE(extern, Kokkos::OpenMP)
#endif
#if defined(KOKKOS_ENABLE_CUDA)
GDN_ETI_SPACE(extern, Kokkos::Cuda)
#endif

#endif  // GDN_IMPL_ETI_HPP
