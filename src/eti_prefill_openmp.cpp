// Explicit instantiations of the gdn prefill launchers for Kokkos::OpenMP (see
// include/gdn/impl/launch/prefill_launch.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/prefill_launch_impl.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
GDN_ETI_PREFILL(, Kokkos::OpenMP, float)
GDN_ETI_PREFILL(, Kokkos::OpenMP, ::gdn::bf16)
#endif
