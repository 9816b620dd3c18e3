// Copy bandwidth and FP32 peak of the default execution space (see machine.hpp).
//
// copy_bw: Kokkos::deep_copy between two views of the default memory space
// (GPU: 2 x 2 GiB, host: 2 x 512 MiB), first touched by a fill, two warm-up
// copies, then the median of several timed copies; bytes = 2 x buffer size
// (read + write; a write-allocate cache's extra read is not counted).
//
// launch_floor: `fence; Kokkos::Timer; parallel_for over one item of an
// empty functor; fence`, the median of 201 samples after 20 warm-up calls:
// what every fenced benchmark sample pays besides its kernel's own work. On
// CUDA, cuda_launch_floor times an empty `<<<1, 1>>>` kernel on the same
// stream with the same fences, without Kokkos: the difference is Kokkos's
// own launch cost. launch_floor_device: of launch_floor, the GPU-side
// duration of the empty Kokkos kernel (device_time, CUDA only).
//
// device_time (CUDA): cudaEventRecord before and after the call, both queued
// behind a one-thread kernel that spins for about 100 us, so that the GPU is
// still busy when the host has issued the call and the events time the
// call's kernels alone (from the end of the spin to the end of the last
// kernel), not the host's launch latency; the median of the samples.
//
// fp32_peak: on CUDA, SMs x FP32 lanes per SM x 2 flop x peak clock, from the
// CUDA runtime (cudaDevAttrClockRate; cudaDeviceProp::clockRate is gone in
// CUDA 13). Everywhere else it is measured: every thread of the default space
// runs many independent fma chains (the compiler vectorises the chains of one
// thread), for several chain counts, and the best median is taken. The
// microkernel is run on the GPU too and reported as fp32_peak_measured, a
// sanity check of the formula.

#include "machine.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime_api.h>
#endif

#if defined(__CUDA_ARCH__)
#define GDN_BENCH_UNROLL _Pragma("unroll")
#else
#define GDN_BENCH_UNROLL
#endif

namespace gdn_bench {
namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using Mem = Exec::memory_space;

KOKKOS_INLINE_FUNCTION float fma_f(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return fmaf(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// N independent fma chains per work item; the sum keeps them alive.
template <int N>
struct FmaChains {
  Kokkos::View<float*, Mem> m_sink;  // [items]
  long m_iters = 0;
  float m_mul = 0.9999f;
  float m_add = 1e-4f;  // fixed point 1: the chains neither overflow nor go subnormal

  KOKKOS_INLINE_FUNCTION void operator()(const int item) const {
    float a[N];
    GDN_BENCH_UNROLL
    for (int k = 0; k < N; ++k) a[k] = 1.0f + 1e-3f * static_cast<float>(k + item % 7);
    for (long it = 0; it < m_iters; ++it) {
      GDN_BENCH_UNROLL
      for (int k = 0; k < N; ++k) a[k] = fma_f(a[k], m_mul, m_add);
    }
    float s = 0.0f;
    GDN_BENCH_UNROLL
    for (int k = 0; k < N; ++k) s += a[k];
    m_sink(item) = s;
  }
};

// FLOP/s of FmaChains<N> over `items` work items with `flop_per_item` flops each (median of 5).
template <int N>
double fma_rate(int items, double flop_per_item) {
  FmaChains<N> f;
  f.m_sink = Kokkos::View<float*, Mem>("gdn_bench::fma_sink", items);
  f.m_iters = std::max(1L, static_cast<long>(flop_per_item / (2.0 * N)));
  const double flops = 2.0 * N * static_cast<double>(f.m_iters) * items;
  Exec space;
  Kokkos::RangePolicy<Exec> policy(space, 0, items);
  Kokkos::parallel_for("gdn_bench::fma_chains", policy, f);  // warm-up
  space.fence();
  std::vector<double> t;
  for (int r = 0; r < 5; ++r) {
    space.fence();
    Kokkos::Timer timer;
    Kokkos::parallel_for("gdn_bench::fma_chains", policy, f);
    space.fence();
    t.push_back(timer.seconds());
  }
  return flops / median(t);
}

double measured_fp32_peak(bool host, int concurrency) {
  if (host) {
    // One item per thread; 16 zmm (or 32 ymm) chains cover FMA latency x ports.
    const int items = concurrency;
    const double per_item = 4e9;
    return std::max({fma_rate<64>(items, per_item), fma_rate<128>(items, per_item),
                     fma_rate<256>(items, per_item)});
  }
  const int items = 4 * concurrency;  // a few waves of resident threads
  const double per_item = 2e12 / items;
  return std::max(fma_rate<8>(items, per_item), fma_rate<16>(items, per_item));
}

struct EmptyKernel {
  KOKKOS_INLINE_FUNCTION void operator()(const int) const {}
};

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)
__global__ void empty_cuda_kernel() {}

// Spins one thread for `cycles` SM clocks: work for the next commands to queue behind.
__global__ void spin_cuda_kernel(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}
#endif

std::size_t copy_buffer_bytes(bool host) {
  return host ? (std::size_t(512) << 20) : (std::size_t(2) << 30);
}

}  // namespace

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

double measure_copy_bw(bool host) {
  const std::size_t bytes = copy_buffer_bytes(host);
  const std::size_t n = bytes / sizeof(float);
  Kokkos::View<float*, Mem> src(
      Kokkos::view_alloc("gdn_bench::copy_src", Kokkos::WithoutInitializing), n);
  Kokkos::View<float*, Mem> dst(
      Kokkos::view_alloc("gdn_bench::copy_dst", Kokkos::WithoutInitializing), n);
  Kokkos::deep_copy(src, 1.0f);  // first touch
  Kokkos::deep_copy(dst, 0.0f);
  Exec().fence();
  double returned = 0;  // not reported
  const double t = fenced_median([&] { Kokkos::deep_copy(dst, src); }, returned, 11, 2);
  return 2.0 * static_cast<double>(bytes) / t;
}

double fenced_median(const std::function<void()>& call, double& host, int samples, int warmup) {
  Exec space;
  for (int w = 0; w < warmup; ++w) call();
  space.fence();
  std::vector<double> t, h;
  for (int r = 0; r < samples; ++r) {
    space.fence();
    Kokkos::Timer timer;
    call();
    h.push_back(timer.seconds());
    space.fence();
    t.push_back(timer.seconds());
  }
  host = median(h);
  return median(t);
}

double device_time(const std::function<void()>& call, int samples) {
#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)
  if (!std::is_same<Exec, Kokkos::Cuda>::value || samples <= 0) return 0;
  const cudaStream_t stream = Kokkos::Cuda().cuda_stream();
  int khz = 0;
  if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, Kokkos::Cuda().cuda_device()) !=
          cudaSuccess ||
      khz <= 0)
    khz = 2000000;
  const long long spin = 100LL * khz / 1000;  // about 100 us at the peak clock, longer below it
  cudaEvent_t before, after;
  if (cudaEventCreate(&before) != cudaSuccess) return 0;
  if (cudaEventCreate(&after) != cudaSuccess) {
    cudaEventDestroy(before);
    return 0;
  }
  std::vector<double> t;
  bool ok = true;
  for (int r = 0; r < samples && ok; ++r) {
    Kokkos::fence();
    spin_cuda_kernel<<<1, 1, 0, stream>>>(spin);
    ok = cudaEventRecord(before, stream) == cudaSuccess;
    call();
    ok = ok && cudaEventRecord(after, stream) == cudaSuccess &&
         cudaEventSynchronize(after) == cudaSuccess;
    float ms = 0;
    ok = ok && cudaEventElapsedTime(&ms, before, after) == cudaSuccess;
    t.push_back(1e-3 * ms);
  }
  cudaEventDestroy(before);
  cudaEventDestroy(after);
  Kokkos::fence();
  if (!ok || cudaGetLastError() != cudaSuccess) return 0;
  return median(t);
