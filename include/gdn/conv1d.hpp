#ifndef GDN_CONV1D_HPP
#define GDN_CONV1D_HPP

/// \file conv1d.hpp
/// \brief The causal depthwise conv1d with SiLU in front of the recurrence:
/// `gdn::conv1d_fwd`, `gdn::conv1d_verify_ring`, their inputs (`ConvInputs`)
/// and the conv pools the fold commits (`ConvFold`, for `gdn::state_fold`).
///
/// For channel `c < conv_dim` of a sequence whose pre-conv inputs are `x[0..L-1]`
/// and whose conv state row holds the `W-1` inputs before them
/// (`conv_state(slot, c, 0)` the oldest), the history is
/// `h = (conv_state(slot, c, 0 .. W-2), x[0 .. L-1])` and token `p` gets
///
///     acc = bias[c] (0 without a bias)
///     acc = fmaf(weight(c, j), h[p + j], acc)   for j = 0 .. W-1 (oldest tap first)
///     y[p, c] = acc / (1 + exp(-acc))           (SiLU)
///
/// in float32 (bf16 inputs are widened exactly; a bf16 output is rounded to
/// nearest even), exp the library's own (impl/core/fixed_math.hpp). The forward,
/// the verify and the fold share this one order, so their results are
/// bit-identical, on every backend. The kernels are in impl/kernels/conv_kernel.hpp.

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>
#include <gdn/conv_inputs.hpp>
#include <gdn/impl/launch/conv_launch.hpp>
#include <gdn/impl/launch/profiling.hpp>
#include <gdn/impl/validate/static_checks.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace gdn {

namespace Impl {
template <class ExecSpace, class V>
struct ConvPoolTraits {
  using value_type = typename std::remove_const<typename V::value_type>::type;
  static constexpr bool rank_ok = unsigned(V::rank) == 3;
  static constexpr bool layout_ok =
      std::is_same<typename V::array_layout, Kokkos::LayoutRight>::value;
  static constexpr bool space_ok =
      std::is_same<typename V::memory_space, typename ExecSpace::memory_space>::value;
};
template <class ExecSpace, class V>
struct ConvOutTraits {
  using value_type = typename V::value_type;
  static constexpr bool rank_ok = unsigned(V::rank) == 2;
  static constexpr bool type_ok =
      std::is_same<value_type, float>::value || std::is_same<value_type, bf16>::value;
  static constexpr bool space_ok =
      std::is_same<typename V::memory_space, typename ExecSpace::memory_space>::value;
};
}  // namespace Impl

/// The compile-time checks of a conv call (FN: its name): the execution
/// space, the activation type, state_slots, the conv state and out.
#define GDN_IMPL_CONV_STATIC_CHECKS(FN, ExecSpace, T, SlotsView, ConvStateView, OutView)          \
  static_assert(Kokkos::is_execution_space<ExecSpace>::value,                                     \
                FN ": the first argument must be a Kokkos execution space instance");             \
  static_assert(Impl::IsStorageType<T>::value,                                                    \
                FN ": inputs.qkv value type must be float or gdn::bf16");                         \
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW(FN, "state_slots", 1, "[B]", ExecSpace, SlotsView);           \
  static_assert(Kokkos::is_view<ConvStateView>::value, FN ": conv_state must be a Kokkos::View"); \
  static_assert(Impl::ConvPoolTraits<ExecSpace, ConvStateView>::rank_ok,                          \
                FN ": conv_state must have rank 3 [slots, conv_dim, W-1]");                       \
  static_assert(std::is_same<typename ConvStateView::value_type, T>::value, FN                    \
                ": conv_state value type must be that of inputs.qkv (non-const: a "               \
                "commit writes it)");                                                             \
  static_assert(Impl::ConvPoolTraits<ExecSpace, ConvStateView>::layout_ok,                        \
                FN ": conv_state must be LayoutRight (a dense pool)");                            \
  static_assert(Impl::ConvPoolTraits<ExecSpace, ConvStateView>::space_ok,                         \
                FN ": conv_state must live in ExecSpace::memory_space");                          \
  static_assert(Kokkos::is_view<OutView>::value, FN ": out must be a Kokkos::View");              \
  static_assert(Impl::ConvOutTraits<ExecSpace, OutView>::rank_ok,                                 \
                FN ": out must have rank 2 [tokens, conv_dim]");                                  \
  static_assert(Impl::ConvOutTraits<ExecSpace, OutView>::type_ok,                                 \
                FN ": out value type must be (non-const) float or gdn::bf16");                    \
  static_assert(Impl::ConvOutTraits<ExecSpace, OutView>::space_ok,                                \
                FN ": out must live in ExecSpace::memory_space")

/// The compile-time checks of a conv verify (FN: its name; RING: the name of
/// its ring argument): those of a conv call, ring_slots and the ring.
#define GDN_IMPL_CONV_VERIFY_STATIC_CHECKS(FN, RING, ExecSpace, T, SlotsView, ConvStateView,   \
                                           OutView, RingSlotsView, ConvRingView)               \
  GDN_IMPL_CONV_STATIC_CHECKS(FN, ExecSpace, T, SlotsView, ConvStateView, OutView);            \
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW(FN, "ring_slots", 1, "[B]", ExecSpace, RingSlotsView);     \
  static_assert(Kokkos::is_view<ConvRingView>::value, FN ": " RING " must be a Kokkos::View"); \
  static_assert(Impl::ConvPoolTraits<ExecSpace, ConvRingView>::rank_ok,                        \
                FN ": " RING " must have rank 3 [ring_rows, positions, conv_dim]");            \
  static_assert(std::is_same<typename ConvRingView::value_type, T>::value,                     \
                FN ": " RING                                                                   \
                   " value type must be that of inputs.qkv (non-const: it is "                 \
                   "written)");                                                                \
  static_assert(Impl::ConvPoolTraits<ExecSpace, ConvRingView>::layout_ok,                      \
                FN ": " RING " must be LayoutRight");                                          \
  static_assert(Impl::ConvPoolTraits<ExecSpace, ConvRingView>::space_ok,                       \
                FN ": " RING " must live in ExecSpace::memory_space")

