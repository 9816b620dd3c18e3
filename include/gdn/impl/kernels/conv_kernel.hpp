#ifndef GDN_IMPL_CONV_KERNEL_HPP
#define GDN_IMPL_CONV_KERNEL_HPP

/// \file conv_kernel.hpp
/// \brief The causal depthwise conv1d with SiLU: forward and verify, one
/// kernel; and the commit of the conv state's fold (conv_commit), a routine
/// that the fold kernel (fold_kernel.hpp) runs in its conv work items.
///
/// Conv kernel. Preconditions: validated shapes (conv_launch_impl.hpp);
/// 2 <= W <= 4; `out` does not overlap `qkv`.
/// Mapping: one team per (sequence b, group of kChannels channels, split s).
/// A thread takes V consecutive channels (V = 16 / sizeof(T) where every
/// view is aligned for it, conv_vec_ok, else 1) and moves them as one word
/// group: one 16-byte load per token row, V*(W-1) conv state inputs in
/// W-1 such words. CUDA: 128 threads, consecutive threads consecutive
/// groups, so a warp's loads and stores of one token row are contiguous;
/// host: one thread runs 64 channels in turn. A sequence is cut into blocks
/// of kConvBlock tokens; team s of the sequence's `split` teams runs blocks
/// s, s + split, ... in token order, each thread keeping its channels' last
/// W-1 inputs in registers (a block loads them from the previous tokens'
/// qkv, block 0 from the conv state); a thread loads kConvStep tokens'
/// inputs at once before it computes them.
/// A padding row (its state slot, or in the verify its ring slot, is
/// gdn::pad_slot) returns before it reads anything, as an empty one does.
/// Only the thread of block 0 reads and writes the channel's conv state row,
/// so the commit (the last W-1 inputs, read from qkv or, for a sequence
/// shorter than W-1, the old row) races with nothing. `split` is a launch
/// parameter only: every output is the same expression of its W inputs
/// (conv_output), whatever team computes it, so the bits do not depend on it.
/// `Lazy` (conv1d_verify_lazy, a history ring and its ledger,
/// lazy_kernel.hpp): one team per (sequence, channel group) (split 1), so a
/// thread owns its channels in every position of the history row: it starts
/// from the last W-1 inputs of (the conv state row, the row's pending inputs)
/// (conv_tail), stores them first when the window does not fit behind the
/// pending inputs (the commit the recurrent lazy verify makes of the same
/// row), and records the window behind the pending inputs (or from position
/// 0 after that commit).

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>
#include <gdn/impl/backend/backend.hpp>
#include <gdn/impl/core/fixed_math.hpp>
#include <gdn/impl/kernels/lazy_kernel.hpp>
#include <gdn/impl/launch/conv_launch.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace gdn {
namespace Impl {

/// Tokens per block of the conv kernel.
inline constexpr int kConvBlock = 16;
/// Tokens a thread loads at once, before it computes their outputs.
inline constexpr int kConvStep = 4;
static_assert(kConvBlock > conv_max_width - 1, "a block's W-1 previous inputs are tokens");
/// Most teams one sequence's channel group is split over.
inline constexpr int kConvMaxSplit = 64;

/// Threads per team of the conv kernel, and channels per team on the host
/// (one thread runs them in turn).
template <class ExecSpace>
struct ConvShape {
  static constexpr int threads = 1;
  static constexpr int host_channels = 64;
};

#if defined(KOKKOS_ENABLE_CUDA)
/// CUDA: 128 threads, `V` consecutive channels each (four warps).
template <>
struct ConvShape<Kokkos::Cuda> {
  static constexpr int threads = 128;
  static constexpr int host_channels = 0;
};
#endif

/// One output: `acc = bias; acc = fmaf(w[j], h[j], acc)` for the taps oldest
/// to newest (h[W-1] the current token), then SiLU `acc / (1 + exp(-acc))`
/// with the library's exp (fixed_math.hpp), the same bits on every backend.
/// Every forward and verify output goes through this function: the one order
/// the bit-exact promises rest on.
template <int W>
KOKKOS_FORCEINLINE_FUNCTION float conv_output(const float (&w)[W], const float (&h)[W],
                                              float bias) {
  float acc = bias;
  for (int j = 0; j < W; ++j) acc = fmaf(w[j], h[j], acc);
  return acc / (1.0f + exp_fixed(-acc));
}

/// The last K inputs of (conv state row `row` ([V][K] words of channels c ..
/// c+V-1), positions 0 .. n-1 of ring row `rrow`) for V channels from c:
/// input i is the old input i + n where i + n < K, else ring position
/// n - K + i, copied as stored.
template <int K, int V, class Word, class RingPool>
KOKKOS_FORCEINLINE_FUNCTION Lanes<Word, V * K> conv_tail(const Word* row, const RingPool& ring,
                                                         std::uint32_t rrow, int n, int c) {
  Lanes<Word, V * K> old{};
  if (n < K) old = load_lanes<V * K>(row);
  Lanes<Word, V> in[K] = {};
  GDN_UNROLL
  for (int i = 0; i < K; ++i) {
    if (n - K + i >= 0) in[i] = load_lanes<V>(&ring(rrow, n - K + i, c));
  }
  Lanes<Word, V * K> out;
  GDN_UNROLL
  for (int v = 0; v < V; ++v) {
    GDN_UNROLL
    for (int i = 0; i < K; ++i) {
      Word x = in[i].v[v];
      GDN_UNROLL
      for (int j = 1; j < K; ++j) {
        if (j == i + n) x = old.v[v * K + j];  // i + n < K: old input i + n
      }
      out.v[v * K + i] = x;
    }
  }
  return out;
}

template <class ExecSpace, class T, class Y, int W, bool Verify, int V, bool Lazy = false>
struct ConvKernel {
  static_assert(Verify || !Lazy, "lazy commit is a verify mode");
  using M = typename ExecSpace::memory_space;
  using Shape = ConvShape<ExecSpace>;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  static constexpr int K = W - 1;  // inputs the conv state keeps
  /// Channels per team: CUDA V a thread, host host_channels.
  static constexpr int kChannels = Shape::threads > 1 ? Shape::threads* V : Shape::host_channels;
  static_assert(kChannels % V == 0, "a team's channels are whole groups of V");

