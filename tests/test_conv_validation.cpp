// Bad input to the conv calls and to state_fold's conv pools: thrown before
// any launch, naming function and argument, nothing changed; the index
// checking mode's conv rules.
#include "conv_support.hpp"
#include "reject_harness.hpp"

namespace gdn_test {
namespace {

// ---------------------------------------------------------------------------
// Bad input: thrown before any launch, naming function and argument; nothing changes.
struct ConvSetup {
  ExecSpace space;
  gdn::HeadConfig cfg = heads(1, 2, 64);
  ConvCase cc = make_case<float>(cfg, 4, {3, 2, 0}, 61);
  DevConv<float> d = upload_conv<float>(cc);
  ConvPool<float> cstate = make_conv_state<float>(4, int(cfg.conv_dim()), 4, 62);
  ConvPool<float> cring = make_conv_ring<float>(3, 4, int(cfg.conv_dim()));
  Pool<float> state = make_state<float>(4, cfg, 63);
  Pool<float> ring = make_ring<float>(3, cfg, 4, int(gdn::ring_record_elements(64, 64, 2)));
  Arr2<float> out = make_arr<float>(cc.tokens(), int(cfg.conv_dim()), Layout::Dense, nullptr);
  Index slots = to_device({2, 0, 1});
  Index rslots = to_device({1, 2, 0});
  Table srows = to_device(2, 3, {2, 0, 1, 3, 1, 0});
  Table rrows = to_device(2, 3, {0, 1, 2, 2, 0, 1});
  Index acc = to_device({2, 1, 0});

