// Explicit instantiations of the gdn conv launchers for Kokkos::OpenMP
// (see include/gdn/impl/launch/conv_launch.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/conv_launch_impl.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
GDN_ETI_CONV_SPACE(, Kokkos::OpenMP)
#endif