  ConvParams<T, Y, M> m;
  int m_groups = 0;  // channel groups: ceil(conv_dim / kChannels)
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
    const std::uint32_t slot = m.slots(b), rslot = Verify ? m.ring_slots(b) : 0u;
    if (slot == pad_slot || (Verify && rslot == pad_slot)) return;  // padding
    // An index outside its pool, or a row ending outside qkv: skipped and counted.
    if (slot >= m.state.extent(0) || (Verify && rslot >= m.ring.extent(0)) ||
        (Lazy && rslot >= m.ledger.extent(0)) || t0 + std::uint32_t(len) > m.in.qkv.extent(0)) {
      if (g == 0 && s == 0 && team.team_rank() == 0) count_skipped_row(m.skipped);
      return;
    }
    if (s >= blocks) return;  // also every team of an empty sequence
    const bool record = Verify && len <= m.ring_len;
    int pending = 0;      // lazy: the row's pending inputs, where the window's records start
    bool commit = false;  // lazy: the window does not fit behind them
    if constexpr (Lazy) {
      pending = pending_records(m.ledger(m.ring_slots(b), 0), m.ring_len);
      commit = len > m.ring_len - pending;
    }
    for (int ch = V * team.team_rank(); ch < kChannels; ch += V * team.team_size()) {
      const int c = g * kChannels + ch;
      if (c >= m.conv_dim) break;  // conv_dim is a multiple of V
      run_channels(b, c, t0, len, blocks, s, record, pending, commit);
    }
  }

