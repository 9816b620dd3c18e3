#ifndef GDN_CONV_INPUTS_HPP
#define GDN_CONV_INPUTS_HPP

/// \file conv_inputs.hpp
/// \brief The argument structs of the conv1d calls (conv1d.hpp) and of the
/// conv part of `gdn::state_fold`.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace gdn {

/// \brief Narrowest supported conv kernel width W.
inline constexpr int conv_min_width = 2;
/// \brief Widest supported conv kernel width W (Qwen3-Next uses 4).
inline constexpr int conv_max_width = 4;

/// \brief The inputs of one layer's conv over a ragged batch.
///
/// `T` is the activation type of the pre-conv inputs, `float` or `gdn::bf16`;
/// the conv state pool and the conv ring hold the same type, so that the
/// inputs they keep are exact copies. Sequence `b` owns the flat tokens
/// `[row_offsets[b], row_offsets[b+1])`.
template <class MemorySpace, class T = float>
struct ConvInputs {
  /// [tokens, conv_dim] the pre-conv activations: query, key, value channels
  /// in the order of TokenInputs::qkv.
  Kokkos::View<const T**, Kokkos::LayoutStride, MemorySpace> qkv;
  /// [conv_dim, W] tap `j` of channel `c`; tap `W-1` multiplies the current
  /// token, tap 0 the oldest (PyTorch's Conv1d weight `[conv_dim, 1, W]`
  /// without its middle axis). W = extent(1), 2 to 4.
  Kokkos::View<const float**, Kokkos::LayoutStride, MemorySpace> weight;
  /// [conv_dim] or empty (extent 0: no bias).
  Kokkos::View<const float*, Kokkos::LayoutStride, MemorySpace> bias;
  /// [B+1]: non-decreasing, `row_offsets[0] == 0`.
  Kokkos::View<const std::uint32_t*, Kokkos::LayoutStride, MemorySpace> row_offsets;
};

/// \brief The conv pools `gdn::state_fold` commits next to the recurrent state.
///
/// Row `state_rows(l, b)` of `conv_state` and row `ring_rows(l, b)` of
/// `conv_ring` belong to layer l, sequence b: the same tables as the
/// recurrent state and ring.
template <class MemorySpace, class T = float>
struct ConvFold {
  /// [slots, conv_dim, W-1] the conv state pool of every layer, oldest input first.
  Kokkos::View<T***, Kokkos::LayoutRight, MemorySpace> conv_state;
  /// [ring_rows, RING_LEN, >= conv_dim] the pre-conv inputs conv1d_verify_ring recorded;
  /// RING_LEN must be that of the recurrent ring.
  Kokkos::View<const T***, Kokkos::LayoutRight, MemorySpace> conv_ring;
};

}  // namespace gdn

#endif  // GDN_CONV_INPUTS_HPP
