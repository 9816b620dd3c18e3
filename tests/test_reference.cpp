// Agreement with the float64 reference (tests/reference/), including drift over long sequences.
#include "test_support.hpp"

#include <cstdio>

namespace gdn_test {
namespace {

// Stated tolerances (max |kernel - reference| / max |reference|):
//   float32 state: 2e-5 on outputs and state, for sequences up to 4096 tokens.
//   bf16 state: the reference rounds its state to bf16 where the kernel
//   stores it (at the end of every call); the kernel's float32 arithmetic can
//   round to the neighbouring bf16 value, so the bound is 1e-2.
constexpr double kTolF32 = 2e-5;
constexpr double kTolBf16 = 1e-2;

std::string sci(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3e", v);
  return b;
}

template <class StateT>
void forward_vs_reference(const gdn::HeadConfig& cfg, const std::vector<int>& lens,
                          int calls_per_row) {
  const ExecSpace space;
  const Problem p = make_problem(cfg, lens, 21);
  const int B = p.batch();
  const auto slots = iota_u32(B);
  auto S = make_state<StateT>(B, cfg, 22);
  std::vector<float> s0 = floats_of(S);
  std::vector<double> ref_pool(s0.begin(), s0.end());
  std::vector<double> ref_out(std::size_t(p.tokens()) * cfg.value_dim(), 0.0);
  std::vector<float> out_all(ref_out.size(), 0.0f);
  const bool bf = sizeof(StateT) == 2;
  // Split every row into `calls_per_row` consecutive calls (decode-style when lens/calls == 1).
  for (int c = 0; c < calls_per_row; ++c) {
    std::vector<std::uint32_t> part(B), first(B);
    for (int b = 0; b < B; ++b) {
      const int L = p.len(b);
      const int lo = L * c / calls_per_row, hi = L * (c + 1) / calls_per_row;
      part[b] = std::uint32_t(hi - lo);
      first[b] = p.offsets[b] + std::uint32_t(lo);
    }
    const Problem q = sub_problem(p, first, part);
    const DeviceInputs d = upload(q);
    Strided2D out = make_out(q);
    gdn::recurrence_fwd(space, cfg, d.in, to_device(slots), S, out.view);
    const std::vector<double> r = reference_run(q, slots, ref_pool);
    if (bf)
      for (double& v : ref_pool) v = gdn_ref::round_to_bf16(v);  // the kernel stores bf16 here
    const auto o = read_2d(out);
    for (int b = 0; b < B; ++b)
      for (std::uint32_t t = 0; t < part[b]; ++t)
        for (long j = 0; j < cfg.value_dim(); ++j) {
          out_all[(first[b] + t) * cfg.value_dim() + j] =
              o[(q.offsets[b] + t) * cfg.value_dim() + j];
          ref_out[(first[b] + t) * cfg.value_dim() + j] =
              r[(q.offsets[b] + t) * cfg.value_dim() + j];
        }
  }
  const double tol = bf ? kTolBf16 : kTolF32;
  const double e_out = rel_err(out_all, ref_out);
  const double e_state = rel_err(floats_of(S), ref_pool);
  EXPECT_LE(e_out, tol) << "outputs vs float64 reference";
  EXPECT_LE(e_state, tol) << "state vs float64 reference";
  // Non-vacuous: the reference itself moved away from the initial state.
  EXPECT_GT(rel_err(s0, ref_pool), 1e-2);
  ::testing::Test::RecordProperty("rel_err_out", sci(e_out));
  ::testing::Test::RecordProperty("rel_err_state", sci(e_state));
}

TEST(Reference, ForwardFloatStateShortRows) {
  forward_vs_reference<float>(heads(2, 4, 128), {1, 17, 64, 0, 5}, 1);
  forward_vs_reference<float>(heads(2, 2, 64), {1, 17, 64, 0, 5}, 1);
}
TEST(Reference, ForwardBf16StateShortRows) {
  forward_vs_reference<gdn::bf16>(heads(2, 4, 128), {1, 17, 64, 0, 5}, 1);
}
TEST(Reference, DriftFloatStateLongSequenceOneCall) {
  forward_vs_reference<float>(heads(1, 2, 128), {4096}, 1);
}
TEST(Reference, DriftFloatStateDecodeCalls) {
  forward_vs_reference<float>(heads(1, 2, 64), {512, 300}, 512);
}
TEST(Reference, DriftBf16StateDecodeCalls) {
  forward_vs_reference<gdn::bf16>(heads(1, 2, 128), {512}, 512);
}
TEST(Reference, DriftBf16StateLongSequenceOneCall) {
  forward_vs_reference<gdn::bf16>(heads(1, 2, 128), {4096}, 1);
}

// The ring's delta factors against the reference's u.
TEST(Reference, RecordedDeltaFactors) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 128);
  const Problem p = make_problem(cfg, {7, 3}, 31);
  const DeviceInputs d = upload(p);
  auto S = make_state<float>(2, cfg, 32);
  const auto s0 = floats_of(S);
  const int ring_len = 8;
  const auto ring = make_ring<float>(2, cfg, ring_len, int(gdn::ring_record_elements(128, 128, 2)));
  Strided2D out = make_out(p);
  gdn::recurrence_verify_ring(space, cfg, d.in, to_device({0, 1}), S, out.view, to_device({1, 0}),
                              ring);
  auto h = Kokkos::create_mirror(ring);
  Kokkos::deep_copy(h, ring);
  const gdn::RingLayout lay{128, 128, 2};
  const std::size_t head = std::size_t(cfg.num_value_heads) * 128 * 128;
  double num = 0, den = 0;
  for (int b = 0; b < 2; ++b) {
    std::vector<double> st(s0.begin() + b * head, s0.begin() + (b + 1) * head);
    std::vector<double> o(std::size_t(p.tokens()) * cfg.value_dim());
    std::vector<gdn_ref::RefStep> u(std::size_t(p.len(b)) * cfg.num_value_heads);
    gdn_ref::forward(p.geo(), p.host, int(p.offsets[b]), int(p.offsets[b + 1]), st, o, &u);
    const int rrow = b == 0 ? 1 : 0;
    for (int t = 0; t < p.len(b); ++t)
      for (int hh = 0; hh < cfg.num_value_heads; ++hh)
        for (int j = 0; j < 128; ++j) {
          const double want = u[std::size_t(t) * cfg.num_value_heads + hh].u[j];
          const double got = h(rrow, hh / 2, t, lay.delta_offset(hh % 2) + j);
          num = std::max(num, std::abs(got - want));
          den = std::max(den, std::abs(want));
        }
  }
  EXPECT_GT(den, 0.0);
  EXPECT_LE(num, kTolF32 * den);
}

}  // namespace
}  // namespace gdn_test
