// Explicit instantiations of the gdn launchers for Kokkos::Serial (see include/gdn/impl/eti.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch_impl.hpp>

#if defined(KOKKOS_ENABLE_SERIAL)
GDN_ETI_SPACE(, Kokkos::Serial)
#endif
