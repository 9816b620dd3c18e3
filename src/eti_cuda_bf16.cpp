// Explicit instantiations of the gdn launchers for Kokkos::Cuda: forward and verify with
// bf16 activations (see include/gdn/impl/launch/eti.hpp).
#include <gdn/gdn.hpp>
#include <gdn/impl/launch/launch_impl.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
GDN_ETI_ACTIVATION(, Kokkos::Cuda, ::gdn::bf16)
#endif
