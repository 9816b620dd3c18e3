// gdn_speculative_demo: the Gated DeltaNet layers of a Qwen3-Next-style model
// through speculative decoding, with every step checked for exactness.
//
// One step, for `batch` sequences and `layers` layers:
//   1. draft: `window` tokens per sequence (a random length up to `window`
//      with --ragged); random per-token inputs, different for every layer;
//   2. gdn::recurrence_verify_ring on every layer: outputs for all drafted
//      tokens, ring records instead of a state write-back;
//   3. acceptance: n[b] in [1, drafted length] tokens of sequence b are kept;
//   4. one gdn::state_fold for all layers commits the accepted prefixes; the
//      next step starts from the committed state.
// Only 2 and 4 are timed. After 4, a rotating sample of layers is replayed
// with gdn::recurrence_fwd over the accepted tokens alone, from a copy of the
// state taken before 2; the folded state rows and the accepted verify
// outputs must equal the replay byte for byte (replay_check.hpp).
//
// All layers share one state pool and one ring pool, addressed through
// layer-major row tables (two different permutations), as a serving
// engine's cache would be.

#include <gdn/gdn.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common.hpp"
#include "options.hpp"
#include "replay_check.hpp"

namespace gdn_demo {

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

/// New draft inputs for every layer: qkv in (-1, 1), decay in (0.8, 1), beta in (0, 1).
inline void draw_inputs(const ExecSpace& space, std::uint64_t key, const Tokens3D& qkv,
                        const Tokens3D& decay, const Tokens3D& beta) {
  const std::size_t n_qkv = qkv.size(), n_gate = decay.size();
  float* q = qkv.data();  // dense LayoutRight: one flat index per element
  float* d = decay.data();
  float* be = beta.data();
  Kokkos::parallel_for(
      "gdn_demo::draw_qkv", Kokkos::RangePolicy<ExecSpace>(space, 0, n_qkv),
      KOKKOS_LAMBDA(std::size_t i) { q[i] = 2.0f * open_unit(key, i) - 1.0f; });
  Kokkos::parallel_for(
      "gdn_demo::draw_gates", Kokkos::RangePolicy<ExecSpace>(space, 0, n_gate),
      KOKKOS_LAMBDA(std::size_t i) {
        d[i] = 1.0f - 0.2f * open_unit(key, n_qkv + i);
        be[i] = open_unit(key, n_qkv + n_gate + i);
      });
}

/// Layer-major row tables: (layer l, sequence b) -> pool row, as a [L, B]
/// table for the fold and one [B] view per layer for verify.
struct RowTable {
  std::vector<std::uint32_t> host;  // [L * B]
  Table table;                      // [L, B]
  std::vector<Index> per_layer;     // L views of [B]

