// The bit-exact promises of docs/design.md over the supported shapes.
#include "cycle.hpp"

namespace gdn_test {
namespace {

struct Shape {
  int nk, nv, d;
};
const Shape kShapes[] = {{2, 2, 64}, {2, 4, 64}, {1, 4, 64}, {2, 2, 128}, {2, 4, 128}, {2, 8, 128}};

std::string describe(const Shape& s) {
  return "nk=" + std::to_string(s.nk) + " nv=" + std::to_string(s.nv) + " D=" + std::to_string(s.d);
}

template <class StateT, class RingT>
void cycle_over_shapes(const std::vector<int>& lens, int ring_len) {
  std::uint64_t seed = 100;
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(describe(s));
    CycleSpec cs;
    cs.cfg = heads(s.nk, s.nv, s.d);
    cs.lens = lens;
    cs.ring_len = ring_len;
    cs.seed = seed++;
    run_cycle<StateT, RingT>(cs);
  }
}

// Rows shorter than, equal to and longer than RING_LEN, and an empty row.
const std::vector<int> kLens = {3, 0, 8, 1, 5, 11};

TEST(Exactness, FloatStateFloatRing) { cycle_over_shapes<float, float>(kLens, 8); }
TEST(Exactness, Bf16StateFloatRing) { cycle_over_shapes<gdn::bf16, float>(kLens, 8); }
TEST(Exactness, FloatStateBf16RingIsCloseNotExact) {
  cycle_over_shapes<float, gdn::bf16>(kLens, 8);
}
TEST(Exactness, Bf16StateBf16RingIsCloseNotExact) {
  cycle_over_shapes<gdn::bf16, gdn::bf16>(kLens, 8);
}

TEST(Exactness, RingLen16) { cycle_over_shapes<float, float>({16, 9, 17, 2, 16, 0, 1}, 16); }
TEST(Exactness, RingLen1) { cycle_over_shapes<gdn::bf16, float>({1, 0, 2, 1}, 1); }
TEST(Exactness, RingLen2Bf16State) {
  cycle_over_shapes<gdn::bf16, float>({2, 1, 0, 3, 2}, 2);
  cycle_over_shapes<gdn::bf16, gdn::bf16>({2, 1, 0, 3, 2}, 2);
}

// Verify rows longer than the kernel's stage of 16 tokens: the row's working
// state advances over its earlier stages in registers, and the fold of the
// records must still equal the forward.
TEST(Exactness, WindowsSpanningSeveralStages) {
  CycleSpec cs;
  cs.cfg = heads(2, 4, 128);
  cs.lens = {40, 33, 64, 70, 16, 17, 32};
  cs.ring_len = 64;
  run_cycle<float, float>(cs);
  cs.cfg = heads(1, 2, 64);
  cs.pad = 2;
  run_cycle<gdn::bf16, float>(cs);
}

// Qwen3-Next's layer (nk = 16, nv = 32, D = 128) over many rows: empty rows,
// rows that record, rows that commit; then one token per row (a decode step).
TEST(Exactness, QwenLayerManyRows) {
  CycleSpec cs;
  cs.cfg = heads(16, 32, 128);
  for (int b = 0; b < 72; ++b) cs.lens.push_back(b % 7 == 3 ? 0 : (b % 5 == 2 ? 6 : 1 + b % 4));
  cs.ring_len = 4;
  run_cycle<float, float>(cs);
  cs.lens.resize(40);
  cs.seed = 7;
  cs.pad = 2;
  run_cycle<gdn::bf16, float>(cs);
  cs.lens.clear();
  for (int b = 0; b < 72; ++b) cs.lens.push_back(b % 7 == 3 ? 0 : 1);
  cs.seed = 10;
  run_cycle<gdn::bf16, float>(cs);
  cs.cfg = heads(16, 32, 64);
  cs.seed = 11;
  run_cycle<float, float>(cs);
}

TEST(Exactness, RecordPaddingZeroAndLarge) {
  CycleSpec cs;
  cs.cfg = heads(2, 4, 64);
  cs.lens = {4, 2, 6};
  cs.ring_len = 6;
  cs.pad = 0;
  run_cycle<float, float>(cs);
  cs.pad = 61;
  run_cycle<float, float>(cs);
}

TEST(Strides, NonUnitAndTransposedInputsAndOutputs) {
  for (Layout l : {Layout::Dense, Layout::Padded, Layout::Transposed, Layout::Strided}) {
    SCOPED_TRACE(layout_name(l));
    CycleSpec cs;
    cs.cfg = heads(2, 4, 128);
    cs.lens = {5, 8, 0, 3, 9};
    cs.layout = l;
    cs.seed = 7;
    run_cycle<float, float>(cs);
  }
}

// Strided inputs must give the same bits as dense ones.
TEST(Strides, SameBitsAsDense) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const Problem p = make_problem(cfg, {6, 1, 9}, 77);
  const auto slots = to_device(iota_u32(3));
  const auto S0 = make_state<float>(3, cfg, 78);
  std::vector<float> ref_out;
  std::vector<unsigned char> ref_state;
  for (Layout l : {Layout::Dense, Layout::Padded, Layout::Transposed, Layout::Strided}) {
    SCOPED_TRACE(layout_name(l));
    const DeviceInputs d = upload(p, l);
    auto S = clone(S0);
    Strided2D out = make_out(p, l == Layout::Dense ? Layout::Transposed : Layout::Dense);
    gdn::recurrence_fwd(space, cfg, d.in, slots, S, out.view);
    space.fence();
    if (l == Layout::Dense) {
      ref_out = read_2d(out);
      ref_state = bytes_of(S);
    } else {
      EXPECT_TRUE(same_bits(read_2d(out), ref_out));
      EXPECT_TRUE(same_bytes(bytes_of(S), ref_state));
    }
  }
}

