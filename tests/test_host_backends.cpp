// Host backends share one mapping: Serial and OpenMP must give the same bits.
#include "test_support.hpp"

#if defined(KOKKOS_ENABLE_SERIAL) && defined(KOKKOS_ENABLE_OPENMP)
namespace gdn_test {
namespace {

TEST(HostBackends, SerialAndOpenMPGiveTheSameBits) {
  using HS = Kokkos::HostSpace;
  const auto cfg = heads(2, 4, 128);
  const Problem p = make_problem(cfg, {5, 0, 12, 3}, 41);
  const DeviceInputs d = upload(p);  // HostSpace views serve both
  const auto slots = to_device(iota_u32(4));
  const auto S0 = make_state<float>(4, cfg, 42);
  const int ring_len = 8;
  const int stride = int(gdn::ring_record_elements(128, 128, 2));
  std::vector<unsigned char> state_bytes[2], ring_bytes[2];
  std::vector<float> outs[2];
  for (int which = 0; which < 2; ++which) {
    auto S = clone(S0);
    auto ring = make_ring<float>(4, cfg, ring_len, stride);
    Strided2D out = make_out(p);
    if (which == 0) {
      const Kokkos::Serial s;
      gdn::recurrence_verify_ring(s, cfg, d.in, slots, S, out.view, slots, ring);
      gdn::state_fold(s, cfg, to_device(1, 4, iota_u32(4)), S, to_device(1, 4, iota_u32(4)), ring,
                      to_device({3u, 0u, 12u, 2u}));
      s.fence();
    } else {
      const Kokkos::OpenMP s;
      gdn::recurrence_verify_ring(s, cfg, d.in, slots, S, out.view, slots, ring);
      gdn::state_fold(s, cfg, to_device(1, 4, iota_u32(4)), S, to_device(1, 4, iota_u32(4)), ring,
                      to_device({3u, 0u, 12u, 2u}));
      s.fence();
    }
    state_bytes[which] = bytes_of(S);
    ring_bytes[which] = bytes_of(ring);
    outs[which] = read_2d(out);
  }
  static_assert(std::is_same<Mem, HS>::value, "host test");
  EXPECT_TRUE(same_bytes(state_bytes[0], state_bytes[1]));
  EXPECT_TRUE(same_bytes(ring_bytes[0], ring_bytes[1]));
  EXPECT_TRUE(same_bits(outs[0], outs[1]));
}

}  // namespace
}  // namespace gdn_test
#endif
