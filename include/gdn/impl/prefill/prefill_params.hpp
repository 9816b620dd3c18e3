#ifndef GDN_IMPL_PREFILL_PARAMS_HPP
#define GDN_IMPL_PREFILL_PARAMS_HPP

/// \file prefill_params.hpp
/// \brief The chunked prefill's constants, its workspace layout and its kernel parameters,
/// shared by the host and the CUDA implementation.
///
/// The prefill splits every row into chunks of kPrefillChunk tokens (the last one shorter).
/// Chunk c of row b owns workspace slot `prefill_chunk_base(row_offsets[b], b) + c`: the
/// slots of different rows never overlap, and the slot count of a call depends only on
/// its token count and its row count (prefill_chunk_slots), so both kernels find a chunk's
/// slot from the offsets alone, with no host synchronisation.

#include <gdn/config.hpp>
#include <gdn/impl/core/token_io.hpp>
#include <gdn/impl/launch/view_types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace gdn {

/// \brief The products of `gdn::recurrence_prefill` on CUDA (recurrence_prefill.hpp).
///
/// `bf16`: bf16 operands, float32 accumulation and a float32 carried state.
/// `tf32x3`: each float operand split into a TF32 high and low part, three products
/// (float32-level accuracy). The host computes in float32 whichever is given.
enum class PrefillPrecision : int { bf16 = 0, tf32x3 = 1 };

namespace Impl {

/// Tokens per chunk.
inline constexpr int kPrefillChunk = 64;

/// The first workspace slot of row `b` starting at flat token `offset`: the slots before it
/// are at least the chunks of the rows before it (sum of ceil(len / C) <= (offset + b (C-1)) / C).
KOKKOS_INLINE_FUNCTION long long prefill_chunk_base(std::uint32_t offset, long long b) {
  return (static_cast<long long>(offset) + b * (kPrefillChunk - 1)) / kPrefillChunk;
}

/// The workspace slots of a call over `tokens` tokens in `rows` rows.
inline long long prefill_chunk_slots(std::size_t tokens, std::size_t rows) {
  return (static_cast<long long>(tokens) + static_cast<long long>(rows) * (kPrefillChunk - 1)) /
         kPrefillChunk;
}

/// One (chunk slot, value head) block of the workspace (written by the CUDA chunk kernel, read
/// by the CUDA state kernel; the host needs none). First the operands of the state kernel's
/// products, in the call's operand type E (bf16 or float; the region is sized for float), each
/// row padded by kPad elements so that a warp's fragment loads fall in distinct banks:
/// W [C][Dk + kPad] (rows are tokens), Qg [C][Dk + kPad] (the queries with their decay from
/// the chunk's start), KdT [Dk][C + kPad] (the keys decayed to the chunk's end, transposed),
/// P [C][C + kPad] (the masked, decayed query-key products, P[t][i]); then in float
/// UT [Dv][C] (U transposed) and the chunk's total decay, padded to 16 bytes. Entries of
/// tokens past the chunk's last are zero. Offsets in elements from the block's start.
struct PrefillBlock {
  static constexpr int kPad = 8;
  KOKKOS_INLINE_FUNCTION static constexpr long row(int dk) { return dk + kPad; }
  KOKKOS_INLINE_FUNCTION static constexpr long crow() { return kPrefillChunk + kPad; }
  KOKKOS_INLINE_FUNCTION static constexpr long w(int) { return 0; }
  KOKKOS_INLINE_FUNCTION static constexpr long qg(int dk) { return kPrefillChunk * row(dk); }
  KOKKOS_INLINE_FUNCTION static constexpr long kdt(int dk) { return 2 * qg(dk); }
  KOKKOS_INLINE_FUNCTION static constexpr long p(int dk) { return kdt(dk) + dk * crow(); }
  /// The operands' elements (W, Qg, KdT, P).
  KOKKOS_INLINE_FUNCTION static constexpr long operands(int dk) {
    return p(dk) + kPrefillChunk * crow();
  }
  /// UT and the total decay, in floats from the block's start.
  KOKKOS_INLINE_FUNCTION static constexpr long ut(int dk) { return operands(dk); }
  KOKKOS_INLINE_FUNCTION static constexpr long gc(int dk, int dv) {
    return ut(dk) + long(dv) * kPrefillChunk;
  }
  KOKKOS_INLINE_FUNCTION static constexpr long floats(int dk, int dv) { return gc(dk, dv) + 4; }
};

/// The workspace bytes of a call over `tokens` tokens in `rows` rows.
inline std::size_t prefill_bytes(const HeadConfig& cfg, std::size_t tokens, std::size_t rows) {
  return static_cast<std::size_t>(prefill_chunk_slots(tokens, rows)) *
         static_cast<std::size_t>(cfg.num_value_heads) *
         static_cast<std::size_t>(PrefillBlock::floats(cfg.key_head_dim, cfg.value_head_dim)) *
         sizeof(float);
}

/// The workspace as the launchers take it: bytes in the execution space's memory.
template <class M>
using WorkspaceView = Kokkos::View<unsigned char*, Kokkos::LayoutRight, M>;

/// Everything the prefill reads and writes, and the geometry.
template <class ActT, class StateT, class M>
struct PrefillParams {
  TokenReader<ActT, M> in;    // qkv [tokens, conv_dim], gates [tokens, nv], offsets [B+1]
  IndexView<M> slots;         // [B]
  PoolView<StateT, M> state;  // [slots, nv, Dk, Dv]
  OutWriter<ActT, M> out;     // [tokens, value_dim]
  float* ws = nullptr;        // [chunk_slots, nv, PrefillBlock::floats] (CUDA)
  long long chunk_slots = 0;  // prefill_chunk_slots(tokens, B)
  long long tokens = 0;       // qkv.extent(0): rows ending past it are skipped
  long long pool_rows = 0;    // state.extent(0): rows with a slot past it are skipped
  int batch = 0;              // B
  int nv = 0;
  int group = 1;  // G = nv / nk
  long key_dim = 0;
  float q_scale = 1.0f;  // 1 / sqrt(Dk)
  PrefillPrecision precision = PrefillPrecision::tf32x3;

  /// Row b's tokens [start, end), or false when the row is skipped: a padding row, a slot
  /// out of the pool, offsets out of order or past qkv, or no tokens.
  KOKKOS_INLINE_FUNCTION bool row(int b, long long& start, long long& end) const {
    const std::uint32_t slot = slots(b);
    if (slot == pad_slot || static_cast<long long>(slot) >= pool_rows) return false;
    start = in.row_offsets(b);
    end = in.row_offsets(b + 1);
    return start < end && end <= tokens;
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_PREFILL_PARAMS_HPP
