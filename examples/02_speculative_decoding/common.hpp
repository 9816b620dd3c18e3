#ifndef GDN_EXAMPLES_SPECULATIVE_COMMON_HPP
#define GDN_EXAMPLES_SPECULATIVE_COMMON_HPP

// Types, memory accounting and the final report of gdn_speculative_demo.

#include <gdn/gdn.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>

#include "options.hpp"

namespace gdn_demo {

// Everything runs on the default execution space (CUDA in a CUDA build, else
// OpenMP or Serial) and lives in its memory space.
using ExecSpace = Kokkos::DefaultExecutionSpace;
using Mem = ExecSpace::memory_space;
template <class T>
using Pool = Kokkos::View<T****, Kokkos::LayoutRight, Mem>;         // state or ring pool
using Tokens3D = Kokkos::View<float***, Kokkos::LayoutRight, Mem>;  // [L, tokens, channels]
using Tokens2D = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;   // [tokens, channels]
using Index = Kokkos::View<std::uint32_t*, Mem>;                    // [B] or [B+1]
using HostIndex = Index::HostMirror;
using Table = Kokkos::View<std::uint32_t**, Mem>;  // [L, B], the layout the fold takes

inline double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

template <class StateT>
const char* dtype_name() {
  return sizeof(StateT) == 2 ? "bf16" : "float";
}

/// Bytes of the demo's device buffers, and of the alternative to the ring.
struct MemoryFootprint {
  double state_pool;     // [L*B, nv, Dk, Dv]
  double ring;           // [L*B, nk, window, record_stride] floats
  double intermediates;  // the alternative: a state checkpoint per drafted token
  double tokens;         // per-layer inputs and outputs of one step
  double checks;         // snapshot and replay buffers of the exactness check
};

template <class StateT>
MemoryFootprint footprint(const Options& o, const gdn::HeadConfig& cfg, std::size_t record_stride) {
  const double rows = double(o.layers) * o.batch;
  const double state_row =
      double(cfg.num_value_heads) * cfg.key_head_dim * cfg.value_head_dim * sizeof(StateT);
  const double token = sizeof(float) * double(cfg.conv_dim() + 2 * cfg.num_value_heads +
                                              cfg.value_dim());  // qkv, decay, beta, out
  const double drafted = double(o.batch) * o.window;
  MemoryFootprint m;
  m.state_pool = rows * state_row;
  m.ring = rows * cfg.num_key_heads * o.window * record_stride * sizeof(float);
  m.intermediates = rows * o.window * state_row;
  m.tokens = o.layers * drafted * token;
  m.checks = double(o.check_layers) * o.batch * state_row + drafted * token;
  return m;
}

struct Totals {
  int steps = 0;
  long long drafted = 0;
  long long accepted = 0;
  double verify_s = 0;
  double fold_s = 0;
  long long checked_layer_steps = 0;
  long long checked_rows = 0;
};

template <class StateT>
void print_summary(const Options& o, const gdn::HeadConfig& cfg, std::size_t record_stride,
                   const Totals& t, bool exact) {
  const MemoryFootprint m = footprint<StateT>(o, cfg, record_stride);
  const double steps = t.steps > 0 ? t.steps : 1;
  const double busy = t.verify_s + t.fold_s;
  std::printf("\nsummary (%s, %d layers, batch %d, window %d%s, state %s)\n", ExecSpace::name(),
              o.layers, o.batch, o.window, o.ragged ? " ragged" : "", dtype_name<StateT>());
  std::printf("  steps                 %d\n", t.steps);
  std::printf("  drafted tokens        %lld\n", t.drafted);
  std::printf("  accepted tokens       %lld (%.1f%% of drafted, %.2f per sequence and step)\n",
              t.accepted, t.drafted > 0 ? 100.0 * double(t.accepted) / double(t.drafted) : 0.0,
              double(t.accepted) / (steps * o.batch));
  std::printf("  time per step         verify %.3f ms + fold %.3f ms = %.3f ms (%d layer%s)\n",
              1e3 * t.verify_s / steps, 1e3 * t.fold_s / steps, 1e3 * busy / steps, o.layers,
              o.layers == 1 ? "" : "s");
  std::printf("  tokens per second     %.1f (accepted tokens / (verify + fold time))\n",
              busy > 0 ? double(t.accepted) / busy : 0.0);
  std::printf(
      "  ring memory           %.2f MiB (layers x batch x nk x window records of %zu "
      "floats)\n",
      mib(m.ring), record_stride);
  std::printf("  every intermediate    %.2f MiB (the alternative: a %s state per drafted token)\n",
              mib(m.intermediates), dtype_name<StateT>());
  std::printf("  ring saves            %.1fx\n", m.ring > 0 ? m.intermediates / m.ring : 0.0);
  std::printf(
      "  exactness checks      %lld layer-steps, %lld (layer, sequence) rows: folded state\n"
      "                        and accepted outputs == forward replay, byte for byte\n",
      t.checked_layer_steps, t.checked_rows);
  std::printf("exact: %s\n", exact ? "yes" : "no");
  std::fflush(stdout);
}

}  // namespace gdn_demo

#endif  // GDN_EXAMPLES_SPECULATIVE_COMMON_HPP
