// Explicit instantiations of the gdn prefill launchers for Kokkos::Cuda (see
// include/gdn/impl/launch/prefill_launch.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/prefill_launch_impl.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
GDN_ETI_PREFILL(, Kokkos::Cuda, float)
GDN_ETI_PREFILL(, Kokkos::Cuda, ::gdn::bf16)
#endif
