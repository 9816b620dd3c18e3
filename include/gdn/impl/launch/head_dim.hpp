#ifndef GDN_IMPL_LAUNCH_HEAD_DIM_HPP
#define GDN_IMPL_LAUNCH_HEAD_DIM_HPP

/// \file head_dim.hpp
/// \brief The launchers' dispatch from a run-time head dim to a compile-time one.

#include <stdexcept>
#include <string>
#include <type_traits>

namespace gdn {
namespace Impl {

/// Calls `f(std::integral_constant<int, Dk>())` for the supported head dims
/// (64 and 128; check_heads rejects the others before any launcher gets here).
template <class F>
void with_head_dim(int dk, F&& f) {
  if (dk == 64) {
    f(std::integral_constant<int, 64>());
  } else if (dk == 128) {
    f(std::integral_constant<int, 128>());
  } else {
    throw std::logic_error("gdn: head dim " + std::to_string(dk) + " reached a launcher unchecked");
  }
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_LAUNCH_HEAD_DIM_HPP