  void fwd() const { gdn::conv1d_fwd(space, cfg, d.in, slots, cstate, out.view); }
  void verify() const {
    gdn::conv1d_verify_ring(space, cfg, d.in, slots, cstate, out.view, rslots, cring);
  }
  void fold() const {
    gdn::state_fold(space, cfg, srows, state, rrows, ring, acc,
                    gdn::ConvFold<Mem, float>{cstate, cring});
  }
  std::vector<std::function<void()>> valid_calls() const {
    return {[this] { fwd(); }, [this] { verify(); }, [this] { fold(); }};
  }
  std::vector<std::pair<std::string, std::vector<unsigned char>>> buffers() const {
    return {{"conv state", bytes_of(cstate)},
            {"conv ring", bytes_of(cring)},
            {"state", bytes_of(state)},
            {"out", bytes_of(out.buf)}};
  }
};

using ConvBadCase = BadCase<ConvSetup>;

gdn::ConvInputs<Mem, float> with_weight(const ConvSetup& s, int rows, int width) {
  auto in = s.d.in;
  in.weight = Kokkos::View<float**, Kokkos::LayoutRight, Mem>("w", rows, width);
  return in;
}

const char* kCFwd = "gdn::conv1d_fwd";
const char* kCVer = "gdn::conv1d_verify_ring";
const char* kCFold = "gdn::state_fold";

// clang-format off
std::vector<ConvBadCase> conv_cases() {
  const int C = int(heads(1, 2, 64).conv_dim());
  std::vector<ConvBadCase> v;
  v.push_back({"NoKeyHeads", kCFwd, "cfg.num_key_heads", false, [](ConvSetup& s) { s.cfg.num_key_heads = 0; s.fwd(); }});
  v.push_back({"NoValueDim", kCVer, "cfg.value_head_dim", false, [](ConvSetup& s) { s.cfg.value_head_dim = 0; s.verify(); }});
  v.push_back({"WidthOne", kCFwd, "inputs.weight", false, [C](ConvSetup& s) {
    gdn::conv1d_fwd(s.space, s.cfg, with_weight(s, C, 1), s.slots, s.cstate, s.out.view); }});
  v.push_back({"WidthFive", kCVer, "inputs.weight", false, [C](ConvSetup& s) {
    gdn::conv1d_verify_ring(s.space, s.cfg, with_weight(s, C, 5), s.slots, s.cstate, s.out.view, s.rslots, s.cring); }});
  v.push_back({"WeightTooFewChannels", kCFwd, "inputs.weight", false, [C](ConvSetup& s) {
    gdn::conv1d_fwd(s.space, s.cfg, with_weight(s, C - 1, 4), s.slots, s.cstate, s.out.view); }});
  v.push_back({"WeightWidthNotStateWidth", kCFwd, "conv_state", false, [C](ConvSetup& s) {
    gdn::conv1d_fwd(s.space, s.cfg, with_weight(s, C, 3), s.slots, s.cstate, s.out.view); }});
  v.push_back({"BiasTooShort", kCFwd, "inputs.bias", false, [C](ConvSetup& s) {
    auto in = s.d.in;
    in.bias = Kokkos::View<float*, Mem>("b", C - 1);
    gdn::conv1d_fwd(s.space, s.cfg, in, s.slots, s.cstate, s.out.view); }});
  v.push_back({"QkvTooNarrow", kCFwd, "inputs.qkv", false, [C](ConvSetup& s) {
    auto in = s.d.in;
    Kokkos::View<float**, Kokkos::LayoutRight, Mem> q("q", s.cc.tokens(), C - 1);
    in.qkv = q;
    gdn::conv1d_fwd(s.space, s.cfg, in, s.slots, s.cstate, s.out.view); }});
  v.push_back({"OffsetsNotBPlusOne", kCVer, "inputs.row_offsets", false, [](ConvSetup& s) {
    auto in = s.d.in;
    in.row_offsets = to_device({0, 3, 5});
    gdn::conv1d_verify_ring(s.space, s.cfg, in, s.slots, s.cstate, s.out.view, s.rslots, s.cring); }});
  v.push_back({"ConvStateWrongChannels", kCFwd, "conv_state", false, [C](ConvSetup& s) {
    ConvPool<float> st("st", 4, C + 1, 3);
    gdn::conv1d_fwd(s.space, s.cfg, s.d.in, s.slots, st, s.out.view); }});
  v.push_back({"ConvStateNoRows", kCVer, "conv_state", false, [C](ConvSetup& s) {
    ConvPool<float> st("st", 0, C, 3);
    gdn::conv1d_verify_ring(s.space, s.cfg, s.d.in, s.slots, st, s.out.view, s.rslots, s.cring); }});
  v.push_back({"OutTooFewRows", kCFwd, "out", false, [C](ConvSetup& s) {
    Kokkos::View<float**, Kokkos::LayoutRight, Mem> o("o", s.cc.tokens() - 1, C);
    gdn::conv1d_fwd(s.space, s.cfg, s.d.in, s.slots, s.cstate, o); }});
  v.push_back({"OutTooNarrow", kCVer, "out", false, [C](ConvSetup& s) {
    Kokkos::View<gdn::bf16**, Kokkos::LayoutRight, Mem> o("o", s.cc.tokens(), C - 1);
    gdn::conv1d_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.cstate, o, s.rslots, s.cring); }});
  v.push_back({"RingSlotsWrongLength", kCVer, "ring_slots", false, [](ConvSetup& s) {
    gdn::conv1d_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.cstate, s.out.view, to_device({0, 1}), s.cring); }});
  v.push_back({"ConvRingTooNarrow", kCVer, "conv_ring", false, [C](ConvSetup& s) {
    ConvPool<float> r("r", 3, 4, C - 1);
    gdn::conv1d_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.cstate, s.out.view, s.rslots, r); }});
  v.push_back({"ConvRingLenZero", kCVer, "conv_ring", false, [C](ConvSetup& s) {
    ConvPool<float> r("r", 3, 0, C);
    gdn::conv1d_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.cstate, s.out.view, s.rslots, r); }});
  v.push_back({"ConvRingNoRows", kCVer, "conv_ring", false, [C](ConvSetup& s) {
    ConvPool<float> r("r", 0, 4, C);
    gdn::conv1d_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.cstate, s.out.view, s.rslots, r); }});
  // ---- the fold with conv pools ----
  v.push_back({"FoldConvStateWidthFive", kCFold, "conv.conv_state", false, [C](ConvSetup& s) {
    ConvPool<float> st("st", 4, C, 4);
    gdn::state_fold(s.space, s.cfg, s.srows, s.state, s.rrows, s.ring, s.acc, gdn::ConvFold<Mem, float>{st, s.cring}); }});
  v.push_back({"FoldConvStateWidthOne", kCFold, "conv.conv_state", false, [C](ConvSetup& s) {
    ConvPool<float> st("st", 4, C, 0);
    gdn::state_fold(s.space, s.cfg, s.srows, s.state, s.rrows, s.ring, s.acc, gdn::ConvFold<Mem, float>{st, s.cring}); }});
  v.push_back({"FoldConvStateWrongChannels", kCFold, "conv.conv_state", false, [C](ConvSetup& s) {
    ConvPool<float> st("st", 4, C - 2, 3);
    gdn::state_fold(s.space, s.cfg, s.srows, s.state, s.rrows, s.ring, s.acc, gdn::ConvFold<Mem, float>{st, s.cring}); }});
  v.push_back({"FoldConvRingShorterThanRing", kCFold, "conv.conv_ring", false, [C](ConvSetup& s) {
    ConvPool<float> r("r", 3, 3, C);
    gdn::state_fold(s.space, s.cfg, s.srows, s.state, s.rrows, s.ring, s.acc, gdn::ConvFold<Mem, float>{s.cstate, r}); }});
  v.push_back({"FoldConvRingTooNarrow", kCFold, "conv.conv_ring", false, [C](ConvSetup& s) {
    ConvPool<float> r("r", 3, 4, C - 1);
    gdn::state_fold(s.space, s.cfg, s.srows, s.state, s.rrows, s.ring, s.acc, gdn::ConvFold<Mem, float>{s.cstate, r}); }});
  v.push_back({"FoldRecurrentArgumentStillChecked", kCFold, "state", false, [](ConvSetup& s) {
    Pool<float> st("st", 4, 2, 64, 32);
    gdn::state_fold(s.space, s.cfg, s.srows, st, s.rrows, s.ring, s.acc, gdn::ConvFold<Mem, float>{s.cstate, s.cring}); }});
  v.push_back({"FoldTablesWrongBatch", kCFold, "state_rows", false, [](ConvSetup& s) {
    gdn::state_fold(s.space, s.cfg, to_device(2, 2, {0, 1, 2, 3}), s.state, s.rrows, s.ring, s.acc, gdn::ConvFold<Mem, float>{s.cstate, s.cring}); }});
  // ---- index contents: only with the checking mode ----
  v.push_back({"OffsetsDecrease", kCFwd, "inputs.row_offsets", true, [](ConvSetup& s) {
    auto in = s.d.in;
    in.row_offsets = to_device({0, 3, 2, 5});
    gdn::conv1d_fwd(s.space, s.cfg, in, s.slots, s.cstate, s.out.view); }});
  v.push_back({"SlotOutOfRange", kCFwd, "state_slots", true, [](ConvSetup& s) {
    gdn::conv1d_fwd(s.space, s.cfg, s.d.in, to_device({2, 4, 1}), s.cstate, s.out.view); }});
  v.push_back({"SlotSharedByCommittingRows", kCFwd, "state_slots", true, [](ConvSetup& s) {
    gdn::conv1d_fwd(s.space, s.cfg, s.d.in, to_device({1, 1, 0}), s.cstate, s.out.view); }});
  v.push_back({"RingSlotOutOfRange", kCVer, "ring_slots", true, [](ConvSetup& s) {
    gdn::conv1d_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.cstate, s.out.view, to_device({3, 0, 1}), s.cring); }});
  v.push_back({"RingSlotSharedByRecordingRows", kCVer, "ring_slots", true, [](ConvSetup& s) {
    gdn::conv1d_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.cstate, s.out.view, to_device({2, 2, 0}), s.cring); }});
  // gdn::pad_slot marks a padding row; the index below it is as out of range as any other.
  v.push_back({"SlotBelowPadSlot", kCFwd, "state_slots", true, [](ConvSetup& s) {
    gdn::conv1d_fwd(s.space, s.cfg, s.d.in, to_device({gdn::pad_slot, gdn::pad_slot - 1, 1}), s.cstate, s.out.view); }});
  v.push_back({"RingSlotBelowPadSlot", kCVer, "ring_slots", true, [](ConvSetup& s) {
    gdn::conv1d_verify_ring(s.space, s.cfg, s.d.in, s.slots, s.cstate, s.out.view, to_device({gdn::pad_slot, gdn::pad_slot - 1, 0}), s.cring); }});
  v.push_back({"FoldConvStateRowBelowPadSlot", kCFold, "state_rows", true, [](ConvSetup& s) {
    gdn::state_fold(s.space, s.cfg, to_device(2, 3, {2, 0, 1, gdn::pad_slot, gdn::pad_slot - 1, 0}), s.state, s.rrows, s.ring, s.acc, gdn::ConvFold<Mem, float>{s.cstate, s.cring}); }});
  v.push_back({"FoldConvStateRowOutOfRange", kCFold, "state_rows", true, [C](ConvSetup& s) {
    ConvPool<float> st("st", 3, C, 3);  // smaller than the recurrent pool: row 3 is out of range
    gdn::state_fold(s.space, s.cfg, s.srows, s.state, s.rrows, s.ring, s.acc, gdn::ConvFold<Mem, float>{st, s.cring}); }});
  v.push_back({"FoldConvRingRowOutOfRange", kCFold, "ring_rows", true, [C](ConvSetup& s) {
    ConvPool<float> r("r", 2, 4, C);
    gdn::state_fold(s.space, s.cfg, s.srows, s.state, s.rrows, s.ring, s.acc, gdn::ConvFold<Mem, float>{s.cstate, r}); }});
  return v;
}
// clang-format on

