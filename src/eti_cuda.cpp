// Explicit instantiations of the gdn launchers for Kokkos::Cuda (see include/gdn/impl/eti.hpp).
#include <gdn/gdn.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
GDN_ETI_SPACE(, Kokkos::Cuda)
#endif

#if defined(KOKKOS_ENABLE_CUDA)
namespace gdn {
namespace Impl {
int cuda_multiprocessors(const Kokkos::Cuda& space) {
  int n = 0;  // cheap to query; no cache, so it is thread-safe and follows the instance's device
  if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, space.cuda_device()) != cudaSuccess || n <= 0) {
    n = 1;
  }
  return n;
}
}  // namespace Impl
}  // namespace gdn
#endif
