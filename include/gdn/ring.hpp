#ifndef GDN_RING_HPP
#define GDN_RING_HPP

/// \file ring.hpp
/// \brief The ring record layout written by `recurrence_verify_ring` and read by `state_fold`.
///
/// One record per (token position p, key head kh), `ring[row, kh, p, 0 : record_stride)`:
///
///     [0, Dk)                          raw key k (un-normalised)
///     [Dk + g*Dv, Dk + (g+1)*Dv)       delta factors u of group position g, g < G
///     Dk + G*Dv + g                    decay of group position g
///     [ring_record_elements, record_stride)   padding, never read or written
///
/// `gdn::RingLayout` gives these offsets.

#include <Kokkos_Macros.hpp>

#include <cstddef>

namespace gdn {

/// \brief Elements one ring record needs: `Dk + G*(Dv + 1)`.
constexpr std::size_t ring_record_elements(int key_head_dim, int value_head_dim, int group_size) {
  return static_cast<std::size_t>(key_head_dim) +
         static_cast<std::size_t>(group_size) * (static_cast<std::size_t>(value_head_dim) + 1);
}

/// \brief Offsets inside one ring record (see the file comment): the one
/// definition the kernels, the tests and callers use.
struct RingLayout {
  int key_head_dim;
  int value_head_dim;
  int group_size;
  /// first element of the raw key
  KOKKOS_INLINE_FUNCTION constexpr int key_offset() const { return 0; }
  /// first delta factor of group position g
  KOKKOS_INLINE_FUNCTION constexpr int delta_offset(int g) const {
    return key_head_dim + g * value_head_dim;
  }
  /// the decay of group position g
  KOKKOS_INLINE_FUNCTION constexpr int decay_offset(int g) const {
    return key_head_dim + group_size * value_head_dim + g;
  }
  /// elements used by one record
  KOKKOS_INLINE_FUNCTION constexpr int elements() const {
    return key_head_dim + group_size * (value_head_dim + 1);
  }
};

namespace Experimental {
/// The name of RingLayout before it was stable.
using RingLayout [[deprecated("use gdn::RingLayout")]] = gdn::RingLayout;
}  // namespace Experimental

}  // namespace gdn

#endif  // GDN_RING_HPP
