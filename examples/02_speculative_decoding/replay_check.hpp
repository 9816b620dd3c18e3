#ifndef GDN_EXAMPLES_SPECULATIVE_REPLAY_CHECK_HPP
#define GDN_EXAMPLES_SPECULATIVE_REPLAY_CHECK_HPP

// The exactness check of gdn_speculative_demo.
//
// Before verify, the state and conv state rows of a sample of layers are
// copied aside. After the fold, gdn::conv1d_fwd and gdn::recurrence_fwd (raw
// gates, bf16 activations) run from those copies over the accepted tokens
// only, which is what a decoder without speculation would have done: with a
// float state one token at a time (plain decoding: one call per accepted
// token position, a token of each row that has one), with a bf16 state one
// call over the step's accepted tokens (a bf16 state is rounded where a call
// stores it). docs/design.md (sections 4 and 7) promises that the folded
// recurrent state (float ring) and the folded conv state equal the replay's
// bit for bit, and that verify's outputs of the accepted tokens equal the
// replay's: speculative decoding equals plain decoding. All three are
// compared on host copies with memcmp, so no code of the library takes part
// in the comparison.

#include <gdn/gdn.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.hpp"

namespace gdn_demo {

/// The first difference found, if any.
struct Mismatch {
  bool found = false;
  int layer = -1;
  int sequence = -1;
  std::string what;  // one or two lines saying where and which values
};

/// Index of the first differing byte of two buffers of `bytes` bytes, or `bytes` if equal.
inline std::size_t first_difference(const void* a, const void* b, std::size_t bytes) {
  if (std::memcmp(a, b, bytes) == 0) return bytes;
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  std::size_t i = 0;
  while (pa[i] == pb[i]) ++i;
  return i;
}

inline float as_float(float x) { return x; }
inline float as_float(gdn::bf16 x) { return static_cast<float>(x); }

/// Copies the rows `source[0 .. tokens)` of layer `layer` into compact [tokens, *] arrays.
inline void gather_tokens(const ExecSpace& space, int layer, const LayerInputs& in,
                          const Index& source, int tokens, const Tokens2D& pre_qkv,
                          const Tokens2D& pre_a, const Tokens2D& pre_b) {
  const std::size_t conv_dim = in.qkv.extent(2), nv = in.a.extent(2);
  const Tokens3D qkv = in.qkv, a = in.a, b = in.b;
  Kokkos::parallel_for(
      "gdn_demo::gather_accepted",
      Kokkos::RangePolicy<ExecSpace>(space, 0, std::size_t(tokens) * conv_dim),
      KOKKOS_LAMBDA(std::size_t i) {
        const std::size_t t = i / conv_dim, c = i % conv_dim;
        const std::uint32_t s = source(t);
        pre_qkv(t, c) = qkv(layer, s, c);
        if (c < nv) {
          pre_a(t, c) = a(layer, s, c);
          pre_b(t, c) = b(layer, s, c);
        }
      });
}

template <class StateT>
class ReplayCheck {
 public:
  /// Whether the replay decodes one token per call (a float state) or one call per step.
  static constexpr bool token_by_token = std::is_same<StateT, float>::value;

  /// Buffers for `sample` layers of `batch` sequences with up to `window` tokens each.
  ReplayCheck(const gdn::HeadConfig& cfg, int batch, int window, int sample)
      : m_cfg(cfg),
        m_batch(batch),
        m_snapshot(Kokkos::view_alloc("gdn_demo::snapshot", Kokkos::WithoutInitializing),
                   std::size_t(sample) * batch, cfg.num_value_heads, cfg.key_head_dim,
                   cfg.value_head_dim),
        m_conv_snapshot(Kokkos::view_alloc("gdn_demo::conv_snapshot", Kokkos::WithoutInitializing),
                        std::size_t(sample) * batch, cfg.conv_dim(), conv_width - 1),
        m_pre_qkv("gdn_demo::pre_qkv", std::size_t(batch) * window, cfg.conv_dim()),
        m_pre_a("gdn_demo::pre_a", std::size_t(batch) * window, cfg.num_value_heads),
        m_pre_b("gdn_demo::pre_b", std::size_t(batch) * window, cfg.num_value_heads),
        m_replay_post("gdn_demo::replay_post_conv", std::size_t(batch) * window, cfg.conv_dim()),
        m_replay_out("gdn_demo::replay_out", std::size_t(batch) * window, cfg.value_dim()),
        m_pre_offsets("gdn_demo::pre_offsets", batch + 1),
        m_pre_source("gdn_demo::pre_source", std::size_t(batch) * window),
        m_replay_slots("gdn_demo::replay_slots", std::size_t(sample) * batch),
        m_h_pre_offsets(Kokkos::create_mirror_view(m_pre_offsets)),
        m_h_pre_source(Kokkos::create_mirror_view(m_pre_source)) {
    auto h_slots = Kokkos::create_mirror_view(m_replay_slots);
    for (std::size_t i = 0; i < h_slots.extent(0); ++i) h_slots(i) = std::uint32_t(i);
    Kokkos::deep_copy(m_replay_slots, h_slots);
  }

