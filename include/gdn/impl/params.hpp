#ifndef GDN_IMPL_PARAMS_HPP
#define GDN_IMPL_PARAMS_HPP

/// \file params.hpp
/// \brief The parameter structs the kernels are built from, and the canonical
/// view types the public functions convert their arguments to.

#include <gdn/config.hpp>
#include <gdn/impl/token_io.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace gdn {
namespace Impl {

template <class M>
using IndexView = Kokkos::View<const std::uint32_t*, Kokkos::LayoutStride, M>;  // [B]
template <class M>
using IndexTable = Kokkos::View<const std::uint32_t**, Kokkos::LayoutStride, M>;  // [L, B]
template <class T, class M>
using PoolView = Kokkos::View<T****, Kokkos::LayoutRight, M>;  // state or ring pool
template <class ActT, class M>
using OutView = Kokkos::View<ActT**, Kokkos::LayoutStride, M>;  // [tokens, value_dim]

/// Everything the forward / verify kernel reads and writes, and the geometry.
/// `ActT` is the activation type of the inputs and of `out` (token_io.hpp).
template <class ActT, class StateT, class RingT, class M>
struct RecurrenceParams {
  TokenReader<ActT, M> in;    // qkv [tokens, conv_dim], gates [tokens, nv], offsets [B+1]
  IndexView<M> slots;         // [B]
  PoolView<StateT, M> state;  // [slots, nv, Dk, Dv]
  OutWriter<ActT, M> out;     // [tokens, value_dim]
  IndexView<M> ring_slots;    // [B] (verify)
  PoolView<RingT, M> ring;    // [ring_rows, nk, RING_LEN, record_stride] (verify)
  int nv = 0;
  int group = 1;         // G = nv / nk
  int ring_len = 0;      // RING_LEN (verify), 0 for the forward
  long key_dim = 0;      // nk * Dk
  float q_scale = 1.0f;  // 1 / sqrt(Dk)
  bool vec_qkv = false;  // qkv rows contiguous and 16-byte aligned: 16-byte staging copies
};

/// Everything the fold kernel reads and writes.
template <class StateT, class RingT, class M>
struct FoldParams {
  IndexTable<M> state_rows;                                    // [L, B]
  PoolView<StateT, M> state;                                   // [slots, nv, Dk, Dv]
  IndexTable<M> ring_rows;                                     // [L, B]
  Kokkos::View<const RingT****, Kokkos::LayoutRight, M> ring;  // [ring_rows, nk, RING_LEN, stride]
  IndexView<M> num_accepted;                                   // [B]
  int nv = 0;
  int group = 1;
  int ring_len = 0;
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_PARAMS_HPP
