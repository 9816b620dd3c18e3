// Quickstart: one layer, two sequences. Verify a drafted window of 4 tokens
// (outputs for every token, ring records instead of a state write-back),
// accept a prefix of each window, fold that prefix into the state, and check
// that the folded state equals a plain forward over the accepted tokens.
#include <gdn/gdn.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  int rc = 0;
  {
    using ExecSpace = Kokkos::DefaultExecutionSpace;
    using Mem = ExecSpace::memory_space;
    using Matrix = Kokkos::View<float**, Kokkos::LayoutRight, Mem>;  // [tokens, channels]
    using Pool = Kokkos::View<float****, Kokkos::LayoutRight, Mem>;  // state or ring pool
    using Index = Kokkos::View<std::uint32_t*, Mem>;                 // [B] or [B+1]
    using Table = Kokkos::View<std::uint32_t**, Mem>;                // [L, B]
    const ExecSpace space;
    const gdn::HeadConfig cfg{2, 4, 64, 64};  // nk, nv, Dk, Dv: two value heads per key head
    const int batch = 2, window = 4, tokens = batch * window, nv = cfg.num_value_heads;
    const long conv_dim = cfg.conv_dim();
    const int nk = cfg.num_key_heads, dk = cfg.key_head_dim, dv = cfg.value_head_dim;
    const int stride = int(gdn::ring_record_elements(dk, dv, cfg.group_size()));  // no padding

    Matrix qkv("qkv", tokens, conv_dim);                          // [tokens, conv_dim]
    Matrix decay("decay", tokens, nv), beta("beta", tokens, nv);  // [tokens, nv]
    Matrix out("out", tokens, cfg.value_dim());                   // [tokens, value_dim]
    Pool state("state", batch, nv, dk, dv);                       // [slots, nv, Dk, Dv]
    Pool ring("ring", batch, nk, window, stride);  // [ring_rows, nk, RING_LEN, record_stride]
    Index offsets("offsets", batch + 1);           // [B+1]
    Index slots("slots", batch), ring_slots("ring_slots", batch);                // [B]
    Index accepted("accepted", batch);                                           // [B]
    Table state_rows("state_rows", 1, batch), ring_rows("ring_rows", 1, batch);  // [L = 1, B]

    // Any inputs in range will do: qkv in [-1, 1], decay in (0, 1], beta in (0, 1).
    Kokkos::parallel_for(
        "quickstart::inputs", Kokkos::RangePolicy<ExecSpace>(space, 0, tokens),
        KOKKOS_LAMBDA(int t) {
          for (long c = 0; c < conv_dim; ++c)
            qkv(t, c) = sinf(0.37f * float(t) + 0.011f * float(c));
          for (int h = 0; h < nv; ++h) {
            decay(t, h) = 0.9f + 0.02f * float(h);
            beta(t, h) = 0.5f;
          }
        });
    const std::uint32_t n0 = 3, n1 = 1;  // accepted prefix of each window
    // [B, 2]: row b holds the offsets {0, n_b} of sequence b alone
    Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, Mem> pre_offsets("pre_offsets", batch, 2);
    Kokkos::parallel_for(
        "quickstart::indices", Kokkos::RangePolicy<ExecSpace>(space, 0, batch + 1),
        KOKKOS_LAMBDA(int b) {
          offsets(b) = std::uint32_t(b * window);  // every row drafts `window` tokens
          if (b == batch) return;
          slots(b) = state_rows(0, b) = std::uint32_t(b);
          ring_slots(b) = ring_rows(0, b) = std::uint32_t(batch - 1 - b);  // any distinct ring rows
          accepted(b) = b == 0 ? n0 : n1;
          pre_offsets(b, 0) = 0;
          pre_offsets(b, 1) = accepted(b);
        });
    Kokkos::deep_copy(space, state, 0.25f);
    Pool replay("replay", batch, nv, dk, dv);  // [slots, nv, Dk, Dv]
    Kokkos::deep_copy(space, replay, state);
    Matrix replay_out("replay_out", tokens, cfg.value_dim());  // [tokens, value_dim]

    const gdn::TokenInputs<Mem> in{qkv, decay, beta, offsets};
    // Verify leaves `state` untouched and writes ring records; the fold commits the prefixes.
    gdn::recurrence_verify_ring(space, cfg, in, slots, state, out, ring_slots, ring);
    gdn::state_fold(space, cfg, state_rows, state, ring_rows, ring, accepted);

    // The same prefixes through the plain forward, one sequence (a batch of one) at a time.
    for (int b = 0; b < batch; ++b) {
      const auto rows = std::make_pair(b * window, b * window + int(b == 0 ? n0 : n1));
      const gdn::TokenInputs<Mem> pre{
          Kokkos::subview(qkv, rows, Kokkos::ALL), Kokkos::subview(decay, rows, Kokkos::ALL),
          Kokkos::subview(beta, rows, Kokkos::ALL), Kokkos::subview(pre_offsets, b, Kokkos::ALL)};
      gdn::recurrence_fwd(space, cfg, pre, Kokkos::subview(slots, std::make_pair(b, b + 1)), replay,
                          Kokkos::subview(replay_out, rows, Kokkos::ALL));
    }
    space.fence();

    auto h_state = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), state);
    auto h_replay = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), replay);
    auto h_out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    auto h_replay_out = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), replay_out);
    bool same = std::memcmp(h_state.data(), h_replay.data(), h_state.span() * sizeof(float)) == 0;
    for (int b = 0; b < batch; ++b)  // only the accepted tokens' outputs have a replay
      for (int t = b * window; t < b * window + int(b == 0 ? n0 : n1); ++t)
        same = same &&
               std::memcmp(&h_out(t, 0), &h_replay_out(t, 0), sizeof(float) * cfg.value_dim()) == 0;

    std::printf("execution space: %s\n", ExecSpace::name());
    std::printf("verify out[token 0, 0..3]: %+.6f %+.6f %+.6f %+.6f\n", h_out(0, 0), h_out(0, 1),
                h_out(0, 2), h_out(0, 3));
    std::printf("accepted: %u of %d and %u of %d drafted tokens\n", n0, window, n1, window);
    std::printf("folded S[seq 0, head 0, row 0, 0..2]: %+.6f %+.6f %+.6f\n", h_state(0, 0, 0, 0),
                h_state(0, 0, 0, 1), h_state(0, 0, 0, 2));
    std::printf("fold(verify) == forward(accepted prefix), state and outputs bit for bit: %s\n",
                same ? "yes" : "no");
    rc = same ? 0 : 1;
  }
  Kokkos::finalize();
  return rc;
}