  RowTable(const std::string& name, int layers, int batch, std::mt19937_64& rng)
      : host(std::size_t(layers) * batch), table(name, layers, batch), per_layer(layers) {
    std::iota(host.begin(), host.end(), 0u);
    std::shuffle(host.begin(), host.end(), rng);
    auto h_table = Kokkos::create_mirror_view(table);
    for (int l = 0; l < layers; ++l) {
      per_layer[l] = Index(name, batch);
      auto h_layer = Kokkos::create_mirror_view(per_layer[l]);
      for (int b = 0; b < batch; ++b) h_table(l, b) = h_layer(b) = at(l, b);
      Kokkos::deep_copy(per_layer[l], h_layer);
    }
    Kokkos::deep_copy(table, h_table);
  }
  std::uint32_t at(int l, int b) const { return host[std::size_t(l) * table.extent(1) + b]; }
};

template <class StateT>
int simulate(const Options& o) {
  const ExecSpace space;
  const gdn::HeadConfig cfg{o.nk, o.nv, o.head_dim, o.head_dim};
  const int L = o.layers, B = o.batch, W = o.window, C = o.check_layers;
  const int T = B * W;  // drafted tokens per layer and step, at most
  const int nk = cfg.num_key_heads, nv = cfg.num_value_heads;
  const int Dk = cfg.key_head_dim, Dv = cfg.value_head_dim;
  const std::size_t record_stride = gdn::ring_record_elements(Dk, Dv, cfg.group_size());

  // The library checks the head geometry on every call and throws
  // gdn::InvalidArgument; an empty fold asks it before anything large is allocated.
  gdn::state_fold(space, cfg, Table("probe", 0, 0), Pool<StateT>("probe", 0, nv, Dk, Dv),
                  Table("probe", 0, 0), Pool<float>("probe", 0, nk, W, record_stride),
                  Index("probe", 0));

  const MemoryFootprint mem = footprint<StateT>(o, cfg, record_stride);
  std::printf("gdn_speculative_demo on %s (concurrency %d)\n", ExecSpace::name(),
              int(space.concurrency()));
  std::printf("  %d layers, batch %d, window %d%s, %d steps; nk %d, nv %d, Dk = Dv = %d\n", L, B, W,
              o.ragged ? " (ragged)" : "", o.steps, nk, nv, Dk);
  std::printf("  state %s, ring float; accept-prob %.2f, seed %llu, %d layer(s) checked per step\n",
              dtype_name<StateT>(), o.accept_prob, static_cast<unsigned long long>(o.seed), C);
  std::printf(
      "  device memory: state pool %.1f MiB, ring %.2f MiB, inputs/outputs %.1f MiB, "
      "checks %.1f MiB\n",
      mib(mem.state_pool), mib(mem.ring), mib(mem.tokens), mib(mem.checks));
  std::fflush(stdout);

  // ---- the model: pools, row tables, per-layer inputs and outputs ----------
  Pool<StateT> state(Kokkos::view_alloc("gdn_demo::state", Kokkos::WithoutInitializing), L * B, nv,
                     Dk,
                     Dv);  // [slots, nv, Dk, Dv]
  Pool<float> ring(Kokkos::view_alloc("gdn_demo::ring", Kokkos::WithoutInitializing), L * B, nk, W,
                   record_stride);  // [ring_rows, nk, RING_LEN, record_stride]
  {
    StateT* s = state.data();
    const std::uint64_t key = mix64(o.seed ^ 0x5eedu);
    Kokkos::parallel_for(
        "gdn_demo::initial_state", Kokkos::RangePolicy<ExecSpace>(space, 0, state.size()),
        KOKKOS_LAMBDA(std::size_t i) { s[i] = StateT(open_unit(key, i) - 0.5f); });
  }
  // Two independent shuffles: a mix-up of the tables or of the layers would show.
  std::mt19937_64 table_rng(mix64(o.seed + 7));
  const RowTable state_rows("gdn_demo::state_rows", L, B, table_rng);
  const RowTable ring_rows("gdn_demo::ring_rows", L, B, table_rng);

  Tokens3D qkv("gdn_demo::qkv", L, T, cfg.conv_dim());   // [L, tokens, conv_dim]
  Tokens3D decay("gdn_demo::decay", L, T, nv);           // [L, tokens, nv]
  Tokens3D beta("gdn_demo::beta", L, T, nv);             // [L, tokens, nv]
  Tokens3D out("gdn_demo::out", L, T, cfg.value_dim());  // [L, tokens, value_dim]
  Index offsets("gdn_demo::row_offsets", B + 1);         // [B+1]
  auto h_offsets = Kokkos::create_mirror_view(offsets);
  for (int b = 0; b <= B; ++b) h_offsets(b) = std::uint32_t(b * W);
  Kokkos::deep_copy(offsets, h_offsets);
  std::vector<gdn::TokenInputs<Mem>> layer_inputs(L);
  for (int l = 0; l < L; ++l) {
    layer_inputs[l] = {Kokkos::subview(qkv, l, Kokkos::ALL, Kokkos::ALL),
                       Kokkos::subview(decay, l, Kokkos::ALL, Kokkos::ALL),
                       Kokkos::subview(beta, l, Kokkos::ALL, Kokkos::ALL), offsets};
  }
  Index num_accepted("gdn_demo::num_accepted", B);  // [B]
  auto h_num_accepted = Kokkos::create_mirror_view(num_accepted);

  ReplayCheck<StateT> check(cfg, B, W, C);
  std::mt19937_64 accept_rng(o.seed), length_rng(mix64(o.seed + 1));
  std::bernoulli_distribution draft_ok(o.accept_prob);
  std::uniform_int_distribution<int> draft_length(1, W);
  Totals totals;
  const int progress_every = std::max(1, o.steps / 10);
  Kokkos::Timer timer;

  for (int step = 0; step < o.steps; ++step) {
    // 1. Draft (not timed).
    if (o.ragged) {
      for (int b = 0; b < B; ++b) {
        h_offsets(b + 1) = h_offsets(b) + std::uint32_t(draft_length(length_rng));
      }
      Kokkos::deep_copy(offsets, h_offsets);
    }
    draw_inputs(space, mix64(mix64(o.seed) + std::uint64_t(step)), qkv, decay, beta);
    std::vector<int> sample(C);  // the layers checked this step, rotating through all
    for (int c = 0; c < C; ++c) sample[c] = int((std::size_t(step) * C + c) % L);
    check.snapshot(space, state, state_rows.host, sample);

    // 2. Verify every layer (timed).
    space.fence();
    timer.reset();
    for (int l = 0; l < L; ++l) {
      gdn::recurrence_verify_ring(space, cfg, layer_inputs[l], state_rows.per_layer[l], state,
                                  Kokkos::subview(out, l, Kokkos::ALL, Kokkos::ALL),
                                  ring_rows.per_layer[l], ring);
    }
    space.fence();
    const double verify_s = timer.seconds();

    // 3. Acceptance: the draft up to its first rejection, then the target model's own token.
    long long accepted_now = 0;
    for (int b = 0; b < B; ++b) {
      const std::uint32_t drafted = h_offsets(b + 1) - h_offsets(b);
      std::uint32_t n = 1;
      while (n < drafted && draft_ok(accept_rng)) ++n;
      h_num_accepted(b) = n;
      accepted_now += n;
    }
    Kokkos::deep_copy(num_accepted, h_num_accepted);

    // 4. One fold for all layers (timed).
    space.fence();
    timer.reset();
    gdn::state_fold(space, cfg, state_rows.table, state, ring_rows.table, ring, num_accepted);
    space.fence();
    const double fold_s = timer.seconds();

    totals.steps = step + 1;
    totals.drafted += h_offsets(B);
    totals.accepted += accepted_now;
    totals.verify_s += verify_s;
    totals.fold_s += fold_s;

    // Exactness (not timed).
    const Mismatch bad = check.replay_and_compare(space, state, state_rows.host, qkv, decay, beta,
                                                  out, h_offsets, h_num_accepted);
    if (bad.found) {
      std::printf(
          "\nMISMATCH at step %d, layer %d, sequence %d (%u of %u drafted tokens "
          "accepted):\n%s",
          step + 1, bad.layer, bad.sequence, h_num_accepted(bad.sequence),
          h_offsets(bad.sequence + 1) - h_offsets(bad.sequence), bad.what.c_str());
      print_summary<StateT>(o, cfg, record_stride, totals, false);
      return 1;
    }
    totals.checked_layer_steps += C;
    totals.checked_rows += std::size_t(C) * B;

    if ((step + 1) % progress_every == 0 || step + 1 == o.steps) {
      const double busy = totals.verify_s + totals.fold_s;
      std::printf(
          "step %*d/%d  accepted %lld/%lld  verify %.2f ms  fold %.2f ms  %.0f tok/s  "
          "exact so far\n",
          int(std::to_string(o.steps).size()), step + 1, o.steps, totals.accepted, totals.drafted,
          1e3 * totals.verify_s / totals.steps, 1e3 * totals.fold_s / totals.steps,
          busy > 0 ? double(totals.accepted) / busy : 0.0);
      std::fflush(stdout);
    }
  }
  print_summary<StateT>(o, cfg, record_stride, totals, true);
  return 0;
}

}  // namespace gdn_demo

int main(int argc, char* argv[]) {
  gdn_demo::Options options;
  std::string message;
  switch (gdn_demo::parse_options(argc, argv, options, message)) {
    case gdn_demo::ParseResult::help:
      gdn_demo::print_help(argv[0]);
      return 0;
    case gdn_demo::ParseResult::error:
      std::fprintf(stderr, "%s: %s (see --help)\n", argv[0], message.c_str());
      return 2;
    case gdn_demo::ParseResult::run:
      break;
  }

  Kokkos::initialize(argc, argv);
  int rc = 0;
  try {  // every view lives inside simulate(), so all are gone before finalize
    rc = options.bf16_state ? gdn_demo::simulate<gdn::bf16>(options)
                            : gdn_demo::simulate<float>(options);
  } catch (const gdn::InvalidArgument& e) {  // e.g. a head geometry the library does not support
    std::fprintf(stderr, "%s: rejected by the library: %s\n", argv[0], e.what());
    rc = 2;
  } catch (const std::exception& e) {  // e.g. a device allocation that does not fit
    std::fprintf(stderr, "%s: error: %s\n", argv[0], e.what());
    rc = 1;
  }
  Kokkos::finalize();
  return rc;
}
