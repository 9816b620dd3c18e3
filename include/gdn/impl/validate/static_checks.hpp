#ifndef GDN_IMPL_STATIC_CHECKS_HPP
#define GDN_IMPL_STATIC_CHECKS_HPP

/// \file static_checks.hpp
/// \brief Compile-time checks shared by the public entry points.

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
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

/// An index view (slots, offsets, row tables, num_accepted): rank `Rank`,
/// std::uint32_t (const or not), LayoutLeft, LayoutRight or LayoutStride, in the
/// space's memory space. For a type that is not a view only `is_view` fails, so
/// the compiler reports that one message.
template <class ExecSpace, class V, unsigned Rank, bool = Kokkos::is_view<V>::value>
struct IndexViewTraits {
  static constexpr bool is_view = false;
  static constexpr bool rank_ok = true;
  static constexpr bool type_ok = true;
  static constexpr bool layout_ok = true;
  static constexpr bool space_ok = true;
};

template <class ExecSpace, class V, unsigned Rank>
struct IndexViewTraits<ExecSpace, V, Rank, true> {
  using layout = typename V::array_layout;
  static constexpr bool is_view = true;
  static constexpr bool rank_ok = unsigned(V::rank) == Rank;
  static constexpr bool type_ok =
      std::is_same<typename V::non_const_value_type, std::uint32_t>::value;
  static constexpr bool layout_ok = std::is_same<layout, Kokkos::LayoutLeft>::value ||
                                    std::is_same<layout, Kokkos::LayoutRight>::value ||
                                    std::is_same<layout, Kokkos::LayoutStride>::value;
  static constexpr bool space_ok =
      std::is_same<typename V::memory_space, typename ExecSpace::memory_space>::value;
};

/// The `inputs` argument of forward and verify: a TokenInputs or GateInputs
/// (of any memory space and activation type; `space_ok` says whether it is
/// the execution space's).
template <class ExecSpace, class Inputs>
struct InputsTraits {
  static constexpr bool is_inputs = false;
  static constexpr bool space_ok = true;
  using activation_type = float;
};
template <class ExecSpace, class M, class ActT>
struct InputsTraits<ExecSpace, TokenInputs<M, ActT>> {
  static constexpr bool is_inputs = true;
  static constexpr bool space_ok = std::is_same<M, typename ExecSpace::memory_space>::value;
  using activation_type = ActT;
};
template <class ExecSpace, class M, class ActT>
struct InputsTraits<ExecSpace, GateInputs<M, ActT>> {
  static constexpr bool is_inputs = true;
  static constexpr bool space_ok = std::is_same<M, typename ExecSpace::memory_space>::value;
  using activation_type = ActT;
};

/// The overloads of forward and verify for every input other than float
/// TokenInputs (whose overload keeps the original, non-template parameter,
/// so that a braced list or a type converting to it still works there).
template <class ExecSpace, class Inputs>
using EnableIfOtherInputs = std::enable_if_t<
    !std::is_same<Inputs, TokenInputs<typename ExecSpace::memory_space, float>>::value, int>;

}  // namespace Impl
}  // namespace gdn

