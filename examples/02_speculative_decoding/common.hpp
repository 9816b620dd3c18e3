#ifndef GDN_EXAMPLES_SPECULATIVE_COMMON_HPP
#define GDN_EXAMPLES_SPECULATIVE_COMMON_HPP

// Types, the model's parameters, the per-layer inputs of gdn's calls, memory
// accounting and the final report of gdn_speculative_demo.

#include <gdn/gdn.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "options.hpp"

namespace gdn_demo {

// Everything runs on the default execution space (CUDA in a CUDA build, else
// OpenMP or Serial) and lives in its memory space.
using ExecSpace = Kokkos::DefaultExecutionSpace;
using Mem = ExecSpace::memory_space;
// The activation type of the engine: pre- and post-conv qkv, the raw gates
// and the layer output are bf16, as in a Qwen3-Next checkpoint run in bf16.
using Act = gdn::bf16;
// The conv kernel width of Qwen3-Next.
inline constexpr int conv_width = 4;

template <class T>
using Pool = Kokkos::View<T****, Kokkos::LayoutRight, Mem>;  // state or ring pool
template <class T>
using ConvPool = Kokkos::View<T***, Kokkos::LayoutRight, Mem>;     // conv state or conv ring
using Tokens3D = Kokkos::View<Act***, Kokkos::LayoutRight, Mem>;   // [L, tokens, channels]
using Tokens2D = Kokkos::View<Act**, Kokkos::LayoutRight, Mem>;    // [tokens, channels]
using Params2D = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;  // [L, channels]
using Index = Kokkos::View<std::uint32_t*, Mem>;                   // [B] or [B+1]
using HostIndex = Index::HostMirror;
using Table = Kokkos::View<std::uint32_t**, Mem>;  // [L, B], the layout the fold takes

// What the library's input structs take: any layout converts to these.
using ActIn = Kokkos::View<const Act**, Kokkos::LayoutStride, Mem>;  // [tokens, channels]
using ActOut = Kokkos::View<Act**, Kokkos::LayoutStride, Mem>;       // [tokens, channels]
using OffsetsIn = Kokkos::View<const std::uint32_t*, Kokkos::LayoutStride, Mem>;  // [B+1]

// Counter-based random numbers: a value depends only on (key, element index),
// so the inputs are the same on every backend and for every thread count.
KOKKOS_INLINE_FUNCTION std::uint64_t mix64(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A float in the open interval (0, 1): 23 random bits, centred in their cell.
KOKKOS_INLINE_FUNCTION float open_unit(std::uint64_t key, std::uint64_t index) {
  return (float(mix64(key ^ mix64(index)) >> 41) + 0.5f) * (1.0f / 8388608.0f);
}

/// Fills a dense view with values uniform in (lo, hi), rounded to its value type.
template <class V>
void fill_uniform(const ExecSpace& space, std::uint64_t key, const V& v, float lo, float hi) {
  using T = typename V::value_type;
  T* data = v.data();  // dense LayoutRight: one flat index per element
  Kokkos::parallel_for(
      "gdn_demo::fill_uniform", Kokkos::RangePolicy<ExecSpace>(space, 0, v.size()),
      KOKKOS_LAMBDA(std::size_t i) { data[i] = T(lo + (hi - lo) * open_unit(key, i)); });
}

/// The parameters of the recurrent part of every layer, as a checkpoint holds them.
struct Model {
  Kokkos::View<float***, Kokkos::LayoutRight, Mem> conv_weight;  // [L, conv_dim, W]
  Params2D conv_bias;                                            // [L, conv_dim]
  Params2D A_log;                                                // [L, nv]
  Params2D dt_bias;                                              // [L, nv]

  /// Random parameters in the ranges of Qwen3-Next's initialisation: conv taps and bias
  /// in (-1/sqrt(W), 1/sqrt(W)) (PyTorch's Conv1d), exp(A_log) in (1, 16), dt_bias the
  /// inverse softplus of a dt log-uniform in (0.001, 0.1).
  Model(const ExecSpace& space, const gdn::HeadConfig& cfg, int layers, std::uint64_t seed)
      : conv_weight("gdn_demo::conv_weight", layers, cfg.conv_dim(), conv_width),
        conv_bias("gdn_demo::conv_bias", layers, cfg.conv_dim()),
        A_log("gdn_demo::A_log", layers, cfg.num_value_heads),
        dt_bias("gdn_demo::dt_bias", layers, cfg.num_value_heads) {
    const float tap = 1.0f / std::sqrt(float(conv_width));
    fill_uniform(space, mix64(seed ^ 0xc0de1u), conv_weight, -tap, tap);
    fill_uniform(space, mix64(seed ^ 0xc0de2u), conv_bias, -tap, tap);
    auto h_A_log = Kokkos::create_mirror_view(A_log);
    auto h_dt_bias = Kokkos::create_mirror_view(dt_bias);
    const std::uint64_t key = mix64(seed ^ 0x9a7e5u);
    for (std::size_t i = 0; i < A_log.size(); ++i) {
      h_A_log.data()[i] = std::log(1.0f + 15.0f * open_unit(key, 2 * i));
      const float dt = std::exp(std::log(1e-3f) + std::log(100.0f) * open_unit(key, 2 * i + 1));
      h_dt_bias.data()[i] = dt + std::log(-std::expm1(-dt));  // softplus(dt_bias) == dt
    }
    Kokkos::deep_copy(space, A_log, h_A_log);
    Kokkos::deep_copy(space, dt_bias, h_dt_bias);
    space.fence();  // the host mirrors go out of scope
  }

  /// The conv's inputs for layer `l`: pre-conv qkv [tokens, conv_dim].
  gdn::ConvInputs<Mem, Act> conv_inputs(int l, const ActIn& qkv, const OffsetsIn& offsets) const {
    return {qkv, Kokkos::subview(conv_weight, l, Kokkos::ALL, Kokkos::ALL),
            Kokkos::subview(conv_bias, l, Kokkos::ALL), offsets};
  }

  /// The recurrence's inputs for layer `l`: post-conv qkv [tokens, conv_dim], raw gates
  /// a and b [tokens, nv].
  gdn::GateInputs<Mem, Act> gate_inputs(int l, const ActIn& qkv, const ActIn& a, const ActIn& b,
                                        const OffsetsIn& offsets) const {
    return {qkv,
            a,
            b,
            Kokkos::subview(A_log, l, Kokkos::ALL),
            Kokkos::subview(dt_bias, l, Kokkos::ALL),
            offsets};
  }
};

/// One batch of per-token inputs of every layer: what the layers below hand to the
/// recurrent part (in the demo, random numbers, different for every layer).
struct LayerInputs {
  Tokens3D qkv;  // [L, tokens, conv_dim] pre-conv
  Tokens3D a;    // [L, tokens, nv] raw decay gate input
  Tokens3D b;    // [L, tokens, nv] raw beta input

  LayerInputs(const gdn::HeadConfig& cfg, int layers, int tokens)
      : qkv(Kokkos::view_alloc("gdn_demo::qkv", Kokkos::WithoutInitializing), layers, tokens,
            cfg.conv_dim()),
        a(Kokkos::view_alloc("gdn_demo::a", Kokkos::WithoutInitializing), layers, tokens,
          cfg.num_value_heads),
        b(Kokkos::view_alloc("gdn_demo::b", Kokkos::WithoutInitializing), layers, tokens,
          cfg.num_value_heads) {}

  /// New inputs: qkv in (-1, 1), a in (-1, 1), b in (-2, 2).
  void draw(const ExecSpace& space, std::uint64_t key) const {
    fill_uniform(space, mix64(key ^ 1u), qkv, -1.0f, 1.0f);
    fill_uniform(space, mix64(key ^ 2u), a, -1.0f, 1.0f);
    fill_uniform(space, mix64(key ^ 3u), b, -2.0f, 2.0f);
  }
  static auto layer(const Tokens3D& v, int l) {
    return Kokkos::subview(v, l, Kokkos::ALL, Kokkos::ALL);
  }
};

inline double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

template <class StateT>
const char* dtype_name() {
  return sizeof(StateT) == 2 ? "bf16" : "float";
}

/// Bytes of the demo's device buffers, and of the alternative to the rings.
struct MemoryFootprint {
  double state_pool;     // [L*B, nv, Dk, Dv]
  double conv_state;     // [L*B, conv_dim, W-1] bf16
  double ring;           // [L*B, nk, positions, record_stride] floats: the ring or the history
  double conv_ring;      // [L*B, positions, conv_dim] bf16: the conv ring or history
  double ledger;         // [L*B, lazy_ledger_words(capacity)] uint32 (the lazy flow)
  double intermediates;  // the alternative: both states checkpointed per drafted token
  double tokens;         // per-layer inputs and outputs of one step, the post-conv scratch
  double checks;         // snapshot and replay buffers of the exactness check
};

template <class StateT>
MemoryFootprint footprint(const Options& o, const gdn::HeadConfig& cfg, std::size_t record_stride) {
  const double rows = double(o.layers) * o.batch;
  const double state_row =
      double(cfg.num_value_heads) * cfg.key_head_dim * cfg.value_head_dim * sizeof(StateT);
  const double conv_row = double(cfg.conv_dim()) * (conv_width - 1) * sizeof(Act);
  // pre-conv qkv, a, b, out of one token
  const double token =
      sizeof(Act) * double(cfg.conv_dim() + 2 * cfg.num_value_heads + cfg.value_dim());
  const double post_conv = sizeof(Act) * double(cfg.conv_dim());
  const double drafted = double(o.batch) * o.window;
  MemoryFootprint m;
  m.state_pool = rows * state_row;
  m.conv_state = rows * conv_row;
  const double positions = o.eager ? o.window : o.history();  // RING_LEN or the capacity
  m.ring = rows * cfg.num_key_heads * positions * record_stride * sizeof(float);
  m.conv_ring = rows * positions * post_conv;
  m.ledger = o.eager ? 0.0 : rows * gdn::lazy_ledger_words(std::size_t(o.history())) * 4.0;
  m.intermediates = rows * o.window * (state_row + conv_row);
  m.tokens = drafted * (o.layers * token + post_conv);
  m.checks =
      double(o.check_layers) * o.batch * (state_row + conv_row) + drafted * (token + post_conv);
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
  const double rings = m.ring + m.conv_ring + m.ledger;
  const char* commit = o.eager ? "fold" : "accept";
  std::printf("\nsummary (%s, %d layers, batch %d, window %d%s, state %s, %s flow)\n",
              ExecSpace::name(), o.layers, o.batch, o.window, o.ragged ? " ragged" : "",
              dtype_name<StateT>(), o.eager ? "eager" : "lazy");
  std::printf("  steps                 %d\n", t.steps);
  std::printf("  drafted tokens        %lld\n", t.drafted);
  std::printf("  accepted tokens       %lld (%.1f%% of drafted, %.2f per sequence and step)\n",
              t.accepted, t.drafted > 0 ? 100.0 * double(t.accepted) / double(t.drafted) : 0.0,
              double(t.accepted) / (steps * o.batch));
  std::printf("  time per step         verify %.3f ms + %s %.3f ms = %.3f ms (%d layer%s)\n",
              1e3 * t.verify_s / steps, commit, 1e3 * t.fold_s / steps, 1e3 * busy / steps,
              o.layers, o.layers == 1 ? "" : "s");
  std::printf("  tokens per second     %.1f (accepted tokens / (verify + %s time))\n",
              busy > 0 ? double(t.accepted) / busy : 0.0, commit);
  if (o.eager) {
    std::printf(
        "  ring memory           %.2f MiB: records %.2f MiB (layers x batch x nk x window of %zu\n"
        "                        floats) + conv ring %.2f MiB (layers x batch x window x conv_dim\n"
        "                        bf16 inputs)\n",
        mib(rings), mib(m.ring), record_stride, mib(m.conv_ring));
  } else {
    std::printf(
        "  history memory        %.2f MiB: records %.2f MiB (layers x batch x nk x %d of %zu\n"
        "                        floats) + conv history %.2f MiB (layers x batch x %d x conv_dim\n"
        "                        bf16 inputs) + ledger %.3f MiB\n",
        mib(rings), mib(m.ring), o.history(), record_stride, mib(m.conv_ring), o.history(),
        mib(m.ledger));
  }
  std::printf(
      "  every intermediate    %.2f MiB (the alternative: a %s state and a conv state per\n"
      "                        drafted token)\n",
      mib(m.intermediates), dtype_name<StateT>());
  std::printf("  ring saves            %.1fx\n", rings > 0 ? m.intermediates / rings : 0.0);
  const bool per_token = std::is_same<StateT, float>::value;
  std::printf(
      "  exactness checks      %lld layer-steps, %lld (layer, sequence) rows: committed state,\n"
      "                        committed conv state and accepted outputs == conv1d_fwd +\n"
      "                        recurrence_fwd replay %s, byte for byte\n",
      t.checked_layer_steps, t.checked_rows,
      per_token ? "one token per call" : "of each step's accepted tokens");
  if (per_token) {
    std::printf("speculative == plain decoding: %s\n", exact ? "yes" : "no");
  }
  std::printf("exact: %s\n", exact ? "yes" : "no");
  std::fflush(stdout);
}

}  // namespace gdn_demo

#endif  // GDN_EXAMPLES_SPECULATIVE_COMMON_HPP
