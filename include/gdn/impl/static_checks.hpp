#ifndef GDN_IMPL_STATIC_CHECKS_HPP
#define GDN_IMPL_STATIC_CHECKS_HPP

/// \file static_checks.hpp
/// \brief Compile-time checks shared by the public entry points.

#include <gdn/bf16.hpp>

#include <Kokkos_Core.hpp>

#include <type_traits>

namespace gdn {
namespace Impl {

/// A pool view (state or ring): rank 4, float or bf16, LayoutRight, in the space's memory space.
template <class ExecSpace, class V>
struct PoolViewTraits {
  static constexpr bool is_view = Kokkos::is_view<V>::value;
  using value_type = typename std::remove_const<typename V::value_type>::type;
  static constexpr bool rank_ok = unsigned(V::rank) == 4;
  static constexpr bool type_ok = IsStorageType<value_type>::value;
  static constexpr bool layout_ok =
      std::is_same<typename V::array_layout, Kokkos::LayoutRight>::value;
  static constexpr bool space_ok =
      std::is_same<typename V::memory_space, typename ExecSpace::memory_space>::value;
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_STATIC_CHECKS_HPP