// Every layer reads only its own ring rows and writes only its own state rows.
template <class StateT>
void multi_layer_fold() {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 128);
  const int L = 3, B = 4, ring_len = 6;
  const std::vector<int> lens = {6, 2, 0, 9};  // 9 > RING_LEN: committed by verify
  const int pool = L * B + 2, ring_pool = L * B + 1;
  // Layer-major tables that differ from each other and from the identity.
  std::vector<std::uint32_t> srows(L * B), rrows(L * B);
  for (int e = 0; e < L * B; ++e) {
    srows[e] = std::uint32_t((e * 5 + 3) % pool);
    rrows[e] = std::uint32_t((e * 3 + 1) % ring_pool);
  }
  const auto S0 = make_state<StateT>(pool, cfg, 5);
  const std::size_t rec = gdn::ring_record_elements(128, 128, 2);
  const auto ring = make_ring<float>(ring_pool, cfg, ring_len, int(rec) + 2);
  auto S = clone(S0);
  std::vector<Problem> probs;
  std::vector<std::uint32_t> acc = {4, 2, 0, 9};
  for (int l = 0; l < L; ++l) {
    probs.push_back(make_problem(cfg, lens, 1000 + l));  // each layer its own inputs
    const DeviceInputs d = upload(probs.back());
    const std::vector<std::uint32_t> s(srows.begin() + l * B, srows.begin() + (l + 1) * B);
    const std::vector<std::uint32_t> r(rrows.begin() + l * B, rrows.begin() + (l + 1) * B);
    Strided2D out = make_out(probs.back());
    gdn::recurrence_verify_ring(space, cfg, d.in, to_device(s), S, out.view, to_device(r), ring);
  }
  gdn::state_fold(space, cfg, to_device(L, B, srows), S, to_device(L, B, rrows), ring,
                  to_device(acc));
  // Expected: every layer's forward over its accepted prefix, from the same pool.
  auto Se = clone(S0);
  for (int l = 0; l < L; ++l) {
    const Problem pre = prefix_problem(probs[l], acc);
    const DeviceInputs d = upload(pre);
    const std::vector<std::uint32_t> s(srows.begin() + l * B, srows.begin() + (l + 1) * B);
    Strided2D out = make_out(pre);
    gdn::recurrence_fwd(space, cfg, d.in, to_device(s), Se, out.view);
  }
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(S), bytes_of(Se)));
}

