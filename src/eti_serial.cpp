// Explicit instantiations of the gdn launchers for Kokkos::Serial: the fold, and forward and
// verify with float activations (see include/gdn/impl/launch/eti.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/launch_impl.hpp>

#if defined(KOKKOS_ENABLE_SERIAL)
GDN_ETI_ACTIVATION(, Kokkos::Serial, float)
GDN_ETI_FOLD(, Kokkos::Serial)
#endif
