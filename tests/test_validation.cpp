// Bad input: every rejected argument throws gdn::InvalidArgument naming the
// function and the argument, before anything is launched, and leaves every
// state, ring and output buffer exactly as it was.
#include "reject_harness.hpp"

#include <gdn/impl/validate/validate.hpp>

#include <climits>
#include <cmath>
#include <functional>
#include <string>

namespace gdn_test {
namespace {

using Pool4 = Pool<float>;

// A valid call setup that each case breaks in one place.
struct CallSetup {
  ExecSpace space;
  gdn::HeadConfig cfg = heads(2, 4, 64);
  Problem p = make_problem(cfg, {3, 2, 0}, 61);
  DeviceInputs d = upload(p);
  Pool4 state = make_state<float>(4, cfg, 62);
  Pool4 ring = make_ring<float>(3, cfg, 4, int(gdn::ring_record_elements(64, 64, 2)) + 1);
  Strided2D out = make_out(p);
  Index slots = to_device({2, 0, 1});
  Index rslots = to_device({1, 2, 0});
  Table srows = to_device(2, 3, {2, 0, 1, 3, 1, 0});
  Table rrows = to_device(2, 3, {0, 1, 2, 2, 0, 1});
  Index acc = to_device({2, 1, 0});

  void fwd() const { gdn::recurrence_fwd(space, cfg, d.in, slots, state, out.view); }
  void verify() const {
    gdn::recurrence_verify_ring(space, cfg, d.in, slots, state, out.view, rslots, ring);
  }
  void fold() const { gdn::state_fold(space, cfg, srows, state, rrows, ring, acc); }
  std::vector<std::function<void()>> valid_calls() const {
    return {[this] { fwd(); }, [this] { verify(); }, [this] { fold(); }};
  }
  std::vector<std::pair<std::string, std::vector<unsigned char>>> buffers() const {
    return {{"state", bytes_of(state)}, {"ring", bytes_of(ring)}, {"out", bytes_of(out.buf)}};
  }
};

using Case = BadCase<CallSetup>;

gdn::TokenInputs<Mem> with_qkv(const CallSetup& s, const Strided2D& a) {
  auto in = s.d.in;
  in.qkv = a.view;
  return in;
}

Strided2D dense(std::size_t r, std::size_t c) {
  return make_2d(r, c, Layout::Dense, nullptr, 0x3f000000u);
}

// Raw-gate inputs over the setup's tokens: a and b are the setup's decay and beta views.
gdn::GateInputs<Mem> gates(const CallSetup& s, std::size_t params = 4, float a_log = 0.0f,
                           float dt_bias = 0.0f) {
  Kokkos::View<float*, Mem> A_log("A_log", params), bias("dt_bias", params);
  Kokkos::deep_copy(A_log, a_log);
  Kokkos::deep_copy(bias, dt_bias);
  return {s.d.in.qkv, s.d.in.decay, s.d.in.beta, A_log, bias, s.d.in.row_offsets};
}

const char* kFwd = "gdn::recurrence_fwd";
const char* kVer = "gdn::recurrence_verify_ring";
const char* kFold = "gdn::state_fold";

// One case per line (a table; clang-format would break the lambdas up).
// clang-format off
std::vector<Case> cases() {
  std::vector<Case> v;
  // ---- head geometry (all three entry points share the checks) ----
  v.push_back({"NoKeyHeads", kFwd, "cfg.num_key_heads", false, [](CallSetup& s) { s.cfg.num_key_heads = 0; s.fwd(); }});
  v.push_back({"NoValueHeads", kVer, "cfg.num_value_heads", false, [](CallSetup& s) { s.cfg.num_value_heads = 0; s.verify(); }});
  v.push_back({"GroupNotDivisible", kFold, "cfg.num_value_heads", false, [](CallSetup& s) { s.cfg.num_key_heads = 3; s.fold(); }});
  v.push_back({"UnsupportedHeadDim96", kFwd, "cfg.key_head_dim", false, [](CallSetup& s) { s.cfg.key_head_dim = s.cfg.value_head_dim = 96; s.fwd(); }});
  v.push_back({"UnsupportedHeadDim256", kVer, "cfg.key_head_dim", false, [](CallSetup& s) { s.cfg.key_head_dim = s.cfg.value_head_dim = 256; s.verify(); }});
  v.push_back({"ValueDimDiffers", kFold, "cfg.value_head_dim", false, [](CallSetup& s) { s.cfg.value_head_dim = 128; s.fold(); }});
  // ---- per-token inputs ----
  v.push_back({"QkvTooNarrow", kFwd, "inputs.qkv", false, [](CallSetup& s) {
    const Strided2D a = dense(s.p.tokens(), s.cfg.conv_dim() - 1);
    gdn::recurrence_fwd(s.space, s.cfg, with_qkv(s, a), s.slots, s.state, s.out.view);
  }});
  v.push_back({"DecayTooFewHeads", kVer, "inputs.decay", false, [](CallSetup& s) {
    const Strided2D a = dense(s.p.tokens(), s.cfg.num_value_heads - 1);
    auto in = s.d.in;
    in.decay = a.view;
    gdn::recurrence_verify_ring(s.space, s.cfg, in, s.slots, s.state, s.out.view, s.rslots, s.ring);
  }});
  v.push_back({"BetaTooFewTokens", kFwd, "inputs.beta", false, [](CallSetup& s) {
    const Strided2D a = dense(s.p.tokens() - 1, s.cfg.num_value_heads);
    auto in = s.d.in;
    in.beta = a.view;
    gdn::recurrence_fwd(s.space, s.cfg, in, s.slots, s.state, s.out.view);
  }});
  v.push_back({"OffsetsNotBPlusOne", kFwd, "inputs.row_offsets", false, [](CallSetup& s) {
    auto in = s.d.in;
    in.row_offsets = to_device({0, 3, 5});
    gdn::recurrence_fwd(s.space, s.cfg, in, s.slots, s.state, s.out.view);
  }});
  // ---- raw gates (GateInputs) and bf16 activations ----
  v.push_back({"GateATooFewHeads", kFwd, "inputs.a", false, [](CallSetup& s) {
    const Strided2D a = dense(s.p.tokens(), s.cfg.num_value_heads - 1);
    auto in = gates(s);
    in.a = a.view;
    gdn::recurrence_fwd(s.space, s.cfg, in, s.slots, s.state, s.out.view);
  }});
  v.push_back({"GateBTooFewTokens", kVer, "inputs.b", false, [](CallSetup& s) {
    const Strided2D b = dense(s.p.tokens() - 1, s.cfg.num_value_heads);
    auto in = gates(s);
    in.b = b.view;
    gdn::recurrence_verify_ring(s.space, s.cfg, in, s.slots, s.state, s.out.view, s.rslots, s.ring);
  }});
  v.push_back({"ALogTooShort", kFwd, "inputs.A_log", false, [](CallSetup& s) {
    auto in = gates(s);
    in.A_log = Kokkos::View<float*, Mem>("short", 3);
    gdn::recurrence_fwd(s.space, s.cfg, in, s.slots, s.state, s.out.view);
  }});
  v.push_back({"DtBiasTooShort", kVer, "inputs.dt_bias", false, [](CallSetup& s) {
    auto in = gates(s);
    in.dt_bias = Kokkos::View<float*, Mem>("short", 0);
    gdn::recurrence_verify_ring(s.space, s.cfg, in, s.slots, s.state, s.out.view, s.rslots, s.ring);
  }});
  v.push_back({"Bf16QkvTooNarrow", kFwd, "inputs.qkv", false, [](CallSetup& s) {
    Kokkos::View<gdn::bf16**, Mem> qkv("qkv", s.p.tokens(), s.cfg.conv_dim() - 1), g("g", s.p.tokens(), s.cfg.num_value_heads);
    Kokkos::View<gdn::bf16**, Mem> o("o", s.p.tokens(), s.cfg.value_dim());
    const gdn::TokenInputs<Mem, gdn::bf16> in{qkv, g, g, s.d.in.row_offsets};
    gdn::recurrence_fwd(s.space, s.cfg, in, s.slots, s.state, o);
  }});
  v.push_back({"Bf16GateOutTooNarrow", kVer, "out", false, [](CallSetup& s) {
    Kokkos::View<gdn::bf16**, Mem> qkv("qkv", s.p.tokens(), s.cfg.conv_dim()), g("g", s.p.tokens(), s.cfg.num_value_heads);
    Kokkos::View<gdn::bf16**, Mem> o("o", s.p.tokens(), s.cfg.value_dim() - 1);
    const auto f = gates(s);
    const gdn::GateInputs<Mem, gdn::bf16> in{qkv, g, g, f.A_log, f.dt_bias, s.d.in.row_offsets};
    gdn::recurrence_verify_ring(s.space, s.cfg, in, s.slots, s.state, o, s.rslots, s.ring);
  }});
  // ---- output ----
  v.push_back({"OutTooFewRows", kFwd, "out", false, [](CallSetup& s) {
    const Strided2D o = dense(s.p.tokens() - 1, s.cfg.value_dim());
    gdn::recurrence_fwd(s.space, s.cfg, s.d.in, s.slots, s.state, o.view);
  }});
  v.push_back({"OutTooNarrow", kVer, "out", false, [](CallSetup& s) {
    const Strided2D o = dense(s.p.tokens(), s.cfg.value_dim() - 4);
    gdn::recurrence_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.state, o.view, s.rslots, s.ring);
  }});
  // ---- state pool ----
  v.push_back({"StateWrongHeads", kFwd, "state", false, [](CallSetup& s) {
    Pool4 st("st", 4, s.cfg.num_value_heads + 1, 64, 64);
    gdn::recurrence_fwd(s.space, s.cfg, s.d.in, s.slots, st, s.out.view);
  }});
  v.push_back({"StateWrongDims", kFold, "state", false, [](CallSetup& s) {
    Pool4 st("st", 4, s.cfg.num_value_heads, 64, 32);
    gdn::state_fold(s.space, s.cfg, s.srows, st, s.rrows, s.ring, s.acc);
  }});
  v.push_back({"StateNoRows", kVer, "state", false, [](CallSetup& s) {
    Pool4 st("st", 0, s.cfg.num_value_heads, 64, 64);
    gdn::recurrence_verify_ring(s.space, s.cfg, s.d.in, s.slots, st, s.out.view, s.rslots, s.ring);
  }});
  v.push_back({"StateMisaligned", kFwd, "state", false, [](CallSetup& s) {
    Kokkos::View<float*, Mem> raw("raw", 1 + 4 * 4 * 64 * 64);
    Pool4 st(raw.data() + 1, 4, s.cfg.num_value_heads, 64, 64);
    gdn::recurrence_fwd(s.space, s.cfg, s.d.in, s.slots, st, s.out.view);
  }});
  // ---- ring ----
  v.push_back({"RingSlotsWrongLength", kVer, "ring_slots", false, [](CallSetup& s) {
    gdn::recurrence_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, to_device({0, 1}), s.ring);
  }});
  v.push_back({"RingWrongKeyHeads", kVer, "ring", false, [](CallSetup& s) {
    Pool4 r("r", 3, 1, 4, 300);
    gdn::recurrence_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, s.rslots, r);
  }});
  v.push_back({"RecordStrideTooSmall", kVer, "ring", false, [](CallSetup& s) {
    Pool4 r("r", 3, 2, 4, int(gdn::ring_record_elements(64, 64, 2)) - 1);
    gdn::recurrence_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, s.rslots, r);
  }});
  v.push_back({"RingLenZero", kVer, "ring", false, [](CallSetup& s) {
    Pool4 r("r", 3, 2, 0, 300);
    gdn::recurrence_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, s.rslots, r);
  }});
  v.push_back({"FoldRecordStrideTooSmall", kFold, "ring", false, [](CallSetup& s) {
    Pool4 r("r", 3, 2, 4, 10);
    gdn::state_fold(s.space, s.cfg, s.srows, s.state, s.rrows, r, s.acc);
  }});
  // ---- fold tables ----
  v.push_back({"StateRowsWrongBatch", kFold, "state_rows", false, [](CallSetup& s) {
    gdn::state_fold(s.space, s.cfg, to_device(2, 2, {0, 1, 2, 3}), s.state, s.rrows, s.ring, s.acc);
  }});
  v.push_back({"RingRowsWrongLayers", kFold, "ring_rows", false, [](CallSetup& s) {
    gdn::state_fold(s.space, s.cfg, s.srows, s.state, to_device(1, 3, {0, 1, 2}), s.ring, s.acc);
  }});
  // ---- index contents: only with the checking mode ----
  v.push_back({"OffsetsDecrease", kFwd, "inputs.row_offsets", true, [](CallSetup& s) {
    auto in = s.d.in;
    in.row_offsets = to_device({0, 3, 2, 5});
    gdn::recurrence_fwd(s.space, s.cfg, in, s.slots, s.state, s.out.view);
  }});
  v.push_back({"OffsetsDoNotStartAtZero", kVer, "inputs.row_offsets", true, [](CallSetup& s) {
    auto in = s.d.in;
    in.row_offsets = to_device({1, 3, 5, 5});
    gdn::recurrence_verify_ring(s.space, s.cfg, in, s.slots, s.state, s.out.view, s.rslots, s.ring);
  }});
  v.push_back({"OffsetsPastTokens", kFwd, "inputs.row_offsets", true, [](CallSetup& s) {
    auto in = s.d.in;
    in.row_offsets = to_device({0, 3, 5, 6});
    gdn::recurrence_fwd(s.space, s.cfg, in, s.slots, s.state, s.out.view);
  }});
  v.push_back({"StateSlotOutOfRange", kFwd, "state_slots", true, [](CallSetup& s) {
    gdn::recurrence_fwd(s.space, s.cfg, s.d.in, to_device({2, 4, 1}), s.state, s.out.view);
  }});
  v.push_back({"StateSlotSharedByCommittingRows", kFwd, "state_slots", true, [](CallSetup& s) {
    gdn::recurrence_fwd(s.space, s.cfg, s.d.in, to_device({1, 1, 0}), s.state, s.out.view);
  }});
  v.push_back({"RingSlotOutOfRange", kVer, "ring_slots", true, [](CallSetup& s) {
    gdn::recurrence_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, to_device({3, 0, 1}), s.ring);
  }});
  v.push_back({"RingSlotSharedByRecordingRows", kVer, "ring_slots", true, [](CallSetup& s) {
    gdn::recurrence_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, to_device({2, 2, 0}), s.ring);
  }});
  v.push_back({"FoldStateRowOutOfRange", kFold, "state_rows", true, [](CallSetup& s) {
    gdn::state_fold(s.space, s.cfg, to_device(2, 3, {2, 0, 1, 3, 9, 0}), s.state, s.rrows, s.ring, s.acc);
  }});
  v.push_back({"FoldStateRowUsedTwice", kFold, "state_rows", true, [](CallSetup& s) {
    gdn::state_fold(s.space, s.cfg, to_device(2, 3, {2, 0, 1, 3, 2, 0}), s.state, s.rrows, s.ring, s.acc);
  }});
  v.push_back({"FoldRingRowOutOfRange", kFold, "ring_rows", true, [](CallSetup& s) {
    gdn::state_fold(s.space, s.cfg, s.srows, s.state, to_device(2, 3, {0, 1, 2, 2, 7, 1}), s.ring, s.acc);
  }});
  // gdn::pad_slot marks a padding row; the index below it is as out of range as any other.
  v.push_back({"StateSlotBelowPadSlot", kFwd, "state_slots", true, [](CallSetup& s) {
    gdn::recurrence_fwd(s.space, s.cfg, s.d.in, to_device({gdn::pad_slot, gdn::pad_slot - 1, 1}), s.state, s.out.view);
  }});
  v.push_back({"RingSlotBelowPadSlot", kVer, "ring_slots", true, [](CallSetup& s) {
    gdn::recurrence_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, to_device({gdn::pad_slot, gdn::pad_slot - 1, 0}), s.ring);
  }});
  v.push_back({"FoldStateRowBelowPadSlot", kFold, "state_rows", true, [](CallSetup& s) {
    gdn::state_fold(s.space, s.cfg, to_device(2, 3, {2, 0, 1, gdn::pad_slot, gdn::pad_slot - 1, 0}), s.state, s.rrows, s.ring, s.acc);
  }});
  v.push_back({"ALogNotFinite", kFwd, "inputs.A_log", true, [](CallSetup& s) {
    gdn::recurrence_fwd(s.space, s.cfg, gates(s, 4, std::nanf("")), s.slots, s.state, s.out.view);
  }});
  v.push_back({"DtBiasNotFinite", kVer, "inputs.dt_bias", true, [](CallSetup& s) {
    gdn::recurrence_verify_ring(s.space, s.cfg, gates(s, 4, 0.0f, INFINITY), s.slots, s.state, s.out.view, s.rslots, s.ring);
  }});
  return v;
}
// clang-format on

