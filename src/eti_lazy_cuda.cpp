// Explicit instantiations of the gdn lazy-commit launchers for Kokkos::Cuda: the flush and the
// ledger, and the lazy verify with float activations (see include/gdn/impl/launch/eti.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/lazy_launch_impl.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
GDN_ETI_LAZY_ACTIVATION(, Kokkos::Cuda, float)
GDN_ETI_LAZY_COMMIT(, Kokkos::Cuda)
#endif
