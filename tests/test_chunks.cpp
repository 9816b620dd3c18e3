// The promises of the chunked recurrence (docs/design.md): splitting at chunk
// multiples, independence of the batch's composition, T = 1 decode against a
// window, decays at the ends of their range.
#include "cycle.hpp"

namespace gdn_test {
namespace {

constexpr int C = gdn::chunk_tokens;

// A forward over L tokens == forwards over pieces split at multiples of C
// (float state: the state between calls is stored exactly).
TEST(Chunks, ForwardSplitAtChunkMultiplesIsBitIdentical) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 128);
  const Problem p = make_problem(cfg, {3 * C + 5, 2 * C, C + 1}, 51);
  const auto slots = to_device(iota_u32(3));
  const auto S0 = make_state<float>(3, cfg, 52);

  auto S_one = clone(S0);
  const DeviceInputs d = upload(p);
  Strided2D out_one = make_out(p);
  gdn::recurrence_fwd(space, cfg, d.in, slots, S_one, out_one.view);

  // Pieces: [0, C), [C, 3C) and the rest of every row (clipped to its length).
  auto S_split = clone(S0);
  std::vector<float> out_split(std::size_t(p.tokens()) * cfg.value_dim());
  const int cuts[] = {0, C, 3 * C, 1 << 20};
  for (int piece = 0; piece < 3; ++piece) {
    std::vector<std::uint32_t> first(3), count(3);
    for (int b = 0; b < 3; ++b) {
      const int lo = std::min(cuts[piece], p.len(b)), hi = std::min(cuts[piece + 1], p.len(b));
      first[b] = p.offsets[b] + std::uint32_t(lo);
      count[b] = std::uint32_t(hi - lo);
    }
    const Problem q = sub_problem(p, first, count);
    const DeviceInputs dq = upload(q);
    Strided2D o = make_out(q);
    gdn::recurrence_fwd(space, cfg, dq.in, slots, S_split, o.view);
    const auto h = read_2d(o);
    for (int b = 0; b < 3; ++b)
      for (std::uint32_t t = 0; t < count[b]; ++t)
        std::memcpy(&out_split[(first[b] + t) * cfg.value_dim()],
                    &h[(q.offsets[b] + t) * cfg.value_dim()], cfg.value_dim() * sizeof(float));
  }
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(S_one), bytes_of(S_split))) << "state";
  EXPECT_TRUE(same_bits(read_2d(out_one), out_split)) << "outputs";
}

// A row's bits do not depend on the other rows of the call (their lengths,
// their number) nor on where the row sits in the batch.
TEST(Chunks, RowResultsIndependentOfBatchComposition) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const Problem alone = make_problem(cfg, {2 * C + 3}, 61);
  // The same row as item 2 of a ragged batch with rows much shorter and longer.
  Problem mixed = make_problem(cfg, {1, 5 * C, 2 * C + 3, 0, 7}, 62);
  {
    const std::size_t CD = cfg.conv_dim(), H = cfg.num_value_heads, t0 = mixed.offsets[2];
    std::copy(alone.host.qkv.begin(), alone.host.qkv.end(), mixed.host.qkv.begin() + t0 * CD);
    std::copy(alone.host.decay.begin(), alone.host.decay.end(), mixed.host.decay.begin() + t0 * H);
    std::copy(alone.host.beta.begin(), alone.host.beta.end(), mixed.host.beta.begin() + t0 * H);
  }
  const auto S0 = make_state<float>(5, cfg, 63);
  auto S_alone = clone(S0), S_mixed = clone(S0);
  const DeviceInputs da = upload(alone), dm = upload(mixed);
  Strided2D oa = make_out(alone), om = make_out(mixed);
  gdn::recurrence_fwd(space, cfg, da.in, to_device({2u}), S_alone, oa.view);
  gdn::recurrence_fwd(space, cfg, dm.in, to_device(iota_u32(5)), S_mixed, om.view);
  space.fence();
  const auto ra = read_2d(oa), rm = read_2d(om);
  const std::vector<float> row(rm.begin() + mixed.offsets[2] * cfg.value_dim(),
                               rm.begin() + mixed.offsets[3] * cfg.value_dim());
  EXPECT_TRUE(same_bits(ra, row)) << "outputs of the row";
  const auto fa = floats_of(S_alone), fm = floats_of(S_mixed);
  const std::size_t head = std::size_t(cfg.num_value_heads) * 64 * 64;
  EXPECT_TRUE(same_bits(std::vector<float>(fa.begin() + 2 * head, fa.begin() + 3 * head),
                        std::vector<float>(fm.begin() + 2 * head, fm.begin() + 3 * head)))
      << "state of the row";
}