class Rejects : public ::testing::TestWithParam<Case> {};

TEST_P(Rejects, ThrowsNamesArgumentAndChangesNothing) { expect_rejected(GetParam()); }

INSTANTIATE_TEST_SUITE_P(BadInput, Rejects, ::testing::ValuesIn(cases()), BadCaseName());

// The valid setup itself passes, with and without the checking mode (so the
// cases above fail for the reason they name).
TEST(Checking, ValidCallsPassWithAndWithoutChecking) { expect_valid_calls_pass<CallSetup>(); }

// Raw gates: valid calls pass with and without checking; without it, non-finite
// parameters are not looked at (they live on the device).
TEST(Checking, GateInputsPassAndNonFiniteParametersNeedChecking) {
  for (bool on : {false, true}) {
    CallSetup s;
    gdn::set_index_checking(on);
    EXPECT_NO_THROW(gdn::recurrence_fwd(s.space, s.cfg, gates(s, 5, -1.0f, 0.5f), s.slots, s.state,
                                        s.out.view));
    EXPECT_NO_THROW(gdn::recurrence_verify_ring(s.space, s.cfg, gates(s), s.slots, s.state,
                                                s.out.view, s.rslots, s.ring));
    gdn::set_index_checking(false);
    s.space.fence();
  }
  CallSetup s;
  EXPECT_NO_THROW(gdn::recurrence_fwd(s.space, s.cfg, gates(s, 4, std::nanf("")), s.slots, s.state,
                                      s.out.view));
  s.space.fence();
}

