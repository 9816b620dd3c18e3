// Explicit instantiations of the gdn launchers for Kokkos::OpenMP (see include/gdn/impl/eti.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch_impl.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
GDN_ETI_SPACE(, Kokkos::OpenMP)
#endif
