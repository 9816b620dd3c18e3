#ifndef GDN_IMPL_PARAMS_HPP
#define GDN_IMPL_PARAMS_HPP

/// \file params.hpp
/// \brief The parameter structs of the recurrent kernels (forward, verify,
/// fold). The view types are in view_types.hpp, the conv's structs in
/// conv_params.hpp.

#include <gdn/config.hpp>
#include <gdn/impl/core/token_io.hpp>
#include <gdn/impl/launch/conv_params.hpp>
#include <gdn/impl/launch/skip_counter.hpp>
#include <gdn/impl/launch/view_types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace gdn {
namespace Impl {

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
  SkipCounter<M> skipped;     // rows skipped for an index out of range
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
  IndexView<M> num_accepted;                                   // [B] (the eager fold)
  LedgerView<M> ledger;    // [ring_rows, words] (lazy: the pending records)
  SkipCounter<M> skipped;  // rows skipped for an index out of range
  IndexView<M> offsets;    // [B+1] (a lazy verify's commit: only rows whose window overflows)
  std::size_t tokens = 0;  // qkv.extent(0) (a lazy verify's commit: rows ending past it skipped)
  ConvFoldWords<M> conv;   // the conv pools, if any
  int nv = 0;
  int group = 1;
  int ring_len = 0;
  int conv_dim = 0;       // with conv pools
  int conv_keep = 0;      // W-1, the inputs a conv state row keeps
  bool conv_vec = false;  // conv pools aligned for 16-byte groups of channels (fold_kernel.hpp)
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_PARAMS_HPP
