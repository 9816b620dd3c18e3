// Explicit instantiations of the gdn lazy-commit launchers for Kokkos::Serial: the lazy verify
// with bf16 activations (see include/gdn/impl/launch/eti.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/lazy_launch_impl.hpp>

#if defined(KOKKOS_ENABLE_SERIAL)
GDN_ETI_LAZY_ACTIVATION(, Kokkos::Serial, ::gdn::bf16)
#endif
