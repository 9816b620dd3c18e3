// The fold of the conv state (gdn::state_fold with a gdn::ConvFold) in the
// speculative cycle over L layers: conv verify feeding the recurrence's
// verify, then one fold, bit for bit a forward over the accepted prefix.
#include "conv_support.hpp"

namespace gdn_test {
namespace {

// ---------------------------------------------------------------------------
// The speculative cycle over L layers: conv verify (and the recurrence's
// verify on its output), then one state_fold with the conv pools; checked
// against conv1d_fwd (and recurrence_fwd) over the accepted prefixes.
struct ConvCycle {
  gdn::HeadConfig cfg = heads(1, 2, 64);
  int width = 4;
  std::vector<int> lens;
  int ring_len = 6;
  int layers = 1;
  int ring_pad = 3;  // conv ring channels past conv_dim (never touched)
  std::uint64_t seed = 1;
  // accepted[b]; a row longer than RING_LEN must get 0 or > RING_LEN.
  std::vector<std::uint32_t> accepted;
};

template <class T, class Y>
void run_conv_cycle(const ConvCycle& cy) {
  const ExecSpace space;
  const int B = int(cy.lens.size()), L = cy.layers, C = int(cy.cfg.conv_dim());
  const int pool = L * B + 3, ring_pool = L * B + 2;
  std::vector<std::uint32_t> srows = spread_rows(L * B, pool, 5, 2);
  std::vector<std::uint32_t> rrows = spread_rows(L * B, ring_pool, 3, 1);
  std::vector<ConvCase> cases;
  for (int l = 0; l < L; ++l) cases.push_back(make_case<T>(cy.cfg, cy.width, cy.lens, cy.seed + l));
  const auto C0 = make_conv_state<T>(pool, C, cy.width, cy.seed + 100);
  const auto S0 = make_state<float>(pool, cy.cfg, cy.seed + 101);
  const auto conv_ring = make_conv_ring<T>(ring_pool, cy.ring_len, C + cy.ring_pad);
  const int rec = int(
      gdn::ring_record_elements(cy.cfg.key_head_dim, cy.cfg.value_head_dim, cy.cfg.group_size()));
  const auto ring = make_ring<float>(ring_pool, cy.cfg, cy.ring_len, rec + 1);
  auto Cv = clone3(C0), Cf = clone3(C0);
  auto Sv = clone(S0);
  for (int l = 0; l < L; ++l) {
    SCOPED_TRACE("layer " + std::to_string(l));
    const ConvCase& cc = cases[l];
    const DevConv<T> d = upload_conv<T>(cc);
    const Index s =
        to_device(std::vector<std::uint32_t>(srows.begin() + l * B, srows.begin() + (l + 1) * B));
    const Index r =
        to_device(std::vector<std::uint32_t>(rrows.begin() + l * B, rrows.begin() + (l + 1) * B));
    Arr2<Y> yv = make_arr<Y>(cc.tokens(), C, Layout::Dense, nullptr);
    Arr2<Y> yf = make_arr<Y>(cc.tokens(), C, Layout::Dense, nullptr);
    gdn::conv1d_verify_ring(space, cy.cfg, d.in, s, Cv, yv.view, r, conv_ring);
    gdn::conv1d_fwd(space, cy.cfg, d.in, s, Cf, yf.view);
    space.fence();
    const auto v = read_arr(yv);
    EXPECT_TRUE(same_bits(v, read_arr(yf))) << "conv verify output != conv forward output";
    // The recurrence's verify consumes the post-conv qkv (as float).
    const PostConvInputs pc(cy.cfg, cc, v, d.offsets);
    Strided2D o = make_2d(cc.tokens(), cy.cfg.value_dim(), Layout::Dense, nullptr);
    gdn::recurrence_verify_ring(space, cy.cfg, pc.in, s, Sv, o.view, r, ring);
    space.fence();
  }
  // After the verifies: a short row's conv state row is untouched, a long row's is the forward's.
  {
    const auto f0 = floats3(C0), ff = floats3(Cf), fv = floats3(Cv);
    const std::size_t row = std::size_t(C) * (cy.width - 1);
    int bad = 0;
    for (int s = 0; s < pool; ++s) {
      bool committed = false;
      for (int e = 0; e < L * B; ++e)
        if (srows[e] == std::uint32_t(s)) committed = cases[e / B].len(e % B) > cy.ring_len;
      const auto& want = committed ? ff : f0;
      bad += std::memcmp(&fv[s * row], &want[s * row], row * 4) != 0;
    }
    EXPECT_EQ(bad, 0) << "conv state rows after verify";
  }
  // The conv ring: exactly the recording rows' inputs, poison everywhere else.
  {
    auto h = Kokkos::create_mirror(conv_ring);
    Kokkos::deep_copy(h, conv_ring);
    int bad_written = 0, bad_poison = 0;
    for (int rr = 0; rr < ring_pool; ++rr) {
      int owner = -1;
      for (int e = 0; e < L * B; ++e)
        if (rrows[e] == std::uint32_t(rr)) owner = e;
      const ConvCase* cc = owner >= 0 ? &cases[owner / B] : nullptr;
      const int b = owner % B;
      const int len = cc ? cc->len(b) : 0;
      const bool recording = cc && len > 0 && len <= cy.ring_len;
      for (int p = 0; p < cy.ring_len; ++p)
        for (int c = 0; c < C + cy.ring_pad; ++c) {
          const T v = h(rr, p, c);
          if (recording && p < len && c < C) {
            bad_written += to_f(v) != cc->x[(std::size_t(cc->offsets[b]) + p) * C + c];
          } else {
            bad_poison += !is_poison(v);
          }
        }
    }
    EXPECT_EQ(bad_written, 0) << "conv ring entries differ from the window's inputs";
    EXPECT_EQ(bad_poison, 0) << "conv ring written outside the recording rows' positions";
  }
  gdn::state_fold(space, cy.cfg, to_device(L, B, srows), Sv, to_device(L, B, rrows), ring,
                  to_device(cy.accepted), gdn::ConvFold<Mem, T>{Cv, conv_ring});
  // Expected: every layer's forward over what it commits: the accepted prefix
  // of a recorded row, the whole of a committed row.
  auto Ce = clone3(C0);
  auto Se = clone(S0);
  for (int l = 0; l < L; ++l) {
    const ConvCase& cc = cases[l];
    std::vector<std::uint32_t> n(B);
    for (int b = 0; b < B; ++b) {
      const std::uint32_t a = cy.accepted[b];
      n[b] = cc.len(b) > cy.ring_len ? std::uint32_t(cc.len(b))
                                     : (a <= std::uint32_t(cy.ring_len) ? a : 0u);
    }
    const ConvCase pre = prefix_case(cc, n);
    const DevConv<T> d = upload_conv<T>(pre);
    const Index s =
        to_device(std::vector<std::uint32_t>(srows.begin() + l * B, srows.begin() + (l + 1) * B));
    Arr2<Y> y = make_arr<Y>(pre.tokens(), C, Layout::Dense, nullptr);
    gdn::conv1d_fwd(space, cy.cfg, d.in, s, Ce, y.view);
    space.fence();
    const auto v = read_arr(y);
    const PostConvInputs pc(cy.cfg, pre, v, d.offsets);
    Strided2D o = make_2d(pre.tokens(), cy.cfg.value_dim(), Layout::Dense, nullptr);
    gdn::recurrence_fwd(space, cy.cfg, pc.in, s, Se, o.view);
    space.fence();
  }
  EXPECT_TRUE(same_bytes(bytes_of(Cv), bytes_of(Ce)))
      << "conv state after fold != after a forward over the accepted prefix";
  EXPECT_TRUE(same_bytes(bytes_of(Sv), bytes_of(Se)))
      << "recurrent state after fold != after a forward over the accepted prefix";
}

// fold(n) == forward over the first n tokens for every n in 0 .. T, and
// n > RING_LEN leaves the row untouched; rows of every length class.
template <class T, class Y>
void every_acceptance(int width, std::uint64_t seed) {
  ConvCycle cy;
  cy.width = width;
  cy.ring_len = 6;
  cy.lens = {6, 6, 5, 1, 0, 2, 9};  // 9 > RING_LEN: committed by verify
  cy.seed = seed;
  for (int pad : {3, 0}) {  // conv ring rows: one channel at a time in the fold, 16-byte groups
    cy.ring_pad = pad;
    for (std::uint32_t n = 0; n <= 7; ++n) {
      SCOPED_TRACE("ring_pad=" + std::to_string(pad) + " n=" + std::to_string(n));
      cy.accepted.clear();
      for (int b = 0; b < int(cy.lens.size()); ++b) {
        const std::uint32_t len = std::uint32_t(cy.lens[b]);
        cy.accepted.push_back(len > 6u ? (n % 2 ? 0u : 100u) : (n > 6u ? n : std::min(n, len)));
      }
      run_conv_cycle<T, Y>(cy);
    }
  }
}

TEST(ConvFold, EveryAcceptanceW4) { every_acceptance<float, float>(4, 11); }
TEST(ConvFold, EveryAcceptanceW3) { every_acceptance<float, float>(3, 12); }
TEST(ConvFold, EveryAcceptanceW2) { every_acceptance<float, float>(2, 13); }
TEST(ConvFold, EveryAcceptanceBf16) {
  every_acceptance<gdn::bf16, float>(4, 14);
  every_acceptance<gdn::bf16, float>(2, 15);
}
TEST(ConvFold, Bf16Outputs) {
  ConvCycle cy;
  cy.lens = {4, 2, 0, 7};
  cy.accepted = {3, 2, 0, 0};
  cy.seed = 16;
  run_conv_cycle<gdn::bf16, gdn::bf16>(cy);
  run_conv_cycle<float, gdn::bf16>(cy);
}

// Every layer reads only its own conv ring rows and writes only its own conv state rows.
TEST(ConvFold, SeveralLayersInOneCall) {
  ConvCycle cy;
  cy.cfg = heads(2, 4, 64);
  cy.layers = 3;
  cy.lens = {6, 2, 0, 9, 1, 4};
  cy.accepted = {4, 2, 0, 9, 1, 3};
  cy.seed = 17;
  run_conv_cycle<float, float>(cy);
  cy.width = 3;
  cy.accepted = {6, 1, 0, 0, 0, 4};
  run_conv_cycle<gdn::bf16, float>(cy);
}

// A window longer than one block of the conv kernel.
TEST(ConvFold, LongWindows) {
  ConvCycle cy;
  cy.ring_len = 40;
  cy.lens = {40, 33, 17, 41};
  cy.accepted = {37, 33, 16, 0};
  cy.seed = 18;
  run_conv_cycle<float, float>(cy);
}

// n == 0 and n > RING_LEN: the conv state is neither read nor written,
// whatever the conv ring holds; n == 1 does read (the test can fail).
TEST(ConvFold, SkipsZeroAndOverlongAcceptance) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const int ring_len = 4, C = int(cfg.conv_dim());
  const auto S0 = make_state<float>(3, cfg, 9);
  const auto ring = make_ring<float>(3, cfg, ring_len, int(gdn::ring_record_elements(64, 64, 2)));
  const auto C0 = make_conv_state<float>(3, C, 4, 10);
  const auto conv_ring = make_conv_ring<float>(3, ring_len, C);  // all NaN
  auto S = clone(S0);
  auto Cs = clone3(C0);
  gdn::state_fold(space, cfg, to_device(1, 3, {0, 1, 2}), S, to_device(1, 3, {0, 1, 2}), ring,
                  to_device({0u, 5u, 1000u}), gdn::ConvFold<Mem, float>{Cs, conv_ring});
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(Cs), bytes_of(C0)));
  EXPECT_TRUE(same_bytes(bytes_of(S), bytes_of(S0)));
  gdn::state_fold(space, cfg, to_device(1, 3, {0, 1, 2}), S, to_device(1, 3, {0, 1, 2}), ring,
                  to_device({0u, 1u, 0u}), gdn::ConvFold<Mem, float>{Cs, conv_ring});
  space.fence();
  const auto f0 = floats3(C0), f1 = floats3(Cs);
  const std::size_t row = std::size_t(C) * 3;
  EXPECT_TRUE(same_bits(std::vector<float>(f0.begin(), f0.begin() + row),
                        std::vector<float>(f1.begin(), f1.begin() + row)));
  EXPECT_FALSE(same_bits(std::vector<float>(f0.begin() + row, f0.begin() + 2 * row),
                         std::vector<float>(f1.begin() + row, f1.begin() + 2 * row)))
      << "n == 1 must shift a (NaN) ring input into row 1";
}

