// One speculative step of one layer, in both forms, from the same state:
//  - eager: recurrence_verify_ring writes every drafted token's output and a
//    ring record per token (the state untouched); the engine accepts a prefix
//    of each window; state_fold commits the accepted records;
//  - lazy: recurrence_verify_lazy writes the same outputs and records into a
//    history; lazy_accept marks the accepted prefix pending (no state write);
//    state_flush commits it when the engine needs the state.
// Both give the same state, bit for bit (docs/design.md, "Lazy commit").
#include <gdn/gdn.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

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
    const gdn::HeadConfig cfg{2, 4, 64, 64};  // nk, nv, Dk, Dv
    const int batch = 2, window = 4, tokens = batch * window, nv = cfg.num_value_heads;
    const long conv_dim = cfg.conv_dim();
    const int nk = cfg.num_key_heads, dk = cfg.key_head_dim, dv = cfg.value_head_dim;
    const int stride = int(gdn::ring_record_elements(dk, dv, cfg.group_size()));
    const int capacity = 3 * window;  // the lazy history: room for three windows

    Matrix qkv("qkv", tokens, conv_dim);                          // [tokens, conv_dim]
    Matrix decay("decay", tokens, nv), beta("beta", tokens, nv);  // [tokens, nv]
    Matrix out_eager("out_eager", tokens, cfg.value_dim());       // [tokens, value_dim]
    Matrix out_lazy("out_lazy", tokens, cfg.value_dim());         // [tokens, value_dim]
    Pool eager("eager", batch, nv, dk, dv), lazy_state("lazy", batch, nv, dk, dv);
    Pool ring("ring", batch, nk, window, stride);  // [ring_rows, nk, RING_LEN, record_stride]
    gdn::LazyRing<Mem> lazy;                       // the history and its ledger
    lazy.history = Pool("history", batch, nk, capacity, stride);
    lazy.ledger = decltype(lazy.ledger)("ledger", batch, gdn::lazy_ledger_words(capacity));
    Index offsets("offsets", batch + 1), slots("slots", batch), accepted("accepted", batch);
    Table rows("rows", 1, batch);  // [L = 1, B]: this layer's state and ring rows

    Kokkos::parallel_for(
        "one_step::inputs", Kokkos::RangePolicy<ExecSpace>(space, 0, tokens), KOKKOS_LAMBDA(int t) {
          for (long c = 0; c < conv_dim; ++c)
            qkv(t, c) = sinf(0.37f * float(t) + 0.011f * float(c));
          for (int h = 0; h < nv; ++h) {
            decay(t, h) = 0.9f + 0.02f * float(h);
            beta(t, h) = 0.5f;
          }
        });
    Kokkos::parallel_for(
        "one_step::indices", Kokkos::RangePolicy<ExecSpace>(space, 0, batch + 1),
        KOKKOS_LAMBDA(int b) {
          offsets(b) = std::uint32_t(b * window);
          if (b == batch) return;
          slots(b) = rows(0, b) = std::uint32_t(b);
          accepted(b) = b == 0 ? 3u : 1u;  // the engine's acceptance: 3 of 4, 1 of 4
        });
    Kokkos::deep_copy(space, eager, 0.25f);
    Kokkos::deep_copy(space, lazy_state, 0.25f);
    const gdn::TokenInputs<Mem> in{qkv, decay, beta, offsets};

    // Eager: verify, accept, fold.
    gdn::recurrence_verify_ring(space, cfg, in, slots, eager, out_eager, slots, ring);
    gdn::state_fold(space, cfg, rows, eager, rows, ring, accepted);

    // Lazy: verify into the history, accept on the device, flush when the state is needed.
    gdn::recurrence_verify_lazy(space, cfg, in, slots, lazy_state, out_lazy, slots, lazy);
    gdn::lazy_accept(space, rows, lazy, accepted);
    gdn::state_flush(space, cfg, rows, lazy_state, rows, lazy);
    space.fence();

    auto h_eager = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), eager);
    auto h_lazy = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), lazy_state);
    auto h_oe = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out_eager);
    auto h_ol = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out_lazy);
    const bool states = std::memcmp(h_eager.data(), h_lazy.data(), h_eager.span() * 4) == 0;
    const bool outs = std::memcmp(h_oe.data(), h_ol.data(), h_oe.span() * 4) == 0;
    std::printf("execution space: %s\n", ExecSpace::name());
    std::printf("committed S[seq 0, head 0, row 0, 0..2]: %+.6f %+.6f %+.6f\n", h_eager(0, 0, 0, 0),
                h_eager(0, 0, 0, 1), h_eager(0, 0, 0, 2));
    std::printf("lazy == eager: outputs %s, committed state %s\n", outs ? "yes" : "no",
                states ? "yes" : "no");
    rc = states && outs ? 0 : 1;
  }
  Kokkos::finalize();
  return rc;
}
