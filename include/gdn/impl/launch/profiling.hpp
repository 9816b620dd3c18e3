#ifndef GDN_IMPL_PROFILING_HPP
#define GDN_IMPL_PROFILING_HPP

#include <Kokkos_Core.hpp>

#include <string>

namespace gdn {
namespace Impl {

/// RAII Kokkos Tools region (Kokkos 3.4 has no Profiling::ScopedRegion).
class ScopedRegion {
 public:
  explicit ScopedRegion(const std::string& name) { Kokkos::Profiling::pushRegion(name); }
  ~ScopedRegion() { Kokkos::Profiling::popRegion(); }
  ScopedRegion(const ScopedRegion&) = delete;
  ScopedRegion& operator=(const ScopedRegion&) = delete;
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_PROFILING_HPP
