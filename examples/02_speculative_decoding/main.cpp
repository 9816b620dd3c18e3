// gdn_speculative_demo: the recurrent part of the Gated DeltaNet layers of a
// Qwen3-Next-style model (conv1d, gates, recurrence, speculative commit)
// through gdn alone, as an inference engine drives it, with every step
// checked for exactness.
//
// Activations are bf16 (pre-conv qkv, raw gates a and b, post-conv qkv,
// outputs); the conv (W = 4, with bias) and the gates (A_log, dt_bias) use
// each layer's own float parameters; the recurrent state is float or bf16,
// the conv state bf16, the recurrent ring float (so the fold is exact).
//
// Prefill: every sequence's prompt goes through gdn::conv1d_fwd and
// gdn::recurrence_prefill (GateInputs, the chunked prefill in bf16 products, with a
// workspace) on every layer, from zero states.
//
// One decoding step, for `batch` sequences and `layers` layers:
//   1. draft: `window` tokens per sequence (a random length up to `window`
//      with --ragged); random per-token inputs, different for every layer;
//   2. on every layer, gdn::conv1d_verify_ring on the pre-conv qkv (post-conv
//      qkv out, the inputs recorded in a conv ring), then
//      gdn::recurrence_verify_ring on the post-conv qkv with the raw gates
//      (outputs for all drafted tokens, ring records instead of a state
//      write-back);
//   3. acceptance: n[b] in [1, drafted length] tokens of sequence b are kept;
//   4. one gdn::state_fold with a gdn::ConvFold commits the accepted prefixes
//      of the recurrent and the conv states of all layers; the next step
//      starts from the committed states.
// That is the eager flow (--eager). The default, lazy flow runs
// gdn::conv1d_verify_lazy and gdn::recurrence_verify_lazy in 2 (each row's
// pending accepted tokens folded in registers before its window, recorded in
// a history ring) and one gdn::lazy_accept in 4 (no fold): a state is
// written only when its history fills up.
// Only 2 and 4 are timed. After 4, a rotating sample of layers is replayed
// with gdn::conv1d_fwd + gdn::recurrence_fwd over the accepted tokens alone,
// from copies of both states taken before 2; the committed states and the
// accepted outputs must equal the replay byte for byte (replay_check.hpp).
// In the lazy flow the sampled layers are flushed (gdn::state_flush, not
// timed) before the copies and before the comparison.
//
// All layers share one state pool, one conv state pool and the two rings,
// addressed through layer-major row tables (two different permutations), as
// a serving engine's cache would be.

#include <gdn/gdn.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "options.hpp"
#include "replay_check.hpp"

namespace gdn_demo {

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
  const long conv_dim = cfg.conv_dim();
  const std::size_t record_stride = gdn::ring_record_elements(Dk, Dv, cfg.group_size());

  // The library checks the head geometry on every call and throws
  // gdn::InvalidArgument; an empty fold asks it before anything large is allocated.
  gdn::state_fold(space, cfg, Table("probe", 0, 0), Pool<StateT>("probe", 0, nv, Dk, Dv),
                  Table("probe", 0, 0), Pool<float>("probe", 0, nk, W, record_stride),
                  Index("probe", 0),
                  gdn::ConvFold<Mem, Act>{ConvPool<Act>("probe", 0, conv_dim, conv_width - 1),
                                          ConvPool<Act>("probe", 0, W, conv_dim)});

  const MemoryFootprint mem = footprint<StateT>(o, cfg, record_stride);
  std::printf("gdn_speculative_demo on %s (concurrency %d)\n", ExecSpace::name(),
              int(space.concurrency()));
  std::printf("  %d layers, batch %d, window %d%s, %d steps; nk %d, nv %d, Dk = Dv = %d\n", L, B, W,
              o.ragged ? " (ragged)" : "", o.steps, nk, nv, Dk);
  std::printf(
      "  activations bf16 (pre-conv qkv, raw gates, post-conv qkv, out), conv W = %d with bias\n",
      conv_width);
  std::printf(
      "  state %s, conv state bf16, ring float, conv ring bf16; accept-prob %.2f, seed %llu,\n"
      "  %d layer(s) checked per step\n",
      dtype_name<StateT>(), o.accept_prob, static_cast<unsigned long long>(o.seed), C);
  std::printf(
      "  device memory: state pool %.1f MiB, conv state %.2f MiB, rings %.2f MiB, "
      "inputs/outputs %.1f MiB, checks %.1f MiB\n",
      mib(mem.state_pool), mib(mem.conv_state), mib(mem.ring + mem.conv_ring), mib(mem.tokens),
      mib(mem.checks));
  std::fflush(stdout);

