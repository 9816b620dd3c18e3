// Built against an installed gdn: one forward call on the default execution space.
#include <gdn/gdn.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  int rc = 1;
  {
    using Exec = Kokkos::DefaultExecutionSpace;
    using M = Exec::memory_space;
    const gdn::HeadConfig cfg{1, 2, 64, 64};
    const int T = 2;
    Kokkos::View<float**, Kokkos::LayoutRight, M> qkv("qkv", T, cfg.conv_dim());
    Kokkos::View<float**, Kokkos::LayoutRight, M> gates("gates", T, cfg.num_value_heads);
    Kokkos::deep_copy(qkv, 0.25f);
    Kokkos::deep_copy(gates, 0.5f);
    Kokkos::View<std::uint32_t*, M> offsets("offsets", 2), slots("slots", 1);
    Kokkos::deep_copy(Kokkos::subview(offsets, 1), std::uint32_t(T));
    Kokkos::View<float****, Kokkos::LayoutRight, M> state("state", 1, 2, 64, 64);
    Kokkos::View<float**, Kokkos::LayoutRight, M> out("out", T, cfg.value_dim());
    gdn::TokenInputs<M> in{qkv, gates, gates, offsets};
    gdn::recurrence_fwd(Exec(), cfg, in, slots, state, out);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    std::printf("gdn %s consumer: out(1, 0) = %g\n", GDN_VERSION_STRING, double(h(1, 0)));
    rc = h(1, 0) > 0.0f ? 0 : 1;
  }
  Kokkos::finalize();
  return rc;
}