// Conv channels past one work item of the fold kernel (640 channels, the
// second item partly filled on CUDA), with conv rings whose rows do and do
// not allow 16-byte groups of channels.
TEST(ConvFold, ChannelsPastOneFoldItem) {
  ConvCycle cy;
  cy.cfg = heads(2, 6, 64);
  cy.layers = 2;
  cy.lens = {5, 3, 6};
  cy.accepted = {5, 1, 2};
  cy.seed = 19;
  for (int pad : {3, 0, 8}) {  // 0 and 8: 16-byte groups of channels in the fold; 3: one at a time
    cy.ring_pad = pad;
    run_conv_cycle<float, float>(cy);
    run_conv_cycle<gdn::bf16, gdn::bf16>(cy);
  }
}

// The kernels gdn launches (Kokkos Tools' begin-parallel-for callback).
std::vector<std::string>* g_launches = nullptr;
void record_launch(const char* name, std::uint32_t, std::uint64_t* id) {
  *id = 0;
  if (g_launches && std::string(name).rfind("gdn::", 0) == 0) g_launches->push_back(name);
}

// Both pools of every layer are folded by one launch.
TEST(ConvFold, OneLaunchForBothPools) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const int ring_len = 4, C = int(cfg.conv_dim());
  auto S = make_state<float>(4, cfg, 9);
  const auto ring = make_ring<float>(4, cfg, ring_len, int(gdn::ring_record_elements(64, 64, 2)));
  auto Cs = make_conv_state<float>(4, C, 4, 10);
  const auto conv_ring = make_conv_ring<float>(4, ring_len, C);
  const auto srows = to_device(2, 2, {0, 1, 2, 3}), rrows = to_device(2, 2, {3, 2, 1, 0});
  const auto accepted = to_device({2u, 4u});
  std::vector<std::string> names;
  space.fence();
  g_launches = &names;
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(record_launch);
  gdn::state_fold(space, cfg, srows, S, rrows, ring, accepted,
                  gdn::ConvFold<Mem, float>{Cs, conv_ring});
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
  g_launches = nullptr;
  space.fence();
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0], "gdn::state_fold::kernel");
}

}  // namespace
}  // namespace gdn_test
