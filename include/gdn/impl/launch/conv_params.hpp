#ifndef GDN_IMPL_CONV_PARAMS_HPP
#define GDN_IMPL_CONV_PARAMS_HPP

/// \file conv_params.hpp
/// \brief The conv1d's parameter structs: what the conv forward / verify
/// kernel reads and writes (conv_kernel.hpp), and the conv pools of a fold or
/// flush as the words the fold kernel copies (fold_kernel.hpp).

#include <gdn/conv_inputs.hpp>
#include <gdn/impl/launch/skip_counter.hpp>
#include <gdn/impl/launch/view_types.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace gdn {
namespace Impl {

template <class T, class M>
using ConvPool = Kokkos::View<T***, Kokkos::LayoutRight, M>;  // conv state or conv ring
template <class Y, class M>
using ConvOut = Kokkos::View<Y**, Kokkos::LayoutStride, M>;  // [tokens, conv_dim]

/// Everything the conv forward / verify kernel reads and writes.
template <class T, class Y, class M>
struct ConvParams {
  ConvInputs<M, T> in;      // qkv [tokens, conv_dim], weight [conv_dim, W], bias, offsets [B+1]
  IndexView<M> slots;       // [B]
  ConvPool<T, M> state;     // [slots, conv_dim, W-1]
  ConvOut<Y, M> out;        // [tokens, conv_dim]
  IndexView<M> ring_slots;  // [B] (verify)
  ConvPool<T, M> ring;      // [ring_rows, RING_LEN, >= conv_dim] (verify; lazy: the history)
  LedgerView<M> ledger;     // [ring_rows, words] (lazy verify)
  SkipCounter<M> skipped;   // rows skipped for an index out of range
  int conv_dim = 0;
  int ring_len = 0;  // RING_LEN (verify; lazy: the capacity), 0 for the forward
  bool has_bias = false;
};

/// The conv pools of a `state_fold` call as the words the fold copies: the
/// conv fold moves inputs as they are stored, so only their width matters
/// (16 bits for gdn::bf16, 32 for float), and one fold kernel per (state,
/// ring) type serves every conv type. `word_bytes` 0: no conv pools.
template <class M>
struct ConvFoldWords {
  template <class W>
  using Pool = Kokkos::View<W***, Kokkos::LayoutRight, M, Kokkos::MemoryUnmanaged>;
  Pool<std::uint16_t> state16;       // [slots, conv_dim, W-1] (bf16 pools)
  Pool<const std::uint16_t> ring16;  // [ring_rows, RING_LEN, >= conv_dim]
  Pool<std::uint32_t> state32;       // (float pools)
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

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_CONV_PARAMS_HPP
