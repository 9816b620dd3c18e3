#ifndef GDN_PERF_MACHINE_HPP
#define GDN_PERF_MACHINE_HPP

// The two limits every benchmark result is divided by, measured (or, for the
// GPU's FP32 peak, computed) in the same run as the benchmarks themselves.
// See bench_gdn.cpp for the method.

#include <functional>
#include <string>
#include <vector>

namespace gdn_bench {

struct Machine {
  std::string backend;    // Kokkos::DefaultExecutionSpace::name()
  std::string device;     // GPU name, or the CPU model on the host
  int concurrency = 0;    // threads (host) or resident threads (GPU) of the default space
  bool host = true;       // the default memory space is host memory
  double copy_bw = 0;     // bytes/s of a large deep_copy, read + write counted, median
  double copy_bytes = 0;  // size of one copy buffer (bytes)
  double fp32_peak = 0;   // FLOP/s used as the compute roof
  std::string fp32_peak_method;
  double fp32_peak_measured = 0;  // FLOP/s of the FMA-chain microkernel (always measured)
  // The fixed cost of one timed call, measured like the cases (fence; timer; call; fence),
  // median: an empty Kokkos kernel (one work item), and on CUDA an empty <<<1, 1>>> kernel
  // launched without Kokkos (0 elsewhere). Seconds.
  double launch_floor = 0;
  double cuda_launch_floor = 0;
  // Of those, the median time until the launch call returned (host side), seconds.
  double launch_host = 0;
  double cuda_launch_host = 0;
  // Of launch_floor, the GPU-side duration of the empty Kokkos kernel (device_time; CUDA only,
  // else 0), seconds.
  double launch_floor_device = 0;
};

/// The median of `v` (the mean of the middle two for an even count; 0 when empty).
double median(std::vector<double> v);

/// Measure the default execution space's copy bandwidth and FP32 FMA peak.
/// Needs Kokkos to be initialized; allocates and frees its own buffers.
Machine measure_machine();

/// Median seconds of `fence; timer; call(); fence` over `samples` samples
/// after `warmup` calls, and in `host` the median time until call() returned.
double fenced_median(const std::function<void()>& call, double& host, int samples = 201,
                     int warmup = 20);

/// CUDA: the GPU-side duration of the work `call` enqueues on the default
/// instance's stream (seconds, median of `samples`): CUDA events recorded
/// just before and after `call`, both queued behind a kernel that spins for
/// about 100 us, so that the first event is not timestamped while the GPU
/// waits for the host to issue the launch. What a fenced sample takes beyond
/// it is launch, synchronisation and host work. 0 on other backends.
double device_time(const std::function<void()>& call, int samples);

/// The copy bandwidth measurement alone (bytes/s), e.g. again after the benchmarks as a drift
/// check.
double measure_copy_bw(bool host);

}  // namespace gdn_bench

#endif  // GDN_PERF_MACHINE_HPP
