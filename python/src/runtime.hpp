// Kokkos's lifetime in the module and the per-stream CUDA instances.
// Part of the module gdn._gdn (gdn_module.cpp includes it, once).

#ifndef GDN_PYTHON_RUNTIME_HPP
#define GDN_PYTHON_RUNTIME_HPP

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace gdn_python {
namespace {

using HostExec = Kokkos::DefaultHostExecutionSpace;

struct Runtime {
  bool initialized_here = false;  // Kokkos::initialize was called by this module
  std::mutex launch_mutex;        // one gdn launch at a time (Kokkos host spaces are not reentrant)
#if defined(KOKKOS_ENABLE_CUDA)
  // One Kokkos::Cuda per stream handle, created on the stream's first use and
  // kept until exit: creating one synchronizes the device and allocates
  // (Kokkos 3.4), so it can be neither per call nor inside a graph capture.
  std::map<std::uintptr_t, Kokkos::Cuda> streams;
#endif
};

Runtime& runtime() {
  static Runtime* r = new Runtime;  // never destroyed: the atexit hook may run late
  return *r;
}

/// Initializes Kokkos once, unless the host program already has. `cuda_device`:
/// the device of the first call's CUDA tensors (-1: the calling thread's current device).
void ensure_kokkos(int cuda_device) {
  if (Kokkos::is_initialized()) return;
  std::vector<std::string> args{"gdn"};
#if defined(KOKKOS_ENABLE_CUDA)
  if (cuda_device < 0 && cudaGetDevice(&cuda_device) != cudaSuccess) {
    (void)cudaGetLastError();
    cuda_device = 0;
  }
  args.push_back("--kokkos-device-id=" + std::to_string(cuda_device));
#else
  (void)cuda_device;
#endif
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  Kokkos::initialize(argc, argv.data());
  runtime().initialized_here = true;
}

/// Registered with Python's atexit: drops the CUDA instances, then finalizes
/// Kokkos if this module initialized it.
void finalize_at_exit() {
  Runtime& r = runtime();
#if defined(KOKKOS_ENABLE_CUDA)
  r.streams.clear();
#endif
  if (r.initialized_here && Kokkos::is_initialized()) Kokkos::finalize();
  r.initialized_here = false;
}

}  // namespace
}  // namespace gdn_python

#endif  // GDN_PYTHON_RUNTIME_HPP