TEST(Fold, AllLayersInOneLaunchFloatState) { multi_layer_fold<float>(); }
TEST(Fold, AllLayersInOneLaunchBf16State) { multi_layer_fold<gdn::bf16>(); }

// n == 0 and n > RING_LEN: the row is neither read nor written, whatever the ring holds.
TEST(Fold, SkipsZeroAndOverlongAcceptance) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const int ring_len = 4;
  const auto S0 = make_state<float>(3, cfg, 9);
  const std::size_t rec = gdn::ring_record_elements(64, 64, 2);
  const auto ring = make_ring<float>(3, cfg, ring_len, int(rec));  // all NaN: reading it would show
  auto S = clone(S0);
  gdn::state_fold(space, cfg, to_device(1, 3, {0, 1, 2}), S, to_device(1, 3, {0, 1, 2}), ring,
                  to_device({0u, 5u, 1000u}));
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(S), bytes_of(S0)));
  // n == 1 does read: the NaN ring reaches the state (the test above can fail).
  gdn::state_fold(space, cfg, to_device(1, 3, {0, 1, 2}), S, to_device(1, 3, {0, 1, 2}), ring,
                  to_device({0u, 1u, 0u}));
  space.fence();
  EXPECT_FALSE(same_bytes(bytes_of(S), bytes_of(S0)));
}

TEST(Edges, EmptyBatch) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 128);
  const Problem p = make_problem(cfg, {}, 3);
  const DeviceInputs d = upload(p);
  const auto S0 = make_state<float>(2, cfg, 4);
  auto S = clone(S0);
  const auto ring = make_ring<float>(1, cfg, 4, int(gdn::ring_record_elements(128, 128, 2)));
  Strided2D out = make_out(p);
  const Index none("none", 0);
  gdn::recurrence_fwd(space, cfg, d.in, none, S, out.view);
  gdn::recurrence_verify_ring(space, cfg, d.in, none, S, out.view, none, ring);
  gdn::state_fold(space, cfg, Table("s", 3, 0), S, Table("r", 3, 0), ring, none);
  gdn::state_fold(space, cfg, Table("s", 0, 0), S, Table("r", 0, 0), ring, none);
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(S), bytes_of(S0)));
}

TEST(Edges, AllRowsEmptyTouchNothing) {
  const ExecSpace space;
  const auto cfg = heads(1, 2, 64);
  const Problem p = make_problem(cfg, {0, 0, 0}, 3);
  const DeviceInputs d = upload(p);
  const auto S0 = make_state<gdn::bf16>(3, cfg, 4);
  auto S = clone(S0);
  const auto ring = make_ring<float>(3, cfg, 4, int(gdn::ring_record_elements(64, 64, 2)));
  const auto ring0 = bytes_of(ring);
  Strided2D out = make_out(p);
  gdn::recurrence_fwd(space, cfg, d.in, to_device({0, 1, 2}), S, out.view);
  gdn::recurrence_verify_ring(space, cfg, d.in, to_device({0, 1, 2}), S, out.view,
                              to_device({0, 1, 2}), ring);
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(S), bytes_of(S0)));
  EXPECT_TRUE(same_bytes(bytes_of(ring), ring0));
}

// Calls are ordered on their execution space instance: a fold enqueued right
// after its verify, with no fence between, sees the records.
TEST(Async, CallsAreStreamOrdered) {
  CycleSpec cs;
  cs.cfg = heads(2, 4, 128);
  cs.lens = {8, 8, 8, 8};
  run_cycle<float, float>(cs);  // run_cycle fences only after fwd+verify and after fold+forward
}

}  // namespace
}  // namespace gdn_test
