#ifndef GDN_IMPL_CUDA_LAUNCH_HPP
#define GDN_IMPL_CUDA_LAUNCH_HPP

/// \file cuda_launch.hpp
/// \brief The CUDA backend's plain kernel launch: a persistent team kernel
/// started on the execution space instance's stream with more team scratch
/// than Kokkos 3.4's TeamPolicy grants (48 KiB, less its own share).
///
/// The kernel object is the same functor a TeamPolicy would run: its
/// `operator()(const Team&)` reads the team through `team_rank`,
/// `league_rank`, `league_size`, `team_barrier` and `scratch`, which
/// CudaTeam maps onto the block (a team is one thread block, the league the
/// grid). Validation, Views and the explicit instantiations stay in Kokkos;
/// the launch reports to Kokkos Tools like a parallel_for of the same label.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)

namespace gdn {
namespace Impl {

/// A team of a plain launch: the thread block.
struct CudaTeam {
  __device__ int team_rank() const { return static_cast<int>(threadIdx.x); }
  __device__ int league_rank() const { return static_cast<int>(blockIdx.x); }
  __device__ int league_size() const { return static_cast<int>(gridDim.x); }
  __device__ void team_barrier() const { __syncthreads(); }
  /// The team's dynamic shared memory (16-byte aligned).
  __device__ float* scratch() const {
    extern __shared__ float4 gdn_team_scratch[];
    return reinterpret_cast<float*>(gdn_team_scratch);
  }
};

template <class Kernel>
__global__ void __launch_bounds__(Kernel::kThreads, Kernel::kMinTeams)
    plain_team_kernel(const Kernel kernel) {
  kernel(CudaTeam{});
}

/// Runs `kernel` (a copy of it, by value) with `league` blocks of
/// Kernel::kThreads threads and Kernel::scratch_bytes() of shared memory on
/// `space`'s stream. Launch failures throw std::runtime_error naming `label`.
template <class Kernel>
void launch_plain(const std::string& label, const Kokkos::Cuda& space, const Kernel& kernel,
                  long long league) {
  static_assert(sizeof(Kernel) <= 4096, "the kernel object travels as a launch parameter");
  const int smem = Kernel::scratch_bytes();
  static const cudaError_t configured = cudaFuncSetAttribute(
      plain_team_kernel<Kernel>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (configured != cudaSuccess) {
    throw std::runtime_error(label + ": cannot grant " + std::to_string(smem) +
                " bytes of shared memory per team: " + cudaGetErrorString(configured));
  }
  std::uint64_t id = 0;
  if (Kokkos::Profiling::profileLibraryLoaded()) {
    Kokkos::Profiling::beginParallelFor(label, Kokkos::Profiling::Experimental::device_id(space),
                                        &id);
  }
  plain_team_kernel<Kernel><<<static_cast<unsigned>(league), Kernel::kThreads, smem,
                              space.cuda_stream()>>>(kernel);
  const cudaError_t launched = cudaGetLastError();
  if (Kokkos::Profiling::profileLibraryLoaded()) Kokkos::Profiling::endParallelFor(id);
  if (launched != cudaSuccess) {
    throw std::runtime_error(label + ": the launch failed: " + cudaGetErrorString(launched));
  }
}

}  // namespace Impl
}  // namespace gdn

#endif  // KOKKOS_ENABLE_CUDA && __CUDACC__

#endif  // GDN_IMPL_CUDA_LAUNCH_HPP
