// The per-memory-space counters of rows skipped for an index out of range
// (include/gdn/impl/launch/skip_counter.hpp).
#include <gdn/impl/launch/skip_counter.hpp>

#include <mutex>

namespace gdn {
namespace Impl {

template <class M>
SkipCounter<M> skip_counter() {
  static std::mutex lock;
  static SkipCounter<M>* counter = nullptr;
  const std::lock_guard<std::mutex> guard(lock);
  if (counter == nullptr) {
    counter = new SkipCounter<M>("gdn::skipped_rows");  // zero-initialised
    Kokkos::push_finalize_hook([] {
      const std::lock_guard<std::mutex> inner(lock);
      delete counter;
      counter = nullptr;
    });
  }
  return *counter;
}

template SkipCounter<Kokkos::HostSpace> skip_counter<Kokkos::HostSpace>();
#if defined(KOKKOS_ENABLE_CUDA)
template SkipCounter<Kokkos::CudaSpace> skip_counter<Kokkos::CudaSpace>();
#endif

}  // namespace Impl
}  // namespace gdn