  // ---- the model: parameters, pools, row tables, per-layer inputs and outputs ----
  const Model model(space, cfg, L, o.seed);
  // A sequence starts from zero states; the prefill below fills them.
  Pool<StateT> state("gdn_demo::state", L * B, nv, Dk, Dv);  // [slots, nv, Dk, Dv]
  ConvPool<Act> conv_state("gdn_demo::conv_state", L * B, conv_dim,
                           conv_width - 1);  // [slots, conv_dim, W-1]
  // The eager flow's rings.
  Pool<float> ring(Kokkos::view_alloc("gdn_demo::ring", Kokkos::WithoutInitializing),
                   o.eager ? L * B : 0, nk, W,
                   record_stride);  // [ring_rows, nk, RING_LEN, record_stride]
  ConvPool<Act> conv_ring(Kokkos::view_alloc("gdn_demo::conv_ring", Kokkos::WithoutInitializing),
                          o.eager ? L * B : 0, W, conv_dim);  // [ring_rows, RING_LEN, conv_dim]
  // The lazy flow's history (records and pre-conv inputs) and ledger (zero: nothing pending).
  const int H = o.eager ? 0 : o.history();
  const gdn::LazyRing<Mem, float> lazy{
      Pool<float>(Kokkos::view_alloc("gdn_demo::history", Kokkos::WithoutInitializing),
                  o.eager ? 0 : L * B, nk, H, record_stride),
      Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, Mem>(
          "gdn_demo::ledger", o.eager ? 0 : L * B, gdn::lazy_ledger_words(std::size_t(H)))};
  ConvPool<Act> conv_history(
      Kokkos::view_alloc("gdn_demo::conv_history", Kokkos::WithoutInitializing),
      o.eager ? 0 : L * B, H, conv_dim);  // [ring_rows, capacity, conv_dim]
  // Two independent shuffles: a mix-up of the tables or of the layers would show.
  std::mt19937_64 table_rng(mix64(o.seed + 7));
  const RowTable state_rows("gdn_demo::state_rows", L, B, table_rng);
  const RowTable ring_rows("gdn_demo::ring_rows", L, B, table_rng);
  std::mt19937_64 length_rng(mix64(o.seed + 1));

  // ---- prefill: every prompt through conv1d_fwd + recurrence_prefill, layer by layer ----
  if (o.prompt > 0) {
    Index offsets("gdn_demo::prompt_offsets", B + 1);  // [B+1]
    auto h_offsets = Kokkos::create_mirror_view(offsets);
    std::uniform_int_distribution<int> prompt_length(1, o.prompt);
    h_offsets(0) = 0;
    for (int b = 0; b < B; ++b) {
      h_offsets(b + 1) =
          h_offsets(b) + std::uint32_t(o.ragged ? prompt_length(length_rng) : o.prompt);
    }
    Kokkos::deep_copy(offsets, h_offsets);
    const int P = int(h_offsets(B));
    const LayerInputs prompt(cfg, 1, P);                             // one layer's inputs at a time
    const Tokens2D post("gdn_demo::prompt_post_conv", P, conv_dim);  // [tokens, conv_dim]
    const Tokens2D out("gdn_demo::prompt_out", P, cfg.value_dim());  // [tokens, value_dim]
    const gdn::PrefillWorkspace<Mem> workspace("gdn_demo::prefill_workspace",
                                               gdn::prefill_workspace_bytes(cfg, P, B));
    double prefill_s = 0;
    Kokkos::Timer timer;
    for (int l = 0; l < L; ++l) {
      prompt.draw(space, mix64(mix64(o.seed ^ 0x9f111u) + std::uint64_t(l)));  // not timed
      space.fence();
      timer.reset();
      gdn::conv1d_fwd(space, cfg, model.conv_inputs(l, LayerInputs::layer(prompt.qkv, 0), offsets),
                      state_rows.per_layer[l], conv_state, post);
      gdn::recurrence_prefill(space, cfg,
                              model.gate_inputs(l, post, LayerInputs::layer(prompt.a, 0),
                                                LayerInputs::layer(prompt.b, 0), offsets),
                              state_rows.per_layer[l], state, out, workspace,
                              gdn::PrefillPrecision::bf16);
      space.fence();
      prefill_s += timer.seconds();
    }
    std::printf(
        "prefill  %d prompt tokens%s on %d layers (conv1d_fwd + recurrence_prefill)  %.2f ms\n", P,
        o.ragged ? " (ragged)" : "", L, 1e3 * prefill_s);
    std::fflush(stdout);
  }

