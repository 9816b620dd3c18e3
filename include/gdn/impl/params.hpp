#ifndef GDN_IMPL_PARAMS_HPP
#define GDN_IMPL_PARAMS_HPP

/// \file params.hpp
/// \brief The parameter structs the kernels are built from, and the canonical
/// view types the public functions convert their arguments to.

#include <gdn/config.hpp>
#include <gdn/conv_inputs.hpp>
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
/// A lazy ring's ledger [ring_rows, words] (impl/lazy_kernel.hpp), and as the kernels read it.
template <class M>
using Ledger = Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, M>;
template <class M>
using LedgerView = Kokkos::View<const std::uint32_t**, Kokkos::LayoutRight, M>;

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
  LedgerView<M> ledger;       // [ring_rows, words] (lazy verify; RING_LEN is the capacity)
  int nv = 0;
  int group = 1;         // G = nv / nk
  int ring_len = 0;      // RING_LEN (verify), 0 for the forward
  long key_dim = 0;      // nk * Dk
  float q_scale = 1.0f;  // 1 / sqrt(Dk)
  bool vec_qkv = false;  // qkv rows contiguous and 16-byte aligned: 16-byte staging copies
};

/// The conv pools of a `state_fold` call as the words the fold copies: the
/// conv fold moves inputs as they are stored, so only their width matters
/// (16 bits for gdn::bf16, 32 for float), and one fold kernel per (state,
/// ring) type serves every conv type. `word_bytes` 0: no conv pools.
template <class M>
struct ConvFoldWords {
  template <class W>
  using Pool = Kokkos::View<W***, Kokkos::LayoutRight, M, Kokkos::MemoryUnmanaged>;
  Pool<std::uint16_t> state16;      // [slots, conv_dim, W-1] (bf16 pools)
  Pool<const std::uint16_t> ring16;  // [ring_rows, RING_LEN, >= conv_dim]
  Pool<std::uint32_t> state32;      // (float pools)
  Pool<const std::uint32_t> ring32;
  int word_bytes = 0;

  ConvFoldWords() = default;
  template <class T>
  explicit ConvFoldWords(const ConvFold<M, T>& conv) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "conv values are 16 or 32 bits");
    const auto& s = conv.conv_state;
    const auto& r = conv.conv_ring;
    if constexpr (sizeof(T) == 2) {
      state16 = Pool<std::uint16_t>(reinterpret_cast<std::uint16_t*>(s.data()), s.extent(0),
                                    s.extent(1), s.extent(2));
      ring16 = Pool<const std::uint16_t>(reinterpret_cast<const std::uint16_t*>(r.data()),
                                         r.extent(0), r.extent(1), r.extent(2));
    } else {
      state32 = Pool<std::uint32_t>(reinterpret_cast<std::uint32_t*>(s.data()), s.extent(0),
                                    s.extent(1), s.extent(2));
      ring32 = Pool<const std::uint32_t>(reinterpret_cast<const std::uint32_t*>(r.data()),
                                         r.extent(0), r.extent(1), r.extent(2));
    }
    word_bytes = int(sizeof(T));
  }
  /// `f(state, ring)` with the pools of the stored width (only with word_bytes != 0).
  template <class F>
  void visit(F&& f) const {
    if (word_bytes == 2) {
      f(state16, ring16);
    } else {
      f(state32, ring32);
    }
  }
};

/// Everything the fold kernel reads and writes.
template <class StateT, class RingT, class M>
struct FoldParams {
  IndexTable<M> state_rows;                                    // [L, B]
  PoolView<StateT, M> state;                                   // [slots, nv, Dk, Dv]
  IndexTable<M> ring_rows;                                     // [L, B]
  Kokkos::View<const RingT****, Kokkos::LayoutRight, M> ring;  // [ring_rows, nk, RING_LEN, stride]
  IndexView<M> num_accepted;                                   // [B] (the eager fold)
  LedgerView<M> ledger;  // [ring_rows, words] (lazy: the pending records)
  IndexView<M> offsets;  // [B+1] (a lazy verify's commit: only rows whose window overflows)
  ConvFoldWords<M> conv;                                       // the conv pools, if any
  int nv = 0;
  int group = 1;
  int ring_len = 0;
  int conv_dim = 0;  // with conv pools
  int conv_keep = 0;  // W-1, the inputs a conv state row keeps
  bool conv_vec = false;  // conv pools aligned for 16-byte groups of channels (fold_kernel.hpp)
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_PARAMS_HPP
