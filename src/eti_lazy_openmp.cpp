// Explicit instantiations of the gdn lazy-commit launchers for Kokkos::OpenMP: the flush and the
// ledger, and the lazy verify with float activations (see include/gdn/impl/launch/eti.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/lazy_launch_impl.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
GDN_ETI_LAZY_ACTIVATION(, Kokkos::OpenMP, float)
GDN_ETI_LAZY_COMMIT(, Kokkos::OpenMP)
#endif