  // ---- decoding: per-step inputs and outputs of every layer ----
  const LayerInputs inputs(cfg, L, T);
  const Tokens2D post("gdn_demo::post_conv", T, conv_dim);  // [tokens, conv_dim], reused by layers
  const Tokens3D out("gdn_demo::out", L, T, cfg.value_dim());  // [L, tokens, value_dim]
  Index offsets("gdn_demo::row_offsets", B + 1);               // [B+1]
  auto h_offsets = Kokkos::create_mirror_view(offsets);
  for (int b = 0; b <= B; ++b) h_offsets(b) = std::uint32_t(b * W);
  Kokkos::deep_copy(offsets, h_offsets);
  Index num_accepted("gdn_demo::num_accepted", B);  // [B]
  auto h_num_accepted = Kokkos::create_mirror_view(num_accepted);
  const gdn::ConvFold<Mem, Act> conv_fold{conv_state, conv_ring};
  const gdn::ConvFold<Mem, Act> conv_flush{conv_state, conv_history};
  // The lazy flow's flush of the sampled layers: their entries of the row tables, the
  // others gdn::pad_slot.
  Table flush_state_rows("gdn_demo::flush_state_rows", L, B);
  Table flush_ring_rows("gdn_demo::flush_ring_rows", L, B);
  auto h_flush_state = Kokkos::create_mirror_view(flush_state_rows);
  auto h_flush_ring = Kokkos::create_mirror_view(flush_ring_rows);
  const auto flush_sample = [&] {
    gdn::state_flush(space, cfg, flush_state_rows, state, flush_ring_rows, lazy, conv_flush);
  };

  ReplayCheck<StateT> check(cfg, B, W, C);
  std::mt19937_64 accept_rng(o.seed);
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
    inputs.draw(space, mix64(mix64(o.seed) + std::uint64_t(step)));
    std::vector<int> sample(C);  // the layers checked this step, rotating through all
    for (int c = 0; c < C; ++c) sample[c] = int((std::size_t(step) * C + c) % L);
    if (!o.eager) {  // commit the sampled layers' pending tokens (not timed)
      Kokkos::deep_copy(h_flush_state, gdn::pad_slot);
      Kokkos::deep_copy(h_flush_ring, gdn::pad_slot);
      for (int l : sample) {
        for (int b = 0; b < B; ++b) {
          h_flush_state(l, b) = state_rows.at(l, b);
          h_flush_ring(l, b) = ring_rows.at(l, b);
        }
      }
      Kokkos::deep_copy(flush_state_rows, h_flush_state);
      Kokkos::deep_copy(flush_ring_rows, h_flush_ring);
      flush_sample();
    }
    check.snapshot(space, state, conv_state, state_rows.host, sample);

    // 2. Verify every layer: conv, then the recurrence on its output (timed).
    space.fence();
    timer.reset();
    for (int l = 0; l < L; ++l) {
      const auto conv_in = model.conv_inputs(l, LayerInputs::layer(inputs.qkv, l), offsets);
      const auto gate_in = model.gate_inputs(l, post, LayerInputs::layer(inputs.a, l),
                                             LayerInputs::layer(inputs.b, l), offsets);
      const auto layer_out = Kokkos::subview(out, l, Kokkos::ALL, Kokkos::ALL);
      if (o.eager) {
        gdn::conv1d_verify_ring(space, cfg, conv_in, state_rows.per_layer[l], conv_state, post,
                                ring_rows.per_layer[l], conv_ring);
        gdn::recurrence_verify_ring(space, cfg, gate_in, state_rows.per_layer[l], state, layer_out,
                                    ring_rows.per_layer[l], ring);
      } else {  // the conv first: the recurrent verify clears the ledger rows it commits
        gdn::conv1d_verify_lazy(space, cfg, conv_in, state_rows.per_layer[l], conv_state, post,
                                ring_rows.per_layer[l], conv_history, lazy);
        gdn::recurrence_verify_lazy(space, cfg, gate_in, state_rows.per_layer[l], state, layer_out,
                                    ring_rows.per_layer[l], lazy);
      }
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

    // 4. Commit, all layers in one call (timed): the eager fold of the recurrent and conv
    // states, or the lazy flow's accept (the accepted prefixes become pending).
    space.fence();
    timer.reset();
    if (o.eager) {
      gdn::state_fold(space, cfg, state_rows.table, state, ring_rows.table, ring, num_accepted,
                      conv_fold);
    } else {
      gdn::lazy_accept(space, ring_rows.table, lazy, num_accepted);
    }
    space.fence();
    const double fold_s = timer.seconds();
    if (!o.eager) flush_sample();  // the sampled layers' states, committed for the check

    totals.steps = step + 1;
    totals.drafted += h_offsets(B);
    totals.accepted += accepted_now;
    totals.verify_s += verify_s;
    totals.fold_s += fold_s;

    // Exactness (not timed).
    const Mismatch bad = check.replay_and_compare(space, model, state, conv_state, state_rows.host,
                                                  inputs, out, h_offsets, h_num_accepted);
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
          "step %*d/%d  accepted %lld/%lld  verify %.2f ms  %s %.2f ms  %.0f tok/s  "
          "exact so far\n",
          int(std::to_string(o.steps).size()), step + 1, o.steps, totals.accepted, totals.drafted,
          1e3 * totals.verify_s / totals.steps, o.eager ? "fold" : "accept",
          1e3 * totals.fold_s / totals.steps, busy > 0 ? double(totals.accepted) / busy : 0.0);
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
