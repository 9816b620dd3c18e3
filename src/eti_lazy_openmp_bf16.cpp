// Explicit instantiations of the gdn lazy-commit launchers for Kokkos::OpenMP: the lazy verify
// with bf16 activations (see include/gdn/impl/launch/eti.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/lazy_launch_impl.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
GDN_ETI_LAZY_ACTIVATION(, Kokkos::OpenMP, ::gdn::bf16)
#endif