// Recording rows only read their state row: several may share one in the checking mode.
TEST(Checking, RecordingRowsMayShareAStateRow) {
  CallSetup s;
  gdn::set_index_checking(true);
  EXPECT_NO_THROW(gdn::recurrence_verify_ring(s.space, s.cfg, s.d.in, to_device({1, 1, 1}), s.state,
                                              s.out.view, s.rslots, s.ring));
  gdn::set_index_checking(false);
  s.space.fence();
}

// Rows the fold skips (n == 0, n > RING_LEN) and empty rows are not checked: padding entries may
// hold anything.
TEST(Checking, SkippedRowsMayHoldAnyIndex) {
  CallSetup s;
  gdn::set_index_checking(true);
  EXPECT_NO_THROW(gdn::state_fold(s.space, s.cfg, to_device(2, 3, {2, 0, 999, 3, 1, 999}), s.state,
                                  to_device(2, 3, {0, 1, 999, 2, 0, 999}), s.ring,
                                  to_device({2, 9, 0})));
  EXPECT_NO_THROW(
      gdn::recurrence_fwd(s.space, s.cfg, s.d.in, to_device({2, 0, 12345}), s.state, s.out.view));
  gdn::set_index_checking(false);
  s.space.fence();
}

TEST(Checking, SwitchRoundTrips) {
  const bool before = gdn::index_checking_enabled();
  gdn::set_index_checking(true);
  EXPECT_TRUE(gdn::index_checking_enabled());
  gdn::set_index_checking(false);
  EXPECT_FALSE(gdn::index_checking_enabled());
  gdn::set_index_checking(before);
}

// The work items of one launch are capped at INT_MAX / 2, so that the
// kernels' item + stride never overflows an int. (A batch that large needs
// gigabytes of index views, so the check is tested directly.)
TEST(Validation, WorkItemsPerLaunchLeaveIntHeadroom) {
  const gdn::Impl::ArgCheck c("gdn::recurrence_verify_ring");
  EXPECT_NO_THROW(gdn::Impl::check_league(c, "state_slots", INT_MAX / 2));
  try {
    gdn::Impl::check_league(c, "state_slots", static_cast<long long>(INT_MAX / 2) + 1);
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("state_slots"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(INT_MAX / 2)), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace gdn_test
