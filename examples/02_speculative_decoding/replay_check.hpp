#ifndef GDN_EXAMPLES_SPECULATIVE_REPLAY_CHECK_HPP
#define GDN_EXAMPLES_SPECULATIVE_REPLAY_CHECK_HPP

// The exactness check of gdn_speculative_demo.
//
// Before verify, the state rows of a sample of layers are copied aside. After
// the fold, gdn::recurrence_fwd runs from that copy over the accepted tokens
// only (gathered into a compact batch), which is what a decoder without a
// ring would have done. docs/design.md (section 4) promises that the folded
// state equals it bit for bit (float ring) and that verify's outputs of the
// accepted tokens equal the forward's; both are compared on host copies with memcmp, so no code of
// the library takes part in the comparison.

#include <gdn/gdn.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
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
inline void gather_tokens(const ExecSpace& space, int layer, const Tokens3D& qkv,
                          const Tokens3D& decay, const Tokens3D& beta, const Index& source,
                          int tokens, const Tokens2D& pre_qkv, const Tokens2D& pre_decay,
                          const Tokens2D& pre_beta) {
  const std::size_t conv_dim = qkv.extent(2), nv = decay.extent(2);
  Kokkos::parallel_for(
      "gdn_demo::gather_accepted",
      Kokkos::RangePolicy<ExecSpace>(space, 0, std::size_t(tokens) * conv_dim),
      KOKKOS_LAMBDA(std::size_t i) {
        const std::size_t t = i / conv_dim, c = i % conv_dim;
        const std::uint32_t s = source(t);
        pre_qkv(t, c) = qkv(layer, s, c);
        if (c < nv) {
          pre_decay(t, c) = decay(layer, s, c);
          pre_beta(t, c) = beta(layer, s, c);
        }
      });
}

template <class StateT>
class ReplayCheck {
 public:
  /// Buffers for `sample` layers of `batch` sequences with up to `window` tokens each.
  ReplayCheck(const gdn::HeadConfig& cfg, int batch, int window, int sample)
      : m_cfg(cfg),
        m_batch(batch),
        m_snapshot(Kokkos::view_alloc("gdn_demo::snapshot", Kokkos::WithoutInitializing),
                   std::size_t(sample) * batch, cfg.num_value_heads, cfg.key_head_dim,
                   cfg.value_head_dim),
        m_pre_qkv("gdn_demo::pre_qkv", std::size_t(batch) * window, cfg.conv_dim()),
        m_pre_decay("gdn_demo::pre_decay", std::size_t(batch) * window, cfg.num_value_heads),
        m_pre_beta("gdn_demo::pre_beta", std::size_t(batch) * window, cfg.num_value_heads),
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

  /// Copies aside the state rows of `layers` (this step's sample) before verify.
  void snapshot(const ExecSpace& space, const Pool<StateT>& state,
                const std::vector<std::uint32_t>& state_rows, const std::vector<int>& layers) {
    m_layers = layers;
    for (std::size_t c = 0; c < layers.size(); ++c) {
      for (int b = 0; b < m_batch; ++b) {
        const std::uint32_t row = state_rows[std::size_t(layers[c]) * m_batch + b];
        Kokkos::deep_copy(space, state_row(m_snapshot, c * m_batch + b), state_row(state, row));
      }
    }
  }

