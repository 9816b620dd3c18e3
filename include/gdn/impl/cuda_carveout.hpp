#ifndef GDN_IMPL_CUDA_CARVEOUT_HPP
#define GDN_IMPL_CUDA_CARVEOUT_HPP

/// \file cuda_carveout.hpp
/// \brief CUDA: split each SM's unified L1 / shared memory so that the
/// resident teams' scratch fits and the rest stays L1 cache.
///
/// Kokkos 3.4 asks the driver to prefer shared memory for every kernel with
/// team scratch (`cudaFuncCachePreferShared`), which on the H200 leaves
/// 28 KiB of the SM's 256 KiB as L1. The recurrence kernels need 112-136 KiB
/// of scratch per SM at their occupancy; a register spill, or a `.ca`
/// staging copy, then misses L1 (ncu: 7 % L1 hit rate). Here each kernel's
/// preferred carveout is set once, to the shared memory its resident teams
/// need (teams per SM from the occupancy calculator, so the carveout never
/// lowers occupancy); the driver rounds it up to a supported split.
///
/// This is the one place that reaches into Kokkos internals (the kernel
/// function Kokkos launches for a ParallelFor, and Kokkos's own one-time
/// cache preference, which is applied first so that it cannot override the
/// carveout later). It is compiled for the Kokkos 3.4 series only; with any
/// other Kokkos the kernels keep Kokkos's setting. It is set once per
/// process and kernel, on the device of the first launch. A failing CUDA call
/// here leaves Kokkos's setting in place (only speed depends on it). Host
/// spaces: a no-op.

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace gdn {
namespace Impl {

template <class Kernel, class ExecSpace>
void configure_carveout(const ExecSpace&, int /*block_threads*/, long long /*shmem_bytes*/) {}

// GDN_CUDA_CARVEOUT=0 keeps Kokkos's cache preference (for measurements).
#ifndef GDN_CUDA_CARVEOUT
#define GDN_CUDA_CARVEOUT 1
#endif

#if defined(KOKKOS_ENABLE_CUDA) && KOKKOS_VERSION >= 30400 && KOKKOS_VERSION < 30500 && \
    GDN_CUDA_CARVEOUT
/// `shmem_bytes`: the dynamic shared memory Kokkos requests per team (team
/// scratch plus its own few bytes, over- rather than under-estimated).
template <class Kernel>
void configure_carveout(const Kokkos::Cuda& space, int block_threads, long long shmem_bytes) {
  using Policy = typename Kernel::Policy;
  using Driver = Kokkos::Impl::ParallelFor<Kernel, Policy, Kokkos::Cuda>;
  using Bounds = typename Policy::launch_bounds;
  constexpr auto mechanism = Kokkos::Impl::DeduceCudaLaunchMechanism<Driver>::launch_mechanism;
  static const bool configured = [&] {
    const auto func =
        Kokkos::Impl::CudaParallelLaunchKernelFunc<Driver, Bounds, mechanism>::get_kernel_func();
    // Kokkos's one-time setting (prefer shared, as its team launches ask), applied now, before
    // ours.
    Kokkos::Impl::configure_shmem_preference<Driver, Bounds>(func, true);
    int teams = 0;  // resident teams per SM with all of the shared memory
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &teams, func, block_threads, static_cast<std::size_t>(shmem_bytes)) != cudaSuccess ||
        teams < 1) {
      (void)cudaGetLastError();
      return false;
    }
    const cudaDeviceProp& prop = space.cuda_device_prop();
    cudaFuncAttributes attr;
    if (cudaFuncGetAttributes(&attr, func) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    // Per team: dynamic + static shared memory, the driver's reservation and 1 KiB of slack.
    const long long per_team = shmem_bytes + static_cast<long long>(attr.sharedSizeBytes) +
                               static_cast<long long>(prop.reservedSharedMemPerBlock) + 1024;
    const long long total = static_cast<long long>(prop.sharedMemPerMultiprocessor);
    long long percent = (teams * per_team * 100 + total - 1) / total;
    percent = percent > 100 ? 100 : percent;
    if (cudaFuncSetAttribute(func, cudaFuncAttributePreferredSharedMemoryCarveout,
                             static_cast<int>(percent)) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return true;
  }();
  (void)configured;
}
#endif

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_CUDA_CARVEOUT_HPP