#else
  (void)call;
  (void)samples;
  return 0;
#endif
}

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 10, "model name") == 0) {
      const std::size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::size_t b = line.find_first_not_of(" \t", colon + 1);
        return b == std::string::npos ? std::string("unknown CPU") : line.substr(b);
      }
    }
  }
  return "unknown CPU";
}

#if defined(KOKKOS_ENABLE_CUDA)
// FP32 lanes per SM: 64 on sm_60, sm_70/72/75 and sm_80 (A100), 128 on the others
// from Maxwell on (sm_61, sm_86/89, sm_90 H100/H200, sm_100/120).
int fp32_lanes_per_sm(int major, int minor) {
  if ((major == 6 && minor == 0) || major == 7 || (major == 8 && minor == 0)) return 64;
  return 128;
}

bool cuda_peak(Machine& m) {
  const int dev = Kokkos::Cuda().cuda_device();
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, dev) == cudaSuccess) m.device = prop.name;
  int sms = 0, khz = 0, major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess ||
      sms <= 0 || khz <= 0) {
    return false;
  }
  const int lanes = fp32_lanes_per_sm(major, minor);
  m.fp32_peak = double(sms) * lanes * 2.0 * double(khz) * 1e3;
  m.fp32_peak_method = std::to_string(sms) + " SMs x " + std::to_string(lanes) +
                       " FP32 lanes x 2 flop x " + std::to_string(khz / 1000) + " MHz (sm_" +
                       std::to_string(major) + std::to_string(minor) + ", cudaDevAttrClockRate)";
  return true;
}
#endif

}  // namespace

Machine measure_machine() {
  Machine m;
  m.backend = Exec::name();
  m.concurrency = Exec().concurrency();  // static in Kokkos 3, a member in 4
  m.host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
  m.device = m.host ? cpu_model() : std::string("unknown device");
  m.copy_bytes = static_cast<double>(copy_buffer_bytes(m.host));
  m.copy_bw = measure_copy_bw(m.host);
  m.fp32_peak_measured = measured_fp32_peak(m.host, m.concurrency);
  {
    Exec space;
    const auto empty_launch = [&] {
      Kokkos::parallel_for("gdn_bench::empty", Kokkos::RangePolicy<Exec>(space, 0, 1),
                           EmptyKernel{});
    };
    m.launch_floor = fenced_median(empty_launch, m.launch_host);
#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDACC__)
    if (std::is_same<Exec, Kokkos::Cuda>::value) {
      const cudaStream_t stream = Kokkos::Cuda().cuda_stream();
      m.cuda_launch_floor =
          fenced_median([&] { empty_cuda_kernel<<<1, 1, 0, stream>>>(); }, m.cuda_launch_host);
      if (cudaGetLastError() != cudaSuccess) m.cuda_launch_floor = 0;  // not reported
    }
#endif
    m.launch_floor_device = device_time(empty_launch, 101);
  }
  bool computed = false;
#if defined(KOKKOS_ENABLE_CUDA)
  if (std::is_same<Exec, Kokkos::Cuda>::value) computed = cuda_peak(m);
#endif
  if (!computed) {
    m.fp32_peak = m.fp32_peak_measured;
    m.fp32_peak_method =
        "measured: independent fma chains on " + std::to_string(m.concurrency) + " threads";
  }
  return m;
}

}  // namespace gdn_bench
