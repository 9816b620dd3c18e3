#ifndef GDN_IMPL_CONV_LAUNCH_IMPL_HPP
#define GDN_IMPL_CONV_LAUNCH_IMPL_HPP

/// \file conv_launch_impl.hpp
/// \brief Definitions of the conv launchers of conv_launch.hpp: validate, then launch.
/// Included only by the explicit instantiations in src/.

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>
#include <gdn/conv_inputs.hpp>
#include <gdn/impl/kernels/conv_kernel.hpp>
#include <gdn/impl/launch/conv_launch.hpp>
#include <gdn/impl/validate/validate.hpp>

#include <Kokkos_Core.hpp>

#include <climits>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace gdn {
namespace Impl {

/// Calls `f(std::integral_constant<int, W>())` for the supported widths (2 to 4).
template <class F>
void with_conv_width(int w, F&& f) {
  if (w == 2) {
    f(std::integral_constant<int, 2>());
  } else if (w == 3) {
    f(std::integral_constant<int, 3>());
  } else {
    f(std::integral_constant<int, 4>());
  }
}

/// Whether the conv kernel may move V channels as one aligned group: conv_dim
/// a multiple of V; qkv, out and the conv ring with contiguous channels and
/// rows (and bases) aligned for V values; weight rows of W contiguous taps;
/// a contiguous bias; a 16-byte aligned conv state.
template <int V, class T, class Y, class M>
bool conv_vec_ok(const ConvParams<T, Y, M>& p, int width) {
  const std::size_t at = lanes_align(V * sizeof(T)), ay = lanes_align(V * sizeof(Y));
  const auto& x = p.in.qkv;
  const auto& w = p.in.weight;
  bool ok = p.conv_dim % V == 0;
  ok = ok && x.stride(1) == 1 && (x.stride(0) * sizeof(T)) % at == 0 && aligned_to(x.data(), at);
  ok = ok && p.out.stride(1) == 1 && (p.out.stride(0) * sizeof(Y)) % ay == 0 &&
       aligned_to(p.out.data(), ay);
  ok = ok && w.stride(1) == 1 && w.stride(0) == std::size_t(width) && aligned16(w.data());
  ok =
      ok && (p.in.bias.extent(0) == 0 || (p.in.bias.stride(0) == 1 && aligned16(p.in.bias.data())));
  ok = ok && aligned16(p.state.data());
  ok = ok && (p.ring.extent(0) == 0 ||
              ((p.ring.extent(2) * sizeof(T)) % at == 0 && aligned_to(p.ring.data(), at)));
  return ok;
}

template <class ExecSpace, class T, class Y, bool Verify, bool Lazy = false>
void launch_conv(const char* label, const ExecSpace& space, int width, std::size_t tokens,
                 const ConvParams<T, Y, typename ExecSpace::memory_space>& p) {
  const long long batch = static_cast<long long>(p.slots.extent(0));
  if (batch == 0) return;
  constexpr int kVec = 16 / int(sizeof(T));  // values of a 16-byte word
  const auto run = [&](auto w, auto v) {
    using Kernel =
        ConvKernel<ExecSpace, T, Y, decltype(w)::value, Verify, decltype(v)::value, Lazy>;
    static_assert(Kernel::kChannels >= 64, "conv_league_bound assumes at least 64 channels a team");
    Kernel k{p};
    k.m_groups = (p.conv_dim + Kernel::kChannels - 1) / Kernel::kChannels;
    // Teams per (sequence, channel group): enough for the mean sequence length.
    const long long mean = (static_cast<long long>(tokens) + batch - 1) / batch;
    const long long split = (mean + kConvBlock - 1) / kConvBlock;
    k.m_split = static_cast<int>(split < 1 ? 1 : (split > kConvMaxSplit ? kConvMaxSplit : split));
    if (Lazy) k.m_split = 1;  // a thread owns its channels' history positions (conv_kernel.hpp)
    const long long league = Kernel::league(batch, k.m_groups, k.m_split);
    Kokkos::parallel_for(label, typename Kernel::Policy(space, int(league), Kernel::Shape::threads),
                         k);
  };
  const bool vec = conv_vec_ok<kVec>(p, width);
  with_conv_width(width, [&](auto w) {
    if (vec) {
      run(w, std::integral_constant<int, kVec>());
    } else {
      run(w, std::integral_constant<int, 1>());
    }
  });
}

/// Teams of a conv launch at the largest split: the bound check_league applies.
inline long long conv_league_bound(const HeadConfig& cfg, std::size_t batch) {
  const long long min_channels = 64;  // ConvShape::channels of every backend is at least this
  return static_cast<long long>(batch) * ((cfg.conv_dim() + min_channels - 1) / min_channels) *
         kConvMaxSplit;
}

/// The kernel parameters of a conv forward (no ring), verify (its conv ring)
/// or lazy verify (its conv history; the caller adds the ledger).
template <class T, class Y, class M>
ConvParams<T, Y, M> conv_params(const HeadConfig& cfg, const ConvInputs<M, T>& in,
                                const IndexView<M>& state_slots, const ConvPool<T, M>& conv_state,
                                const ConvOut<Y, M>& out, const IndexView<M>& ring_slots = {},
                                const ConvPool<T, M>& ring = {}) {
  ConvParams<T, Y, M> p;
  p.in = in;
  p.slots = state_slots;
  p.state = conv_state;
  p.out = out;
  p.ring_slots = ring_slots;
  p.ring = ring;
  p.conv_dim = static_cast<int>(cfg.conv_dim());
  p.ring_len = static_cast<int>(ring.extent(1));
  p.has_bias = in.bias.extent(0) > 0;
  p.skipped = skip_counter<M>();
  return p;
}

template <class ExecSpace, class T, class Y>
void ConvLauncher<ExecSpace, T, Y>::fwd(const ExecSpace& space, const HeadConfig& cfg,
                                        const ConvInputs<M, T>& in, const IndexView<M>& state_slots,
                                        const ConvPool<T, M>& conv_state,
                                        const ConvOut<Y, M>& out) {
  const ArgCheck c("gdn::conv1d_fwd");
  const std::size_t batch = state_slots.extent(0);
  const int width = check_conv_call(c, cfg, in, batch, conv_state, out);
  const std::size_t tokens = in.qkv.extent(0);
  check_league(c, "state_slots", conv_league_bound(cfg, batch));
  if (index_checking_enabled()) {
    check_call_indices(c, space, in.row_offsets, tokens, state_slots, conv_state.extent(0), nullptr,
                       0, 0, kConvPools);
  }
  launch_conv<ExecSpace, T, Y, false>("gdn::conv1d_fwd::kernel", space, width, tokens,
                                      conv_params(cfg, in, state_slots, conv_state, out));
}

template <class ExecSpace, class T, class Y>
void ConvLauncher<ExecSpace, T, Y>::verify(const ExecSpace& space, const HeadConfig& cfg,
                                           const ConvInputs<M, T>& in,
                                           const IndexView<M>& state_slots,
                                           const ConvPool<T, M>& conv_state,
                                           const ConvOut<Y, M>& out, const IndexView<M>& ring_slots,
                                           const ConvPool<T, M>& conv_ring) {
  const ArgCheck c("gdn::conv1d_verify_ring");
  const std::size_t batch = state_slots.extent(0);
  const int width = check_conv_call(c, cfg, in, batch, conv_state, out);
  const std::size_t tokens = in.qkv.extent(0);
  check_ring_slots(c, ring_slots, batch);
  check_conv_ring(c, "conv_ring", cfg.conv_dim(), conv_ring, batch > 0);
  check_league(c, "state_slots", conv_league_bound(cfg, batch));
  if (index_checking_enabled()) {
    check_call_indices(c, space, in.row_offsets, tokens, state_slots, conv_state.extent(0),
                       &ring_slots, conv_ring.extent(0), conv_ring.extent(1), kConvPools);
  }
  launch_conv<ExecSpace, T, Y, true>(
      "gdn::conv1d_verify_ring::kernel", space, width, tokens,
      conv_params(cfg, in, state_slots, conv_state, out, ring_slots, conv_ring));
}

template <class ExecSpace, class T, class Y>
void ConvLauncher<ExecSpace, T, Y>::verify_lazy(
    const ExecSpace& space, const HeadConfig& cfg, const ConvInputs<M, T>& in,
    const IndexView<M>& state_slots, const ConvPool<T, M>& conv_state, const ConvOut<Y, M>& out,
    const IndexView<M>& ring_slots, const ConvPool<T, M>& conv_history, std::size_t capacity,
    const Ledger<M>& ledger) {
  const ArgCheck c("gdn::conv1d_verify_lazy");
  const std::size_t batch = state_slots.extent(0);
  const int width = check_conv_verify_lazy(c, space, cfg, in, state_slots, conv_state, out,
                                           ring_slots, conv_history, capacity, ledger);
  check_league(c, "state_slots", conv_league_bound(cfg, batch));
  ConvParams<T, Y, M> p =
      conv_params(cfg, in, state_slots, conv_state, out, ring_slots, conv_history);
  p.ledger = ledger;
  launch_conv<ExecSpace, T, Y, true, true>("gdn::conv1d_verify_lazy::kernel", space, width,
                                           in.qkv.extent(0), p);
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_CONV_LAUNCH_IMPL_HPP
