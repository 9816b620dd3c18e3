#ifndef GDN_IMPL_CONV_KERNEL_HPP
#define GDN_IMPL_CONV_KERNEL_HPP

/// \file conv_kernel.hpp
/// \brief The causal depthwise conv1d with SiLU (forward and verify, one
/// kernel) and the fold of the conv state (its own kernel, launched by
/// `state_fold` right after the recurrent fold).
///
/// Conv kernel. Preconditions: validated shapes (conv_launch_impl.hpp);
/// 2 <= W <= 4; `out` does not overlap `qkv`.
/// Mapping: one team per (sequence b, group of ConvShape::channels channels,
/// split s); its threads take the group's channels (consecutive threads,
/// consecutive channels: a warp's loads and stores of one token row are
/// contiguous). A sequence is cut into blocks of kConvBlock tokens; team s of
/// the sequence's `split` teams runs blocks s, s + split, ... in token order,
/// each thread keeping its channel's last W-1 inputs in registers (a block
/// loads them from the previous tokens' qkv, block 0 from the conv state).
/// Only the thread of block 0 reads and writes the channel's conv state row,
/// so the commit (the last W-1 inputs, read from qkv or, for a sequence
/// shorter than W-1, the old row) races with nothing. `split` is a launch
/// parameter only: every output is the same expression of its W inputs
/// (conv_output), whatever team computes it, so the bits do not depend on it.
///
/// Fold kernel: one thread per (layer, sequence, channel), channels fastest;
/// a row with 0 < n <= RING_LEN gets the last W-1 inputs of (old row, conv
/// ring positions 0 .. n-1), copied as stored: bit-identical to the forward's
/// commit over those n tokens.

#include <gdn/bf16.hpp>
#include <gdn/impl/conv_launch.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace gdn {
namespace Impl {

/// Tokens per block of the conv kernel.
inline constexpr int kConvBlock = 16;
/// Most teams one sequence's channel group is split over.
inline constexpr int kConvMaxSplit = 64;

/// Channels per team and threads per team of the conv kernel. Host: one
/// thread runs the team's channels in turn.
template <class ExecSpace>
struct ConvShape {
  static constexpr int channels = 64;
  static constexpr int threads = 1;
};

#if defined(KOKKOS_ENABLE_CUDA)
/// CUDA: 128 threads, one channel each (four warps of 32 consecutive channels).
template <>
struct ConvShape<Kokkos::Cuda> {
  static constexpr int channels = 128;
  static constexpr int threads = 128;
};
#endif

/// One output: `acc = bias; acc = fmaf(w[j], h[j], acc)` for the taps oldest
/// to newest (h[W-1] the current token), then SiLU `acc / (1 + expf(-acc))`.
/// Every forward and verify output goes through this function: the one order
/// the bit-exact promises rest on.
template <int W>
KOKKOS_FORCEINLINE_FUNCTION float conv_output(const float (&w)[W], const float (&h)[W],
                                              float bias) {
  float acc = bias;
  for (int j = 0; j < W; ++j) acc = fmaf(w[j], h[j], acc);
  return acc / (1.0f + expf(-acc));
}

template <class ExecSpace, class T, class Y, int W, bool Verify>
struct ConvKernel {
  using M = typename ExecSpace::memory_space;
  using Shape = ConvShape<ExecSpace>;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  static constexpr int K = W - 1;  // inputs the conv state keeps

  ConvParams<T, Y, M> m;
  int m_groups = 0;  // channel groups: ceil(conv_dim / Shape::channels)
  int m_split = 1;   // teams per (sequence, channel group)

  static long long league(long long batch, int groups, int split) { return batch * groups * split; }

  KOKKOS_INLINE_FUNCTION void operator()(const Member& team) const {
    const int r = team.league_rank();
    const int s = r % m_split;
    const int g = (r / m_split) % m_groups;
    const int b = r / m_split / m_groups;
    const std::uint32_t t0 = m.in.row_offsets(b);
    const int len = static_cast<int>(m.in.row_offsets(b + 1) - t0);
    const int blocks = (len + kConvBlock - 1) / kConvBlock;
    if (s >= blocks) return;  // also every team of an empty sequence
    const bool record = Verify && len <= m.ring_len;
    for (int ch = team.team_rank(); ch < Shape::channels; ch += team.team_size()) {
      const int c = g * Shape::channels + ch;
      if (c >= m.conv_dim) break;
      run_channel(b, c, t0, len, blocks, s, record);
    }
  }

  KOKKOS_INLINE_FUNCTION void run_channel(int b, int c, std::uint32_t t0, int len, int blocks,
                                          int s, bool record) const {
    float w[W];
    for (int j = 0; j < W; ++j) w[j] = m.in.weight(c, j);
    const float bias = m.has_bias ? m.in.bias(c) : 0.0f;
    const std::uint32_t slot = m.slots(b);
    const std::uint32_t rslot = record ? m.ring_slots(b) : 0u;
    for (int blk = s; blk < blocks; blk += m_split) {
      const int p0 = blk * kConvBlock;
      const int p1 = p0 + kConvBlock < len ? p0 + kConvBlock : len;
      float h[W];  // h[0 .. K-1] the K inputs before token p, h[K] token p
      for (int i = 0; i < K; ++i) {
        const int pos = p0 - K + i;
        h[i] = pos >= 0 ? to_float(m.in.qkv(t0 + pos, c)) : to_float(m.state(slot, c, K + pos));
      }
      for (int p = p0; p < p1; ++p) {
        const T x = m.in.qkv(t0 + p, c);
        h[K] = to_float(x);
        m.out(t0 + p, c) = from_float<Y>(conv_output<W>(w, h, bias));
        if (record) m.ring(rslot, p, c) = x;
        for (int i = 0; i < K; ++i) h[i] = h[i + 1];
      }
    }
    if (s == 0 && !record) {  // commit: the last K inputs of (old row, the sequence)
      T last[K];
      for (int i = 0; i < K; ++i) {
        const int pos = len - K + i;
        last[i] = pos >= 0 ? m.in.qkv(t0 + pos, c) : m.state(slot, c, K + pos);
      }
      for (int i = 0; i < K; ++i) m.state(slot, c, i) = last[i];
    }
  }
};

template <class ExecSpace, class T, int W>
struct ConvFoldKernel {
  using M = typename ExecSpace::memory_space;
  using Policy = Kokkos::RangePolicy<ExecSpace, Kokkos::IndexType<std::int64_t>>;
  static constexpr int K = W - 1;

  ConvFoldParams<T, M> m;
  int m_batch = 0;

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t e) const {
    const int c = static_cast<int>(e % m.conv_dim);
    const std::int64_t lb = e / m.conv_dim;  // layer * B + b
    const int b = static_cast<int>(lb % m_batch);
    const int layer = static_cast<int>(lb / m_batch);
    const std::uint32_t n = m.num_accepted(b);
    if (n == 0 || n > static_cast<std::uint32_t>(m.ring_len)) return;
    const std::uint32_t srow = m.state_rows(layer, b);
    const std::uint32_t rrow = m.ring_rows(layer, b);
    T last[K];
    for (int i = 0; i < K; ++i) {
      const int pos = static_cast<int>(n) - K + i;
      last[i] = pos >= 0 ? m.ring(rrow, pos, c) : m.state(srow, c, K + pos);
    }
    for (int i = 0; i < K; ++i) m.state(srow, c, i) = last[i];
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_CONV_KERNEL_HPP
