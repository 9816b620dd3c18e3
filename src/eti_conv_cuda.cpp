// Explicit instantiations of the gdn conv launchers for Kokkos::Cuda
// (see include/gdn/impl/launch/conv_launch.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/conv_launch_impl.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
GDN_ETI_CONV_SPACE(, Kokkos::Cuda)
#endif
