// Head shards (docs/integrating.md, "Tensor parallelism: head shards"): an
// engine with tensor parallelism gives each GPU a slice of the key heads and
// their value heads. gdn on a shard (its own HeadConfig, its qkv channels as
// the shard's projection writes them, its own state pool and ring) equals
// the corresponding slice of the whole layer, bit for bit: outputs, states,
// ring records and the folded states. Every head's arithmetic depends on its
// own channels only (docs/design.md section 2).
#include "test_support.hpp"

#include <cstring>
#include <vector>

namespace gdn_test {
namespace {

// The shard of key heads [k0, k0 + nk_s) of problem p: its qkv channels in
// the shard's own order (q, k of its key heads, then v of their value heads).
Problem shard_problem(const Problem& p, int k0, int nk_s) {
  const auto g = p.geo();
  const int G = g.group(), D = g.dk;
  Problem s;
  s.cfg = heads(nk_s, nk_s * G, D);
  s.offsets = p.offsets;
  const std::size_t CD = g.conv_dim(), CDs = s.cfg.conv_dim(), T = p.tokens();
  s.host.qkv.resize(T * CDs);
  s.host.decay.resize(T * nk_s * G);
  s.host.beta.resize(T * nk_s * G);
  for (std::size_t t = 0; t < T; ++t) {
    const float* row = &p.host.qkv[t * CD];
    float* dst = &s.host.qkv[t * CDs];
    std::memcpy(dst, row + k0 * D, sizeof(float) * nk_s * D);                           // q
    std::memcpy(dst + nk_s * D, row + g.key_dim() + k0 * D, sizeof(float) * nk_s * D);  // k
    std::memcpy(dst + 2 * nk_s * D, row + 2 * g.key_dim() + k0 * G * D,
                sizeof(float) * nk_s * G * D);  // v
    for (int h = 0; h < nk_s * G; ++h) {
      s.host.decay[t * nk_s * G + h] = p.host.decay[t * g.nv + k0 * G + h];
      s.host.beta[t * nk_s * G + h] = p.host.beta[t * g.nv + k0 * G + h];
    }
  }
  return s;
}

// Pool rows [slots, nv, Dk, Dv] of value heads [h0, h0 + n) as bytes, row by row.
template <class T>
std::vector<unsigned char> head_slice(const Pool<T>& pool, int h0, int n) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), pool);
  const std::size_t head = h.extent(2) * h.extent(3) * sizeof(T);
  std::vector<unsigned char> r;
  for (std::size_t s = 0; s < h.extent(0); ++s) {
    const auto* p = reinterpret_cast<const unsigned char*>(&h(s, h0, 0, 0));
    r.insert(r.end(), p, p + n * head);
  }
  return r;
}

// Output columns of value heads [h0, h0 + n) of a [tokens, value_dim] output.
std::vector<float> out_slice(const std::vector<float>& out, int value_dim, int h0, int n, int D) {
  std::vector<float> r;
  for (std::size_t t = 0; t < out.size() / value_dim; ++t)
    r.insert(r.end(), out.begin() + t * value_dim + h0 * D,
             out.begin() + t * value_dim + (h0 + n) * D);
  return r;
}

TEST(HeadShards, AShardEqualsItsSliceOfTheLayer) {
  const ExecSpace space;
  const auto cfg = heads(4, 8, 64);  // G = 2; two shards of two key heads each
  const int G = 2, D = 64, B = 3, ring_len = 6, shards = 2, nk_s = 2;
  const Problem p = make_problem(cfg, {5, 1, 6}, 7100);
  const DeviceInputs d = upload(p);
  const Index slots = to_device(iota_u32(B));
  const Table table = to_device(1, B, iota_u32(B));
  const Index accepted = to_device({3u, 1u, 6u});
  // The whole layer: a forward, and a verify + fold from the same state.
  const auto S0 = make_state<float>(B, cfg, 7101);
  auto S_fwd = clone(S0), S_ver = clone(S0);
  const auto ring = make_ring<float>(B, cfg, ring_len, int(gdn::ring_record_elements(D, D, G)));
  const Strided2D o_fwd = make_out(p), o_ver = make_out(p);
  gdn::recurrence_fwd(space, cfg, d.in, slots, S_fwd, o_fwd.view);
  gdn::recurrence_verify_ring(space, cfg, d.in, slots, S_ver, o_ver.view, slots, ring);
  gdn::state_fold(space, cfg, table, S_ver, table, ring, accepted);
  space.fence();
  const std::vector<float> out_fwd = read_2d(o_fwd), out_ver = read_2d(o_ver);
  auto h_ring = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ring);

  for (int sh = 0; sh < shards; ++sh) {
    SCOPED_TRACE("shard " + std::to_string(sh));
    const int k0 = sh * nk_s, h0 = k0 * G, nv_s = nk_s * G;
    const Problem ps = shard_problem(p, k0, nk_s);
    const auto& cs = ps.cfg;
    const DeviceInputs ds = upload(ps);
    // The shard's pool: the whole layer's start state of its value heads.
    Pool<float> Ss("gdn_test::shard_state", B, nv_s, D, D);
    Kokkos::deep_copy(Ss, Kokkos::subview(S0, Kokkos::ALL, std::make_pair(h0, h0 + nv_s),
                                          Kokkos::ALL, Kokkos::ALL));
    auto Ss_ver = clone(Ss);
    const auto ring_s = make_ring<float>(B, cs, ring_len, int(gdn::ring_record_elements(D, D, G)));
    const Strided2D os_fwd = make_out(ps), os_ver = make_out(ps);
    gdn::recurrence_fwd(space, cs, ds.in, slots, Ss, os_fwd.view);
    gdn::recurrence_verify_ring(space, cs, ds.in, slots, Ss_ver, os_ver.view, slots, ring_s);
    auto h_ring_s = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ring_s);
    gdn::state_fold(space, cs, table, Ss_ver, table, ring_s, accepted);
    space.fence();
    EXPECT_TRUE(same_bits(read_2d(os_fwd), out_slice(out_fwd, cfg.value_dim(), h0, nv_s, D)))
        << "forward outputs";
    EXPECT_TRUE(same_bits(read_2d(os_ver), out_slice(out_ver, cfg.value_dim(), h0, nv_s, D)))
        << "verify outputs";
    EXPECT_TRUE(same_bytes(head_slice(Ss, 0, nv_s), head_slice(S_fwd, h0, nv_s)))
        << "forward states";
    EXPECT_TRUE(same_bytes(head_slice(Ss_ver, 0, nv_s), head_slice(S_ver, h0, nv_s)))
        << "folded states";
    // The shard's records are the whole ring's records of its key heads (same layout, G).
    int differ = 0;
    for (int b = 0; b < B; ++b)
      for (int kh = 0; kh < nk_s; ++kh)
        for (int pos = 0; pos < p.len(b); ++pos)
          for (std::size_t e = 0; e < gdn::ring_record_elements(D, D, G); ++e)
            differ += std::memcmp(&h_ring_s(b, kh, pos, e), &h_ring(b, k0 + kh, pos, e), 4) != 0;
    EXPECT_EQ(differ, 0) << "ring records";
  }
}

}  // namespace
}  // namespace gdn_test
