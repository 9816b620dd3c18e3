// Explicit instantiations of the gdn conv launchers for Kokkos::Serial
// (see include/gdn/impl/launch/conv_launch.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/conv_launch_impl.hpp>

#if defined(KOKKOS_ENABLE_SERIAL)
GDN_ETI_CONV_SPACE(, Kokkos::Serial)
#endif
