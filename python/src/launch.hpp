// The launch: the GIL released, one launch at a time, on the call's execution space (the CUDA
// instance of the caller's stream, or the host).
// Part of the module gdn._gdn (gdn_module.cpp includes it, once).

#ifndef GDN_PYTHON_LAUNCH_HPP
#define GDN_PYTHON_LAUNCH_HPP

#include <pybind11/pybind11.h>

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

#include <cstdint>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "runtime.hpp"
#include "tensors.hpp"

namespace py = pybind11;

namespace gdn_python {
namespace {

/// Held around a launch: releases the GIL (so other Python threads run during
/// a host computation) and serializes launches.
class Launching {
 public:
  Launching() : m_lock(runtime().launch_mutex) {}

 private:
  py::gil_scoped_release m_nogil;  // declared first: released before the mutex is taken
  std::lock_guard<std::mutex> m_lock;
};

/// Host seconds of `iterations` back-to-back launches of one call from C++
/// (perf/python_overhead.py compares them with the same calls from Python).
struct Timing {
  int iterations = 0;
  double issue_s = 0;  ///< until the last launch returned
  double total_s = 0;  ///< until the space was fenced after it
};

/// Launches f() once, or, for a timing, `iterations` times between fences.
template <class Exec, class F>
void launch(const Exec& space, Timing* timing, F&& f) {
  Launching held;
  if (timing == nullptr) {
    f();
    return;
  }
  space.fence();
  Kokkos::Timer timer;
  for (int i = 0; i < timing->iterations; ++i) f();
  timing->issue_s = timer.seconds();
  space.fence();
  timing->total_s = timer.seconds();
}

#if defined(KOKKOS_ENABLE_CUDA)
/// The Kokkos::Cuda of stream `handle` (created on first use, outside a graph capture).
Kokkos::Cuda cuda_space(const char* fn, std::uintptr_t handle) {
  Runtime& r = runtime();
  auto it = r.streams.find(handle);
  if (it != r.streams.end()) return it->second;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(handle);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t err = cudaStreamIsCapturing(s, &status);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    std::ostringstream msg;
    msg << fn << ": argument 'stream': cannot use CUDA stream 0x" << std::hex << handle
        << " (cudaStreamIsCapturing: " << cudaGetErrorString(err) << ")";
    throw py::value_error(msg.str());
  }
  if (status != cudaStreamCaptureStatusNone) {
    std::ostringstream msg;
    msg << fn << ": CUDA stream 0x" << std::hex << handle
        << " is used by gdn for the first time inside a CUDA graph capture; creating its "
           "Kokkos::Cuda instance synchronizes the device, which a capture forbids. Call "
           "gdn.prepare_stream(stream) (or any gdn call on that stream) before capturing.";
    throw std::runtime_error(msg.str());
  }
  return r.streams.emplace(handle, Kokkos::Cuda(s)).first->second;
}

/// Makes Kokkos's device current for the launch and restores the caller's afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&m_prev) != cudaSuccess) {
      (void)cudaGetLastError();
      m_prev = -1;
    }
    if (m_prev != device) cudaSetDevice(device);
  }
  ~DeviceGuard() {
    if (m_prev >= 0) cudaSetDevice(m_prev);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int m_prev = -1;
};
#endif

/// Runs f(space) on the call's device: the host space for CPU tensors, the
/// stream's Kokkos::Cuda for CUDA tensors.
template <class F>
void on_device(const Call& c, F&& f) {
  if (!c.on_cuda()) {
    ensure_kokkos(-1);
    f(HostExec());
    return;
  }
#if defined(KOKKOS_ENABLE_CUDA)
  ensure_kokkos(c.device().device_id);
  const int device = Kokkos::Cuda().cuda_device();
  if (device != c.device().device_id) {
    throw py::value_error(std::string(c.function()) +
                          ": the tensors are on cuda:" + std::to_string(c.device().device_id) +
                          " but gdn's Kokkos runs on cuda:" + std::to_string(device) +
                          " (one device per process)");
  }
  // Before the instance: making one (first use of a stream) sets the current device.
  DeviceGuard guard(device);
  Kokkos::Cuda space = cuda_space(c.function(), c.stream_handle());
  f(space);
#else
  throw py::value_error(std::string(c.function()) +
                        ": got CUDA tensors, but this gdn module was built against a Kokkos "
                        "without the Cuda backend");
#endif
}

}  // namespace
}  // namespace gdn_python

#endif  // GDN_PYTHON_LAUNCH_HPP