  /// After the fold: replays the accepted tokens of the sampled layers and compares.
  /// `offsets` and `accepted` are the host copies of the step's row offsets and num_accepted.
  Mismatch replay_and_compare(const ExecSpace& space, const Pool<StateT>& state,
                              const std::vector<std::uint32_t>& state_rows, const Tokens3D& qkv,
                              const Tokens3D& decay, const Tokens3D& beta, const Tokens3D& out,
                              const HostIndex& offsets, const HostIndex& accepted) {
    // The accepted prefix of every sequence as a batch of its own.
    m_h_pre_offsets(0) = 0;
    for (int b = 0; b < m_batch; ++b) {
      for (std::uint32_t p = 0; p < accepted(b); ++p) {
        m_h_pre_source(m_h_pre_offsets(b) + p) = offsets(b) + p;
      }
      m_h_pre_offsets(b + 1) = m_h_pre_offsets(b) + accepted(b);
    }
    Kokkos::deep_copy(m_pre_offsets, m_h_pre_offsets);
    Kokkos::deep_copy(m_pre_source, m_h_pre_source);
    const int tokens = int(m_h_pre_offsets(m_batch));
    const auto rows = std::make_pair(0, tokens);
    const gdn::TokenInputs<Mem> prefix{Kokkos::subview(m_pre_qkv, rows, Kokkos::ALL),
                                       Kokkos::subview(m_pre_decay, rows, Kokkos::ALL),
                                       Kokkos::subview(m_pre_beta, rows, Kokkos::ALL),
                                       m_pre_offsets};
    const std::size_t out_bytes = sizeof(float) * std::size_t(m_cfg.value_dim());

    Mismatch bad;
    for (std::size_t c = 0; c < m_layers.size() && !bad.found; ++c) {
      const int l = m_layers[c];
      gather_tokens(space, l, qkv, decay, beta, m_pre_source, tokens, m_pre_qkv, m_pre_decay,
                    m_pre_beta);
      const auto slots = std::make_pair(c * m_batch, (c + 1) * m_batch);
      gdn::recurrence_fwd(space, m_cfg, prefix, Kokkos::subview(m_replay_slots, slots), m_snapshot,
                          Kokkos::subview(m_replay_out, rows, Kokkos::ALL));
      space.fence();

      auto h_out = Kokkos::create_mirror_view_and_copy(
          Kokkos::HostSpace(), Kokkos::subview(out, l, Kokkos::ALL, Kokkos::ALL));
      auto h_replay_out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), m_replay_out);
      for (int b = 0; b < m_batch && !bad.found; ++b) {
        const std::uint32_t row = state_rows[std::size_t(l) * m_batch + b];
        auto folded =
            Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), state_row(state, row));
        auto replayed = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(),
                                                            state_row(m_snapshot, c * m_batch + b));
        const std::size_t state_bytes = folded.span() * sizeof(StateT);
        const std::size_t sd = first_difference(folded.data(), replayed.data(), state_bytes);
        char line[512];
        if (sd != state_bytes) {
          const std::size_t e = sd / sizeof(StateT), Dk = m_cfg.key_head_dim,
                            Dv = m_cfg.value_head_dim;
          std::snprintf(line, sizeof line,
                        "  folded state (pool row %u) != forward replay of the accepted tokens:\n"
                        "  value head %zu, S[%zu][%zu]: fold %.9g, replay %.9g\n",
                        row, e / (Dk * Dv), (e / Dv) % Dk, e % Dv,
                        double(as_float(folded.data()[e])), double(as_float(replayed.data()[e])));
          bad = Mismatch{true, l, b, line};
          break;
        }
        for (std::uint32_t p = 0; p < accepted(b); ++p) {
          const std::size_t t_verify = offsets(b) + p, t_replay = m_h_pre_offsets(b) + p;
          const std::size_t od =
              first_difference(&h_out(t_verify, 0), &h_replay_out(t_replay, 0), out_bytes);
          if (od == out_bytes) continue;
          const std::size_t j = od / sizeof(float);
          std::snprintf(line, sizeof line,
                        "  verify output of accepted token %u != forward replay: channel %zu, "
                        "verify %.9g, replay %.9g\n",
                        p, j, double(h_out(t_verify, j)), double(h_replay_out(t_replay, j)));
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

  gdn::HeadConfig m_cfg;
  int m_batch;
  std::vector<int> m_layers;  // this step's sample
  Pool<StateT> m_snapshot;    // [sample*B, nv, Dk, Dv]: sampled rows before verify, then replayed
  Tokens2D m_pre_qkv;         // [tokens, conv_dim]: accepted tokens only
  Tokens2D m_pre_decay;       // [tokens, nv]
  Tokens2D m_pre_beta;        // [tokens, nv]
  Tokens2D m_replay_out;      // [tokens, value_dim]
  Index m_pre_offsets;        // [B+1]
  Index m_pre_source;         // [tokens]: the drafted token each accepted token comes from
  Index m_replay_slots;       // [sample*B]: 0, 1, 2, ...
  HostIndex m_h_pre_offsets;
  HostIndex m_h_pre_source;
};

}  // namespace gdn_demo

#endif  // GDN_EXAMPLES_SPECULATIVE_REPLAY_CHECK_HPP