  /// Copies aside the state and conv state rows of `layers` (this step's sample) before verify.
  void snapshot(const ExecSpace& space, const Pool<StateT>& state, const ConvPool<Act>& conv_state,
                const std::vector<std::uint32_t>& state_rows, const std::vector<int>& layers) {
    m_layers = layers;
    for (std::size_t c = 0; c < layers.size(); ++c) {
      for (int b = 0; b < m_batch; ++b) {
        const std::uint32_t row = state_rows[std::size_t(layers[c]) * m_batch + b];
        Kokkos::deep_copy(space, state_row(m_snapshot, c * m_batch + b), state_row(state, row));
        Kokkos::deep_copy(space, conv_row(m_conv_snapshot, c * m_batch + b),
                          conv_row(conv_state, row));
      }
    }
  }

  /// After the fold: replays the accepted tokens of the sampled layers with conv1d_fwd and
  /// recurrence_fwd and compares. `offsets` and `accepted` are the host copies of the step's
  /// row offsets and num_accepted.
  Mismatch replay_and_compare(const ExecSpace& space, const Model& model, const Pool<StateT>& state,
                              const ConvPool<Act>& conv_state,
                              const std::vector<std::uint32_t>& state_rows,
                              const LayerInputs& inputs, const Tokens3D& out,
                              const HostIndex& offsets, const HostIndex& accepted) {
    // The accepted tokens' place in the replay's outputs: row b's token p at
    // replay_first[b] + p.
    std::vector<std::size_t> replay_first(m_batch + 1, 0);
    std::uint32_t most = 0;
    for (int b = 0; b < m_batch; ++b) {
      replay_first[b + 1] = replay_first[b] + accepted(b);
      most = accepted(b) > most ? accepted(b) : most;
    }
    const std::size_t vd = std::size_t(m_cfg.value_dim());
    const std::size_t out_bytes = sizeof(Act) * vd;
    const int calls = token_by_token ? int(most) : (most > 0 ? 1 : 0);

    Mismatch bad;
    for (std::size_t c = 0; c < m_layers.size() && !bad.found; ++c) {
      const int l = m_layers[c];
      const auto slots =
          Kokkos::subview(m_replay_slots, std::make_pair(c * m_batch, (c + 1) * m_batch));
      std::vector<Act> replay_out(replay_first[m_batch] * vd);  // [accepted tokens][value_dim]
      for (int k = 0; k < calls; ++k) {
        // The call's tokens: token k of every row that accepted more than k
        // (token by token), or every accepted token (one call).
        m_h_pre_offsets(0) = 0;
        for (int b = 0; b < m_batch; ++b) {
          const std::uint32_t p0 = token_by_token ? std::uint32_t(k) : 0u;
          const std::uint32_t n =
              token_by_token ? (std::uint32_t(k) < accepted(b) ? 1u : 0u) : accepted(b);
          for (std::uint32_t p = 0; p < n; ++p) {
            m_h_pre_source(m_h_pre_offsets(b) + p) = offsets(b) + p0 + p;
          }
          m_h_pre_offsets(b + 1) = m_h_pre_offsets(b) + n;
        }
        Kokkos::deep_copy(m_pre_offsets, m_h_pre_offsets);
        Kokkos::deep_copy(m_pre_source, m_h_pre_source);
        const int tokens = int(m_h_pre_offsets(m_batch));
        const auto rows = std::make_pair(0, tokens);
        const auto post = Kokkos::subview(m_replay_post, rows, Kokkos::ALL);
        gather_tokens(space, l, inputs, m_pre_source, tokens, m_pre_qkv, m_pre_a, m_pre_b);
        gdn::conv1d_fwd(
            space, m_cfg,
            model.conv_inputs(l, Kokkos::subview(m_pre_qkv, rows, Kokkos::ALL), m_pre_offsets),
            slots, m_conv_snapshot, post);
        gdn::recurrence_fwd(
            space, m_cfg,
            model.gate_inputs(l, post, Kokkos::subview(m_pre_a, rows, Kokkos::ALL),
                              Kokkos::subview(m_pre_b, rows, Kokkos::ALL), m_pre_offsets),
            slots, m_snapshot, Kokkos::subview(m_replay_out, rows, Kokkos::ALL));
        space.fence();
        auto h_call = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_replay_out);
        for (int b = 0; b < m_batch; ++b) {
          const std::uint32_t p0 = token_by_token ? std::uint32_t(k) : 0u;
          for (std::uint32_t q = m_h_pre_offsets(b); q < m_h_pre_offsets(b + 1); ++q) {
            const std::size_t p = p0 + (q - m_h_pre_offsets(b));
            std::memcpy(&replay_out[(replay_first[b] + p) * vd], &h_call(q, 0), out_bytes);
          }
        }
      }

      auto h_out = Kokkos::create_mirror_view_and_copy(
          Kokkos::HostSpace(), Kokkos::subview(out, l, Kokkos::ALL, Kokkos::ALL));
      for (int b = 0; b < m_batch && !bad.found; ++b) {
        const std::uint32_t row = state_rows[std::size_t(l) * m_batch + b];
        char line[512];
        {
          auto folded =
              Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), state_row(state, row));
          auto replayed = Kokkos::create_mirror_view_and_copy(
              Kokkos::HostSpace(), state_row(m_snapshot, c * m_batch + b));
          const std::size_t bytes = folded.span() * sizeof(StateT);
          const std::size_t d = first_difference(folded.data(), replayed.data(), bytes);
          if (d != bytes) {
            const std::size_t e = d / sizeof(StateT), Dk = m_cfg.key_head_dim,
                              Dv = m_cfg.value_head_dim;
            std::snprintf(line, sizeof line,
                          "  folded state (pool row %u) != replay of the accepted tokens:\n"
                          "  value head %zu, S[%zu][%zu]: fold %.9g, replay %.9g\n",
                          row, e / (Dk * Dv), (e / Dv) % Dk, e % Dv,
                          double(as_float(folded.data()[e])), double(as_float(replayed.data()[e])));
            bad = Mismatch{true, l, b, line};
            break;
          }
        }
        {
          auto folded =
              Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), conv_row(conv_state, row));
          auto replayed = Kokkos::create_mirror_view_and_copy(
              Kokkos::HostSpace(), conv_row(m_conv_snapshot, c * m_batch + b));
          const std::size_t bytes = folded.span() * sizeof(Act);
          const std::size_t d = first_difference(folded.data(), replayed.data(), bytes);
          if (d != bytes) {
            const std::size_t e = d / sizeof(Act), taps = conv_width - 1;
            std::snprintf(line, sizeof line,
                          "  folded conv state (pool row %u) != replay of the accepted tokens:\n"
                          "  channel %zu, position %zu: fold %.9g, replay %.9g\n",
                          row, e / taps, e % taps, double(as_float(folded.data()[e])),
                          double(as_float(replayed.data()[e])));
            bad = Mismatch{true, l, b, line};
            break;
          }
        }
        for (std::uint32_t p = 0; p < accepted(b); ++p) {
          const std::size_t t_verify = offsets(b) + p, t_replay = replay_first[b] + p;
          const Act* const replayed = &replay_out[t_replay * vd];
          const std::size_t od = first_difference(&h_out(t_verify, 0), replayed, out_bytes);
          if (od == out_bytes) continue;
          const std::size_t j = od / sizeof(Act);
          std::snprintf(line, sizeof line,
                        "  verify output of accepted token %u != replay: channel %zu, "
                        "verify %.9g, replay %.9g\n",
                        p, j, double(as_float(h_out(t_verify, j))), double(as_float(replayed[j])));
          bad = Mismatch{true, l, b, line};
          break;
        }
      }
    }
    return bad;
  }

 private:
  template <class P>
  static auto state_row(const P& pool, std::size_t row) {
    return Kokkos::subview(pool, row, Kokkos::ALL, Kokkos::ALL, Kokkos::ALL);
  }
  template <class P>
  static auto conv_row(const P& pool, std::size_t row) {
    return Kokkos::subview(pool, row, Kokkos::ALL, Kokkos::ALL);
  }

  gdn::HeadConfig m_cfg;
  int m_batch;
  std::vector<int> m_layers;  // this step's sample
  Pool<StateT> m_snapshot;    // [sample*B, nv, Dk, Dv]: sampled rows before verify, then replayed
  ConvPool<Act> m_conv_snapshot;  // [sample*B, conv_dim, W-1]: likewise for the conv state
  Tokens2D m_pre_qkv;             // [tokens, conv_dim]: accepted tokens only, pre-conv
  Tokens2D m_pre_a;               // [tokens, nv]
  Tokens2D m_pre_b;               // [tokens, nv]
  Tokens2D m_replay_post;         // [tokens, conv_dim]: the replay's post-conv qkv
  Tokens2D m_replay_out;          // [tokens, value_dim]
  Index m_pre_offsets;            // [B+1]
  Index m_pre_source;             // [tokens]: the drafted token each accepted token comes from
  Index m_replay_slots;           // [sample*B]: 0, 1, 2, ...
  HostIndex m_h_pre_offsets;
  HostIndex m_h_pre_source;
};

}  // namespace gdn_demo

#endif  // GDN_EXAMPLES_SPECULATIVE_REPLAY_CHECK_HPP