  /// Channels c .. c+V-1 of sequence b: every output of the team's blocks,
  /// and (block 0's thread of a committing row) the conv state's commit.
  /// Lazy: the row starts from the last K inputs of (state row, `pending`
  /// history inputs), stored first if `commit` and the row records; its
  /// records start at position `pending` (0 if `commit`).
  KOKKOS_INLINE_FUNCTION void run_channels(int b, int c, std::uint32_t t0, int len, int blocks,
                                           int s, bool record, int pending, bool commit) const {
    float w[V][W];
    float bias[V];
    if constexpr (V == 1) {  // any strides
      for (int j = 0; j < W; ++j) w[0][j] = m.in.weight(c, j);
      bias[0] = m.has_bias ? m.in.bias(c) : 0.0f;
    } else {  // rows of W contiguous taps, contiguous bias (ConvParams::vec)
      const auto wl = load_lanes<V * W>(&m.in.weight(c, 0));  // [V][W]
      const auto bl = m.has_bias ? load_lanes<V>(&m.in.bias(c)) : Lanes<float, V>{};
      GDN_UNROLL
      for (int v = 0; v < V; ++v) {
        GDN_UNROLL
        for (int j = 0; j < W; ++j) w[v][j] = wl.v[v * W + j];
        bias[v] = m.has_bias ? bl.v[v] : 0.0f;
      }
    }
    const std::uint32_t slot = m.slots(b);
    const std::uint32_t rslot = record || Lazy ? m.ring_slots(b) : 0u;
    // The inputs before the row: the conv state row, in lazy mode advanced
    // over the pending inputs (block 0's thread: the same thread writes the
    // history positions it read, later).
    Lanes<T, V * K> first{};
    if (s == 0) {
      if (Lazy && pending > 0) {
        first = conv_tail<K, V>(&m.state(slot, c, 0), m.ring, rslot, pending, c);
        if (record && commit) *reinterpret_cast<Lanes<T, V * K>*>(&m.state(slot, c, 0)) = first;
      } else {
        first = load_lanes<V * K>(&m.state(slot, c, 0));
      }
    }
    const int pos0 = Lazy && !commit ? pending : 0;  // the window's first record position
    for (int blk = s; blk < blocks; blk += m_split) {
      const int p0 = blk * kConvBlock;
      const int p1 = p0 + kConvBlock < len ? p0 + kConvBlock : len;
      float h[V][W] = {};  // h[v][0 .. K-1] the K inputs before token p, h[v][K] token p
      if (p0 == 0) {       // block 0: the inputs before the row, [V][K] contiguous
        GDN_UNROLL
        for (int v = 0; v < V; ++v) {
          GDN_UNROLL
          for (int i = 0; i < K; ++i) h[v][i] = to_float(first.v[v * K + i]);
        }
      } else {  // the K tokens before the block (p0 >= kConvBlock > K)
        GDN_UNROLL
        for (int i = 0; i < K; ++i) {
          const auto x = load_lanes<V>(&m.in.qkv(t0 + p0 - K + i, c));
          GDN_UNROLL
          for (int v = 0; v < V; ++v) h[v][i] = to_float(x.v[v]);
        }
      }
      // kConvStep tokens at a time: their loads first, then their outputs.
      for (int q = p0; q < p1; q += kConvStep) {
        Lanes<T, V> x[kConvStep];
        GDN_UNROLL
        for (int p = 0; p < kConvStep; ++p) {
          if (q + p < p1) x[p] = load_lanes<V>(&m.in.qkv(t0 + q + p, c));
        }
        GDN_UNROLL
        for (int p = 0; p < kConvStep; ++p) {
          if (q + p < p1) {
            Lanes<Y, V> o;
            GDN_UNROLL
            for (int v = 0; v < V; ++v) {
              h[v][K] = to_float(x[p].v[v]);
              o.v[v] = from_float<Y>(conv_output<W>(w[v], h[v], bias[v]));
              GDN_UNROLL
              for (int i = 0; i < K; ++i) h[v][i] = h[v][i + 1];
            }
            *reinterpret_cast<Lanes<Y, V>*>(&m.out(t0 + q + p, c)) = o;
            if (record) *reinterpret_cast<Lanes<T, V>*>(&m.ring(rslot, pos0 + q + p, c)) = x[p];
          }
        }
      }
    }
    if (s == 0 && !record) {        // commit: the last K inputs of (old row, the sequence)
      Lanes<T, V* K> last = first;  // for a sequence shorter than K
      GDN_UNROLL
      for (int i = 0; i < K; ++i) {
        const int pos = len - K + i;
        if (pos >= 0) {
          const auto x = load_lanes<V>(&m.in.qkv(t0 + pos, c));
          GDN_UNROLL
          for (int v = 0; v < V; ++v) last.v[v * K + i] = x.v[v];
        } else {
          GDN_UNROLL
          for (int v = 0; v < V; ++v) last.v[v * K + i] = last.v[v * K + i + len];
        }
      }
      *reinterpret_cast<Lanes<T, V * K>*>(&m.state(slot, c, 0)) = last;
    }
  }
};