/// The static_asserts of one index argument of a public function: FUNC and ARG
/// are string literals (the function and the argument), SHAPE its shape in
/// docs/design.md's symbols, V its type. Index views of any of the three layouts are
/// accepted on every backend: the function converts them to the LayoutStride
/// views of params.hpp (Impl::IndexView, Impl::IndexTable).
#define GDN_IMPL_STATIC_ASSERT_INDEX_VIEW(FUNC, ARG, RANK, SHAPE, ExecSpace, V)    \
  static_assert(::gdn::Impl::IndexViewTraits<ExecSpace, V, RANK>::is_view,         \
                FUNC ": " ARG " must be a Kokkos::View");                          \
  static_assert(::gdn::Impl::IndexViewTraits<ExecSpace, V, RANK>::rank_ok,         \
                FUNC ": " ARG " must have rank " #RANK " " SHAPE);                 \
  static_assert(::gdn::Impl::IndexViewTraits<ExecSpace, V, RANK>::type_ok,         \
                FUNC ": " ARG " value type must be std::uint32_t (const or not)"); \
  static_assert(::gdn::Impl::IndexViewTraits<ExecSpace, V, RANK>::layout_ok,       \
                FUNC ": " ARG " must be LayoutLeft, LayoutRight or LayoutStride"); \
  static_assert(::gdn::Impl::IndexViewTraits<ExecSpace, V, RANK>::space_ok,        \
                FUNC ": " ARG " must live in ExecSpace::memory_space")

/// The compile-time checks of a pool argument (a state or ring pool), by
/// PoolViewTraits: a View of rank 4 (SHAPE), float or gdn::bf16, LayoutRight,
/// in the space's memory space.
#define GDN_IMPL_STATIC_ASSERT_POOL_VIEW(FUNC, ARG, SHAPE, ExecSpace, V)             \
  static_assert(Kokkos::is_view<V>::value, FUNC ": " ARG " must be a Kokkos::View"); \
  static_assert(::gdn::Impl::PoolViewTraits<ExecSpace, V>::rank_ok,                  \
                FUNC ": " ARG " must have rank 4 " SHAPE);                           \
  static_assert(::gdn::Impl::PoolViewTraits<ExecSpace, V>::type_ok,                  \
                FUNC ": " ARG " value type must be float or gdn::bf16");             \
  static_assert(::gdn::Impl::PoolViewTraits<ExecSpace, V>::layout_ok,                \
                FUNC ": " ARG " must be LayoutRight (a dense pool)");                \
  static_assert(::gdn::Impl::PoolViewTraits<ExecSpace, V>::space_ok,                 \
                FUNC ": " ARG " must live in ExecSpace::memory_space")

/// A pool the call writes: its value type must not be const (WHY: when it is written).
#define GDN_IMPL_STATIC_ASSERT_WRITABLE(FUNC, ARG, WHY, V)     \
  static_assert(!std::is_const<typename V::value_type>::value, \
                FUNC ": " ARG " " WHY " and must not be const")

/// The compile-time checks of a forward's arguments (FUNC: the call's name;
/// STATE_WHY: why the state must be writable): the execution space, the
/// inputs, state_slots, the state pool and out.
#define GDN_IMPL_STATIC_ASSERT_FWD_ARGS(FUNC, STATE_WHY, ExecSpace, Inputs, SlotsView, StateView,  \
                                        OutView)                                                   \
  static_assert(Kokkos::is_execution_space<ExecSpace>::value,                                      \
                FUNC ": the first argument must be a Kokkos execution space instance");            \
  static_assert(::gdn::Impl::InputsTraits<ExecSpace, Inputs>::is_inputs,                           \
                FUNC ": inputs must be a gdn::TokenInputs or a gdn::GateInputs");                  \
  static_assert(::gdn::Impl::InputsTraits<ExecSpace, Inputs>::space_ok,                            \
                FUNC ": inputs must live in ExecSpace::memory_space");                             \
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW(FUNC, "state_slots", 1, "[B]", ExecSpace, SlotsView);          \
  GDN_IMPL_STATIC_ASSERT_POOL_VIEW(FUNC, "state", "[slots, nv, Dk, Dv]", ExecSpace, StateView);    \
  GDN_IMPL_STATIC_ASSERT_WRITABLE(FUNC, "state", STATE_WHY, StateView);                            \
  static_assert(Kokkos::is_view<OutView>::value, FUNC ": out must be a Kokkos::View");             \
  static_assert(unsigned(OutView::rank) == 2, FUNC ": out must have rank 2 [tokens, value_dim]");  \
  static_assert(                                                                                   \
      std::is_same<typename OutView::value_type,                                                   \
                   typename ::gdn::Impl::InputsTraits<ExecSpace, Inputs>::activation_type>::value, \
      FUNC                                                                                         \
      ": out value type must be (non-const) and the inputs' activation type (float, or "           \
      "gdn::bf16 for bf16 inputs)");                                                               \
  static_assert(                                                                                   \
      std::is_same<typename OutView::memory_space, typename ExecSpace::memory_space>::value,       \
      FUNC ": out must live in ExecSpace::memory_space")

/// The compile-time checks every verify shares (FUNC: its name; STATE_WHY:
/// when it writes the state): those of a forward (`out`: rank 2, of the
/// inputs' activation type, in the space's memory space) and ring_slots.
#define GDN_IMPL_STATIC_ASSERT_VERIFY_ARGS(FUNC, STATE_WHY, ExecSpace, Inputs, SlotsView,   \
                                           StateView, OutView, RingSlotsView)               \
  GDN_IMPL_STATIC_ASSERT_FWD_ARGS(FUNC, STATE_WHY, ExecSpace, Inputs, SlotsView, StateView, \
                                  OutView);                                                 \
  GDN_IMPL_STATIC_ASSERT_INDEX_VIEW(FUNC, "ring_slots", 1, "[B]", ExecSpace, RingSlotsView)

#endif  // GDN_IMPL_STATIC_CHECKS_HPP
