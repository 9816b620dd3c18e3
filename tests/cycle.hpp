#ifndef GDN_TESTS_CYCLE_HPP
#define GDN_TESTS_CYCLE_HPP

// One speculative-decoding cycle checked against the promises of docs/design.md
// section 4: verify output == forward output (bits), short rows leave their
// state untouched, long rows commit exactly as the forward, records land
// where the layout says and nowhere else (poisoned ring rows, padding and
// unused positions stay poisoned), and fold(verify) == forward(accepted
// prefix) bit for bit for a float ring.

#include "test_support.hpp"

namespace gdn_test {

struct CycleSpec {
  gdn::HeadConfig cfg;
  std::vector<int> lens;  // window length of each row
  int ring_len = 8;       // RING_LEN
  int pad = 3;            // record padding elements
  Layout layout = Layout::Dense;
  std::uint64_t seed = 1;
  float decay = -1.0f;  // > 0: every token's decay (else random in [0.8, 1))
};

struct CycleResult {
  std::vector<std::uint32_t> accepted;  // n per row used in the fold
};

template <class StateT, class RingT>
CycleResult run_cycle(const CycleSpec& cs) {
  const ExecSpace space;
  Problem p = make_problem(cs.cfg, cs.lens, cs.seed);
  if (cs.decay > 0)
    for (float& a : p.host.decay) a = cs.decay;
  const int B = p.batch();
  const int slots_total = B + 3;
  const int ring_total = B + 2;
  std::vector<std::uint32_t> slots(B), rslots(B);
  for (int b = 0; b < B; ++b) {
    slots[b] =
        std::uint32_t((b * 5 + 2) % slots_total);   // distinct: 5 is coprime with B+3 unless...
    rslots[b] = std::uint32_t(ring_total - 1 - b);  // reversed, never equal to the state table
  }
  // make the state rows distinct whatever B is
  {
    std::vector<char> seen(slots_total, 0);
    for (int b = 0; b < B; ++b) {
      while (seen[slots[b]]) slots[b] = (slots[b] + 1) % slots_total;
      seen[slots[b]] = 1;
    }
  }
  const DeviceInputs din = upload(p, cs.layout);
  const Index d_slots = to_device(slots), d_rslots = to_device(rslots);
  const auto S0 = make_state<StateT>(slots_total, cs.cfg, cs.seed + 11);
  const std::size_t rec =
      gdn::ring_record_elements(cs.cfg.key_head_dim, cs.cfg.value_head_dim, cs.cfg.group_size());
  const int stride = int(rec) + cs.pad;
  const auto ring = make_ring<RingT>(ring_total, cs.cfg, cs.ring_len, stride);

  // Forward and verify from identical pools.
  auto Sf = clone(S0);
  auto Sv = clone(S0);
  Strided2D out_f = make_out(p, cs.layout), out_v = make_out(p, cs.layout);
  gdn::recurrence_fwd(space, cs.cfg, din.in, d_slots, Sf, out_f.view);
  gdn::recurrence_verify_ring(space, cs.cfg, din.in, d_slots, Sv, out_v.view, d_rslots, ring);
  space.fence();

  EXPECT_TRUE(same_bits(read_2d(out_f), read_2d(out_v))) << "verify output != forward output";

  // State after verify: a short row's pool row is untouched, a long row's equals the forward's.
  {
    const auto f0 = bytes_of(S0), ff = bytes_of(Sf), fv = bytes_of(Sv);
    const std::size_t row_bytes = f0.size() / slots_total;
    std::vector<int> owner(slots_total, -1);
    for (int b = 0; b < B; ++b) owner[slots[b]] = b;
    for (int s = 0; s < slots_total; ++s) {
      const int b = owner[s];
      const bool committed = b >= 0 && p.len(b) > cs.ring_len;
      const auto& want = committed ? ff : f0;
      const bool same =
          std::memcmp(fv.data() + s * row_bytes, want.data() + s * row_bytes, row_bytes) == 0;
      EXPECT_TRUE(same) << "pool row " << s << " (batch item " << b << ", len "
                        << (b >= 0 ? p.len(b) : -1) << ") after verify should "
                        << (committed ? "equal the forward's" : "be untouched");
    }
  }

  // Ring contents: written exactly where the layout says.
  {
    auto h = Kokkos::create_mirror(ring);
    Kokkos::deep_copy(h, ring);
    const gdn::RingLayout lay{cs.cfg.key_head_dim, cs.cfg.value_head_dim, cs.cfg.group_size()};
    std::vector<int> owner(ring_total, -1);
    for (int b = 0; b < B; ++b) owner[rslots[b]] = b;
    const int C = int(cs.cfg.conv_dim());
    int bad_written = 0, bad_poison = 0, bad_key = 0, bad_decay = 0;
    for (int r = 0; r < ring_total; ++r) {
      const int b = owner[r];
      const int L = b >= 0 ? p.len(b) : 0;
      const bool recording = b >= 0 && L > 0 && L <= cs.ring_len;
      for (int kh = 0; kh < cs.cfg.num_key_heads; ++kh)
        for (int pos = 0; pos < cs.ring_len; ++pos)
          for (int e = 0; e < stride; ++e) {
            const RingT v = h(r, kh, pos, e);
            std::uint32_t bits = 0;
            std::memcpy(&bits, &v, sizeof v);
            const bool poison = sizeof(RingT) == 4 ? bits == kPoisonF32 : bits == kPoisonBf16;
            const bool should_write = recording && pos < L && std::size_t(e) < rec;
            if (should_write && poison) ++bad_written;
            if (!should_write && !poison) ++bad_poison;
            if (should_write) {
              const int t = int(p.offsets[b]) + pos;
              if (e < lay.delta_offset(0)) {  // raw key
                const float k =
                    p.host
                        .qkv[std::size_t(t) * C + cs.cfg.key_dim() + kh * cs.cfg.key_head_dim + e];
                if (to_f(v) != to_f(storage_ring<RingT>(k))) ++bad_key;
              } else if (e >= lay.decay_offset(0)) {  // decay of group position g
                const int g = e - lay.decay_offset(0);
                const float d = p.host.decay[std::size_t(t) * cs.cfg.num_value_heads +
                                             kh * cs.cfg.group_size() + g];
                if (to_f(v) != to_f(storage_ring<RingT>(d))) ++bad_decay;
              }
            }
          }
    }
    EXPECT_EQ(bad_written, 0) << "record elements left unwritten";
    EXPECT_EQ(bad_poison, 0)
        << "ring elements written outside the records (padding, later positions, other rows)";
    EXPECT_EQ(bad_key, 0) << "record keys differ from the raw keys";
    EXPECT_EQ(bad_decay, 0) << "record decays differ from the inputs";
  }

  // Fold an accepted prefix; compare with a forward over that prefix.
  CycleResult res;
  std::mt19937_64 rng(cs.seed + 29);
  res.accepted.resize(B);
  for (int b = 0; b < B; ++b) {
    const int L = p.len(b);
    if (L > cs.ring_len) {
      res.accepted[b] = std::uint32_t(L);  // committed by verify; the fold must skip it
    } else {
      res.accepted[b] = std::uint32_t(std::uniform_int_distribution<int>(0, L)(rng));
    }
  }
  if (B > 0) {
    res.accepted[0] =
        std::uint32_t(std::min(p.len(0), cs.ring_len));  // at least one full-window accept
  }
  const Table d_state_rows = to_device(1, B, slots), d_ring_rows = to_device(1, B, rslots);
  const Index d_acc = to_device(res.accepted);
  gdn::state_fold(space, cs.cfg, d_state_rows, Sv, d_ring_rows, ring, d_acc);

  const Problem pre = prefix_problem(p, res.accepted);
  const DeviceInputs dpre = upload(pre);
  auto Se = clone(S0);
  Strided2D out_e = make_out(pre);
  gdn::recurrence_fwd(space, cs.cfg, dpre.in, d_slots, Se, out_e.view);
  space.fence();

  if (sizeof(RingT) == 4) {
    EXPECT_TRUE(same_bytes(bytes_of(Sv), bytes_of(Se)))
        << "fold(verify) != forward(accepted prefix)";
  } else {
    // bf16 ring: k, u and decay were rounded; the fold is close, not exact.
    const auto a = floats_of(Sv), e = floats_of(Se);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      num = std::max(num, double(std::abs(a[i] - e[i])));
      den = std::max(den, double(std::abs(e[i])));
    }
    EXPECT_LE(num, 2e-2 * den) << "bf16-ring fold too far from the forward";
  }
  // The accepted outputs of verify are the forward's outputs of the prefix.
  {
    const auto ov = read_2d(out_v), oe = read_2d(out_e);
    const std::size_t VD = cs.cfg.value_dim();
    int diff = 0;
    for (int b = 0; b < B; ++b)
      for (std::uint32_t t = 0; t < pre.offsets[b + 1] - pre.offsets[b]; ++t)
        diff +=
            std::memcmp(&ov[(p.offsets[b] + t) * VD], &oe[(pre.offsets[b] + t) * VD], VD * 4) != 0;
    EXPECT_EQ(diff, 0) << "accepted verify outputs differ from a forward replay";
  }
  return res;
}

}  // namespace gdn_test

#endif