/// The conv part of `state_fold` (the fold kernel's conv items,
/// fold_kernel.hpp): channels c0 .. c1-1 of conv state row srow := the last
/// K = W-1 inputs of (that row, ring row rrow's positions 0 .. n-1): input i
/// becomes old input i + n where i + n < K, else ring position n - K + i,
/// copied as stored (bit-identical to conv1d_fwd's commit over those n
/// tokens). Thread `rank` of `threads` takes V consecutive channels at a
/// time (consecutive threads, consecutive groups): K loads of V ring inputs,
/// the old row's V*K inputs only when n < K, then one store of the V*K new
/// ones.
template <int K, int V, class Pool, class RingPool>
KOKKOS_INLINE_FUNCTION void conv_commit(int rank, int threads, const Pool& state,
                                        const RingPool& ring, std::uint32_t srow,
                                        std::uint32_t rrow, int n, int c0, int c1) {
  using Word = typename Pool::non_const_value_type;
  for (int c = c0 + V * rank; c < c1; c += V * threads) {
    Word* const dst = &state(srow, c, 0);  // [V][K] contiguous
    *reinterpret_cast<Lanes<Word, V * K>*>(dst) = conv_tail<K, V>(dst, ring, rrow, n, c);
  }
}

/// conv_commit for the run-time K = W-1 (`keep`, 1 to 3) and lane count
/// (`vec`: 16 bytes of words, where the pools allow; else one word).
template <class Pool, class RingPool>
KOKKOS_INLINE_FUNCTION void conv_commit_keep(int rank, int threads, int keep, bool vec,
                                             const Pool& state, const RingPool& ring,
                                             std::uint32_t srow, std::uint32_t rrow, int n, int c0,
                                             int c1) {
  using Word = typename Pool::non_const_value_type;
  constexpr int kV = 16 / int(sizeof(Word));
  if (vec) {
    if (keep == 1) conv_commit<1, kV>(rank, threads, state, ring, srow, rrow, n, c0, c1);
    if (keep == 2) conv_commit<2, kV>(rank, threads, state, ring, srow, rrow, n, c0, c1);
    if (keep == 3) conv_commit<3, kV>(rank, threads, state, ring, srow, rrow, n, c0, c1);
  } else {
    if (keep == 1) conv_commit<1, 1>(rank, threads, state, ring, srow, rrow, n, c0, c1);
    if (keep == 2) conv_commit<2, 1>(rank, threads, state, ring, srow, rrow, n, c0, c1);
    if (keep == 3) conv_commit<3, 1>(rank, threads, state, ring, srow, rrow, n, c0, c1);
  }
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_CONV_KERNEL_HPP