class ConvRejects : public ::testing::TestWithParam<ConvBadCase> {};

TEST_P(ConvRejects, ThrowsNamesArgumentAndChangesNothing) { expect_rejected(GetParam()); }

INSTANTIATE_TEST_SUITE_P(BadInput, ConvRejects, ::testing::ValuesIn(conv_cases()), BadCaseName());

// The valid setup passes with and without checking (so the cases above fail for their reason).
TEST(ConvChecking, ValidCallsPass) { expect_valid_calls_pass<ConvSetup>(); }

// Recording rows only read their conv state row: several may share one in the checking mode;
// rows the fold skips and empty rows may hold any index.
TEST(ConvChecking, SharedReadRowsAndSkippedRowsPass) {
  ConvSetup s;
  gdn::set_index_checking(true);
  EXPECT_NO_THROW(gdn::conv1d_verify_ring(s.space, s.cfg, s.d.in, to_device({1, 1, 1}), s.cstate,
                                          s.out.view, s.rslots, s.cring));
  EXPECT_NO_THROW(
      gdn::conv1d_fwd(s.space, s.cfg, s.d.in, to_device({2, 0, 12345}), s.cstate, s.out.view));
  EXPECT_NO_THROW(gdn::state_fold(s.space, s.cfg, to_device(2, 3, {2, 0, 999, 3, 1, 999}), s.state,
                                  to_device(2, 3, {0, 1, 999, 2, 0, 999}), s.ring,
                                  to_device({2, 9, 0}),
                                  gdn::ConvFold<Mem, float>{s.cstate, s.cring}));
  gdn::set_index_checking(false);
  s.space.fence();
}

}  // namespace
}  // namespace gdn_test
