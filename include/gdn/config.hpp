#ifndef GDN_CONFIG_HPP
#define GDN_CONFIG_HPP

/// \file config.hpp
/// \brief Head geometry (`HeadConfig`) and the per-token inputs of one layer
/// (`TokenInputs` with the gates given, `GateInputs` with raw gates).

#include <gdn/bf16.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace gdn {

/// \brief The index of a padding row: `0xFFFFFFFF`, which an int32 -1 (Python's padding index)
/// reads as.
///
/// Engines that replay a CUDA graph of a fixed batch size fill the unused rows
/// of the batch with it. A row whose state slot (forward, verify, conv), ring
/// slot (verify, conv verify) or fold table entry (`state_rows(l, b)` or
/// `ring_rows(l, b)`) is `pad_slot` is skipped whatever its length: its
/// state, ring, conv and output rows are neither read nor written, its inputs
/// are not read, and every other row gets the bits of the call without it.
/// The index checking mode (checking.hpp) accepts it.
inline constexpr std::uint32_t pad_slot = 0xFFFFFFFFu;

/// \brief Head geometry of one Gated DeltaNet layer (symbols of docs/design.md, section 1).
///
/// Supported today: `value_head_dim == key_head_dim`, both 64 or 128, and
/// `num_value_heads % num_key_heads == 0`. Anything else is rejected with
/// `gdn::InvalidArgument` before a launch.
struct HeadConfig {
  int num_key_heads = 0;    ///< nk
  int num_value_heads = 0;  ///< nv
  int key_head_dim = 0;     ///< Dk
  int value_head_dim = 0;   ///< Dv

  /// G = nv / nk, the value heads that share one key head.
  constexpr int group_size() const {
    return num_key_heads > 0 ? num_value_heads / num_key_heads : 0;
  }
  /// nk * Dk
  constexpr long key_dim() const { return long(num_key_heads) * key_head_dim; }
  /// nv * Dv
  constexpr long value_dim() const { return long(num_value_heads) * value_head_dim; }
  /// 2 * key_dim + value_dim: the channels of one `qkv` row.
  constexpr long conv_dim() const { return 2 * key_dim() + value_dim(); }
};

/// \brief The per-token inputs of one layer over a ragged batch, with the gates given.
///
/// Sequence `b` owns the flat tokens `[row_offsets[b], row_offsets[b+1])`.
/// Every member is a `LayoutStride` view: a `LayoutLeft`, `LayoutRight` or
/// strided view of any of them converts to it, on every backend.
///
/// `ActT`, the activation type, is `float` or `gdn::bf16`: the type of `qkv`,
/// `decay`, `beta` and of the call's `out`. The kernels widen bf16 inputs
/// exactly and compute in float32 either way; a bf16 `out` is rounded to
/// nearest even.
template <class MemorySpace, class ActT = float>
struct TokenInputs {
  static_assert(Impl::IsStorageType<ActT>::value,
                "gdn::TokenInputs: the activation type must be float or gdn::bf16");
  using activation_type = ActT;
  /// [tokens, conv_dim]: query at `kh*Dk + i`, key at `key_dim + kh*Dk + i`,
  /// value at `2*key_dim + h*Dv + j`.
  Kokkos::View<const ActT**, Kokkos::LayoutStride, MemorySpace> qkv;
  /// [tokens, nv]: the gate, already exponentiated, in (0, 1].
  Kokkos::View<const ActT**, Kokkos::LayoutStride, MemorySpace> decay;
  /// [tokens, nv]: beta, already through the sigmoid.
  Kokkos::View<const ActT**, Kokkos::LayoutStride, MemorySpace> beta;
  /// [B+1]: non-decreasing, `row_offsets[0] == 0`.
  Kokkos::View<const std::uint32_t*, Kokkos::LayoutStride, MemorySpace> row_offsets;
};

/// \brief The per-token inputs of one layer with raw gates: the kernel computes decay and beta.
///
/// The same batch and `qkv` as `TokenInputs`; instead of `decay` and `beta`
/// the model's raw per-token gate inputs `a`, `b` and its per-head parameters
/// `A_log`, `dt_bias` (the names of the Qwen3-Next checkpoints). For token t
/// and value head h the kernel computes, in float32 (docs/design.md, section 1):
///
///     x     = a[t, h] + dt_bias[h]
///     decay = exp(-(exp(A_log[h]) * softplus(x))),  softplus(x) = x > 20 ? x : log1p(exp(x))
///     beta  = 1 / (1 + exp(-b[t, h]))
///
/// with exp and log1p the library's own (impl/core/fixed_math.hpp: the same bits
/// on every backend), and uses them exactly as it uses given ones (the ring
/// records the decay it computed, so the fold stays exact). `A_log` and
/// `dt_bias` are float32 whatever `ActT` is.
template <class MemorySpace, class ActT = float>
struct GateInputs {
  static_assert(Impl::IsStorageType<ActT>::value,
                "gdn::GateInputs: the activation type must be float or gdn::bf16");
  using activation_type = ActT;
  /// [tokens, conv_dim]: as in TokenInputs.
  Kokkos::View<const ActT**, Kokkos::LayoutStride, MemorySpace> qkv;
  /// [tokens, nv]: the raw decay gate input (before dt_bias and the softplus).
  Kokkos::View<const ActT**, Kokkos::LayoutStride, MemorySpace> a;
  /// [tokens, nv]: the raw beta input (before the sigmoid).
  Kokkos::View<const ActT**, Kokkos::LayoutStride, MemorySpace> b;
  /// [nv]: the log of the decay rate of each value head.
  Kokkos::View<const float*, Kokkos::LayoutStride, MemorySpace> A_log;
  /// [nv]: the bias added to `a` before the softplus.
  Kokkos::View<const float*, Kokkos::LayoutStride, MemorySpace> dt_bias;
  /// [B+1]: non-decreasing, `row_offsets[0] == 0`.
  Kokkos::View<const std::uint32_t*, Kokkos::LayoutStride, MemorySpace> row_offsets;
};

}  // namespace gdn

#endif  // GDN_CONFIG_HPP
