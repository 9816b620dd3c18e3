#ifndef GDN_IMPL_SKIP_COUNTER_HPP
#define GDN_IMPL_SKIP_COUNTER_HPP

/// \file skip_counter.hpp
/// \brief The device word that counts the rows the kernels skip because an
/// index lies outside its pool (gdn::skipped_rows, checking.hpp).

#include <Kokkos_Core.hpp>

namespace gdn {
namespace Impl {

/// One counter per memory space, allocated at the first call that needs it
/// and released by a Kokkos finalize hook.
template <class M>
using SkipCounter = Kokkos::View<unsigned long long, M>;

/// The counter of memory space `M` (src/skip_counter.cpp: HostSpace, and
/// CudaSpace in a CUDA build).
template <class M>
SkipCounter<M> skip_counter();

/// One skipped row, counted from a kernel (a counter never allocated: nothing).
template <class M>
KOKKOS_INLINE_FUNCTION void count_skipped_row(const SkipCounter<M>& c) {
  if (c.data() != nullptr) Kokkos::atomic_add(c.data(), 1ull);
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_SKIP_COUNTER_HPP
