// Explicit instantiations of the gdn prefill launchers for Kokkos::Serial (see
// include/gdn/impl/launch/prefill_launch.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/prefill_launch_impl.hpp>

#if defined(KOKKOS_ENABLE_SERIAL)
GDN_ETI_PREFILL(, Kokkos::Serial, float)
GDN_ETI_PREFILL(, Kokkos::Serial, ::gdn::bf16)
#endif
