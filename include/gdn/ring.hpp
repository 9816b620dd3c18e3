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
/// The layout is experimental: it may change between minor versions.

#include <cstddef>

namespace gdn {

/// \brief Elements one ring record needs: `Dk + G*(Dv + 1)`.
constexpr std::size_t ring_record_elements(int key_head_dim, int value_head_dim, int group_size) {
  return static_cast<std::size_t>(key_head_dim) +
         static_cast<std::size_t>(group_size) * (static_cast<std::size_t>(value_head_dim) + 1);
}

namespace Experimental {
/// \brief Offsets inside one ring record (see the file comment).
struct RingLayout {
  int key_head_dim;
  int value_head_dim;
  int group_size;
  /// first element of the raw key
  constexpr std::size_t key_offset() const { return 0; }
  /// first delta factor of group position g
  constexpr std::size_t delta_offset(int g) const {
    return static_cast<std::size_t>(key_head_dim) + static_cast<std::size_t>(g) * value_head_dim;
  }
  /// the decay of group position g
  constexpr std::size_t decay_offset(int g) const {
    return static_cast<std::size_t>(key_head_dim) +
           static_cast<std::size_t>(group_size) * value_head_dim + g;
  }
  /// elements used by one record
  constexpr std::size_t elements() const {
    return ring_record_elements(key_head_dim, value_head_dim, group_size);
  }
};
}  // namespace Experimental

}  // namespace gdn

#endif  // GDN_RING_HPP
