// Explicit instantiations of the gdn launchers for Kokkos::Cuda (see include/gdn/impl/eti.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch_impl.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
GDN_ETI_SPACE(, Kokkos::Cuda)
#endif