/// \brief Causal depthwise conv1d with SiLU over every token of every sequence; commits the
/// conv state.
///
/// For sequence b, continues from conv state row `state_slots[b]` (the same
/// index as the recurrent state's pool row), writes `out` for every token
/// and leaves in the row the last W-1 inputs of (old row, the sequence's
/// tokens): a sequence shorter than W-1 shifts the old row. An empty
/// sequence reads and writes nothing. `out` must not overlap `inputs.qkv`.
/// Non-blocking: the work is enqueued on `space`.
///
/// \param space        execution space instance
/// \param cfg          head geometry (only conv_dim = 2*nk*Dk + nv*Dv is used)
/// \param inputs       qkv [tokens, conv_dim] (float or gdn::bf16), weight [conv_dim, W],
///                     bias [conv_dim] or empty, row_offsets [B+1]
/// \param state_slots  [B] conv state row of each sequence: a std::uint32_t view, any layout
/// \param conv_state   [slots, conv_dim, W-1] LayoutRight pool of the type of qkv
/// \param out          [tokens, conv_dim] float or gdn::bf16, any layout: the post-conv qkv
/// \throws gdn::InvalidArgument for a bad geometry, W or shape, before anything is launched;
///         with index checking on (checking.hpp) also for bad offsets or slots.
template <class ExecSpace, class T, class SlotsView, class ConvStateView, class OutView>
void conv1d_fwd(const ExecSpace& space, const HeadConfig& cfg,
                const ConvInputs<typename ExecSpace::memory_space, T>& inputs,
                const SlotsView& state_slots, const ConvStateView& conv_state, const OutView& out) {
  using M = typename ExecSpace::memory_space;
  GDN_IMPL_CONV_STATIC_CHECKS("gdn::conv1d_fwd", ExecSpace, T, SlotsView, ConvStateView, OutView);
  using OT = Impl::ConvOutTraits<ExecSpace, OutView>;
  Impl::ScopedRegion region("gdn::conv1d_fwd");
  using Y = typename OT::value_type;
  Impl::ConvLauncher<ExecSpace, T, Y>::fwd(space, cfg, inputs, Impl::IndexView<M>(state_slots),
                                           Impl::ConvPool<T, M>(conv_state),
                                           Impl::ConvOut<Y, M>(out));
}

/// \brief The conv over a drafted window; records the window's inputs in a conv ring
/// instead of committing the conv state.
///
/// `out` is bit-identical to what `conv1d_fwd` writes from the same conv
/// state. A sequence of length L with 0 < L <= RING_LEN (= conv_ring.extent(1))
/// leaves its conv state row untouched and writes its pre-conv inputs
/// `conv_ring(ring_slots[b], p, c) = qkv(row_offsets[b] + p, c)` for p < L,
/// c < conv_dim (the rest of the ring row is not touched); `state_fold` with a
/// `ConvFold` later commits the accepted prefix from them. A sequence with
/// L > RING_LEN records nothing and commits its conv state as the forward
/// does (the recurrent verify commits such a row too). An empty sequence
/// touches nothing. Non-blocking.
///
/// \param space        execution space instance
/// \param cfg          head geometry (only conv_dim is used)
/// \param inputs       as for conv1d_fwd
/// \param state_slots  [B] conv state row of each sequence
/// \param conv_state   [slots, conv_dim, W-1] LayoutRight pool of the type of qkv
/// \param out          [tokens, conv_dim] float or gdn::bf16, any layout
/// \param ring_slots   [B] ring row of each sequence (the recurrent ring's index)
/// \param conv_ring    [ring_rows, RING_LEN, >= conv_dim] LayoutRight, the type of qkv
/// \throws gdn::InvalidArgument for a bad geometry, W or shape (before any launch); with
///         index checking on, also for bad offsets, slots or ring slots.
template <class ExecSpace, class T, class SlotsView, class ConvStateView, class OutView,
          class RingSlotsView, class ConvRingView>
void conv1d_verify_ring(const ExecSpace& space, const HeadConfig& cfg,
                        const ConvInputs<typename ExecSpace::memory_space, T>& inputs,
                        const SlotsView& state_slots, const ConvStateView& conv_state,
                        const OutView& out, const RingSlotsView& ring_slots,
                        const ConvRingView& conv_ring) {
  using M = typename ExecSpace::memory_space;
  GDN_IMPL_CONV_VERIFY_STATIC_CHECKS("gdn::conv1d_verify_ring", "conv_ring", ExecSpace, T,
                                     SlotsView, ConvStateView, OutView, RingSlotsView,
                                     ConvRingView);
  Impl::ScopedRegion region("gdn::conv1d_verify_ring");
  using Y = typename Impl::ConvOutTraits<ExecSpace, OutView>::value_type;
  Impl::ConvLauncher<ExecSpace, T, Y>::verify(
      space, cfg, inputs, Impl::IndexView<M>(state_slots), Impl::ConvPool<T, M>(conv_state),
      Impl::ConvOut<Y, M>(out), Impl::IndexView<M>(ring_slots), Impl::ConvPool<T, M>(conv_ring));
}

}  // namespace gdn

#endif  // GDN_CONV1D_HPP