// T = 1 decode calls and one window call over the same tokens chunk them
// differently: they agree to float tolerance, and need not be bit-identical.
TEST(Chunks, DecodeStepsAgreeWithOneWindowCall) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 128);
  const int L = C + 7;
  const Problem p = make_problem(cfg, {L, L}, 71);
  const auto slots = to_device(iota_u32(2));
  const auto S0 = make_state<float>(2, cfg, 72);
  auto S_win = clone(S0), S_dec = clone(S0);
  const DeviceInputs d = upload(p);
  Strided2D o_win = make_out(p);
  gdn::recurrence_fwd(space, cfg, d.in, slots, S_win, o_win.view);
  std::vector<float> o_dec(std::size_t(p.tokens()) * cfg.value_dim());
  for (int t = 0; t < L; ++t) {
    const std::vector<std::uint32_t> first = {p.offsets[0] + t, p.offsets[1] + t}, one = {1, 1};
    const Problem q = sub_problem(p, first, one);
    const DeviceInputs dq = upload(q);
    Strided2D o = make_out(q);
    gdn::recurrence_fwd(space, cfg, dq.in, slots, S_dec, o.view);
    const auto h = read_2d(o);
    for (int b = 0; b < 2; ++b)
      std::memcpy(&o_dec[(first[b]) * cfg.value_dim()], &h[b * cfg.value_dim()],
                  cfg.value_dim() * sizeof(float));
  }
  space.fence();
  const auto ow = read_2d(o_win);
  EXPECT_LE(rel_err(o_dec, std::vector<double>(ow.begin(), ow.end())), 2e-5);
  const auto sw = floats_of(S_win);
  EXPECT_LE(rel_err(floats_of(S_dec), std::vector<double>(sw.begin(), sw.end())), 2e-5);
}

// Decays exactly 1 (no forgetting) and near 0 (almost full forgetting; their
// products underflow towards 0 inside a chunk): exact promises hold, and the
// results agree with the float64 reference.
TEST(Chunks, DecaysExactlyOneAndNearZero) {
  for (float decay : {1.0f, 1e-3f, 1e-20f}) {
    SCOPED_TRACE("decay " + std::to_string(decay));
    const ExecSpace space;
    const auto cfg = heads(2, 4, 64);
    Problem p = make_problem(cfg, {2 * C + 3, 5}, 81);
    for (float& a : p.host.decay) a = decay;
    const auto slots = iota_u32(2);
    auto S = make_state<float>(2, cfg, 82);
    const auto s0 = floats_of(S);
    std::vector<double> ref_pool(s0.begin(), s0.end());
    const DeviceInputs d = upload(p);
    Strided2D out = make_out(p);
    gdn::recurrence_fwd(space, cfg, d.in, to_device(slots), S, out.view);
    space.fence();
    const auto ref_out = reference_run(p, slots, ref_pool);
    EXPECT_LE(rel_err(read_2d(out), ref_out), 2e-5);
    EXPECT_LE(rel_err(floats_of(S), ref_pool), 2e-5);
    for (float& a : p.host.decay) EXPECT_EQ(a, decay);
  }
  // The verify / fold / forward cycle with such decays (cycle.hpp).
  for (float decay : {1.0f, 1e-20f}) {
    CycleSpec cs;
    cs.cfg = heads(2, 4, 64);
    cs.lens = {C + 2, 4, 0, 9};
    cs.ring_len = 2 * C;
    cs.seed = 90;
    cs.decay = decay;
    run_cycle<float, float>(cs);
  }
}

}  // namespace
}  // namespace gdn_test
