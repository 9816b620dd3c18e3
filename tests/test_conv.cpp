// The causal depthwise conv1d with SiLU (gdn/conv1d.hpp): agreement with the
// float64 reference, the documented order, the bit-exact promises of its
// forward (pieces, batch, layouts) and edge cases. The fold of its conv state:
// test_conv_fold.cpp; bad input: test_conv_validation.cpp.
#include "conv_support.hpp"

namespace gdn_test {
namespace {

// ---------------------------------------------------------------------------
// Agreement with the float64 reference (outputs within tolerance, the conv
// state exactly: it holds copies of inputs).
template <class T, class Y>
void check_reference(int width, bool bias, const std::vector<int>& lens, std::uint64_t seed) {
  const ExecSpace space;
  const auto cfg = heads(1, 2, 64);
  const ConvCase cc = make_case<T>(cfg, width, lens, seed, bias);
  const int B = cc.batch(), C = cc.C(), K = width - 1, rows = B + 2;
  const auto slots = spread_rows(B, rows, 3, 1);
  const DevConv<T> d = upload_conv<T>(cc);
  const auto S0 = make_conv_state<T>(rows, C, width, seed + 1);
  auto S = clone3(S0);
  Arr2<Y> out = make_arr<Y>(cc.tokens(), C, Layout::Dense, nullptr);
  gdn::conv1d_fwd(space, cfg, d.in, to_device(slots), S, out.view);
  space.fence();
  const auto y = read_arr(out);
  std::vector<double> pool = to_double(floats3(S0));
  const std::vector<double> w = to_double(cc.weight), bv = to_double(cc.bias);
  const double tol = sizeof(Y) == 4 ? 4e-6 : 1.0 / 128;  // relative to max(1, |y|)
  double worst = 0;
  for (int b = 0; b < B; ++b) {
    const int L = cc.len(b);
    if (L == 0) continue;
    std::vector<double> st(pool.begin() + std::size_t(slots[b]) * C * K,
                           pool.begin() + std::size_t(slots[b] + 1) * C * K);
    const std::vector<double> x(cc.x.begin() + std::size_t(cc.offsets[b]) * C,
                                cc.x.begin() + std::size_t(cc.offsets[b + 1]) * C);
    std::vector<double> ref;
    gdn_ref::conv1d_silu(C, width, L, x, st, w, bv, ref);
    std::copy(st.begin(), st.end(), pool.begin() + std::size_t(slots[b]) * C * K);
    for (int i = 0; i < L * C; ++i) {
      const double got = y[std::size_t(cc.offsets[b]) * C + i];
      worst = std::max(worst, std::abs(got - ref[i]) / std::max(1.0, std::abs(ref[i])));
    }
  }
  EXPECT_LE(worst, tol) << "conv output vs float64 reference";
  const auto got_pool = floats3(S);
  int diff = 0;
  for (std::size_t i = 0; i < got_pool.size(); ++i) diff += double(got_pool[i]) != pool[i];
  EXPECT_EQ(diff, 0) << "conv state after the forward differs from the reference's";
}

TEST(Conv, AgreesWithFloat64Reference) {
  const std::vector<int> lens = {5, 0, 1, 2, 37, 3, 16, 17};
  std::uint64_t seed = 500;
  for (int width = gdn::conv_min_width; width <= gdn::conv_max_width; ++width) {
    for (bool bias : {true, false}) {
      SCOPED_TRACE("W=" + std::to_string(width) + (bias ? " bias" : " no bias"));
      check_reference<float, float>(width, bias, lens, seed++);
      check_reference<gdn::bf16, float>(width, bias, lens, seed++);
      check_reference<float, gdn::bf16>(width, bias, lens, seed++);
      check_reference<gdn::bf16, gdn::bf16>(width, bias, lens, seed++);
    }
  }
}

// A long sequence: many blocks, split over several teams.
TEST(Conv, LongSequenceAgreesWithReference) {
  check_reference<float, float>(4, true, {300}, 9);
  check_reference<gdn::bf16, float>(3, true, {257, 1, 0, 64}, 10);
}

// The documented order (bias, then the taps oldest to newest with fmaf, then
// acc / (1 + exp(-acc)) with the library's exp), evaluated here in plain host
// code, gives the kernel's bits on every backend.
TEST(Conv, DocumentedOrderGivesTheBits) {
  const ExecSpace space;
  const auto cfg = heads(1, 2, 64);
  for (int width = 2; width <= 4; ++width) {
    const ConvCase cc = make_case<float>(cfg, width, {7, 1, 2}, 80 + width);
    const int C = cc.C(), K = width - 1;
    const auto S0 = make_conv_state<float>(3, C, width, 90 + width);
    auto S = clone3(S0);
    const DevConv<float> d = upload_conv<float>(cc);
    Arr2<float> out = make_arr<float>(cc.tokens(), C, Layout::Dense, nullptr);
    gdn::conv1d_fwd(space, cfg, d.in, to_device(iota_u32(3)), S, out.view);
    space.fence();
    const auto y = read_arr(out);
    const auto st = floats3(S0);
    int diff = 0;
    for (int b = 0; b < cc.batch(); ++b)
      for (int c = 0; c < C; ++c) {
        std::vector<float> h(st.begin() + (std::size_t(b) * C + c) * K,
                             st.begin() + (std::size_t(b) * C + c + 1) * K);
        for (int p = 0; p < cc.len(b); ++p) h.push_back(cc.x[(cc.offsets[b] + p) * C + c]);
        for (int p = 0; p < cc.len(b); ++p) {
          float acc = cc.bias[c];
          for (int j = 0; j < width; ++j) acc = std::fma(cc.weight[c * width + j], h[p + j], acc);
          const float want = acc / (1.0f + gdn::Impl::exp_fixed(-acc));
          const float got = y[(cc.offsets[b] + p) * C + c];
          diff += std::memcmp(&want, &got, 4) != 0;
        }
      }
    EXPECT_EQ(diff, 0) << "W=" << width;
  }
}

// Serial and OpenMP share the host mapping: the same bits (forward, verify,
// conv ring and the fold). Only where both exist and the test's memory is the host's.
template <class M>
void serial_and_openmp_same_bits() {
#if defined(KOKKOS_ENABLE_SERIAL) && defined(KOKKOS_ENABLE_OPENMP)
  if constexpr (std::is_same<M, Kokkos::HostSpace>::value) {
    const auto cfg = heads(2, 4, 64);
    const ConvCase cc = make_case<gdn::bf16>(cfg, 4, {5, 0, 70, 2}, 95);
    const DevConv<gdn::bf16> d = upload_conv<gdn::bf16>(cc);
    const auto C0 = make_conv_state<gdn::bf16>(4, cc.C(), 4, 96);
    const auto S0 = make_state<float>(4, cfg, 97);
    const Index slots = to_device(iota_u32(4));
    const Table rows = to_device(1, 4, iota_u32(4));
    std::vector<unsigned char> fwd_state[2], fold_state[2], ring_bytes[2];
    std::vector<float> outs[2];
    auto run = [&](const auto& space, int which) {
      auto Cf = clone3(C0), Cv = clone3(C0);
      auto S = clone(S0);
      auto conv_ring = make_conv_ring<gdn::bf16>(4, 8, cc.C());
      auto ring = make_ring<float>(4, cfg, 8, int(gdn::ring_record_elements(64, 64, 2)));
      Arr2<float> out = make_arr<float>(cc.tokens(), cc.C(), Layout::Dense, nullptr);
      gdn::conv1d_fwd(space, cfg, d.in, slots, Cf, out.view);
      gdn::conv1d_verify_ring(space, cfg, d.in, slots, Cv, out.view, slots, conv_ring);
      gdn::state_fold(space, cfg, rows, S, rows, ring, to_device({3u, 0u, 70u, 0u}),
                      gdn::ConvFold<Mem, gdn::bf16>{Cv, conv_ring});
      space.fence();
      fwd_state[which] = bytes_of(Cf);
      fold_state[which] = bytes_of(Cv);
      ring_bytes[which] = bytes_of(conv_ring);
      outs[which] = read_arr(out);
    };
    run(Kokkos::Serial(), 0);
    run(Kokkos::OpenMP(), 1);
    EXPECT_TRUE(same_bytes(fwd_state[0], fwd_state[1]));
    EXPECT_TRUE(same_bytes(fold_state[0], fold_state[1]));
    EXPECT_TRUE(same_bytes(ring_bytes[0], ring_bytes[1]));
    EXPECT_TRUE(same_bits(outs[0], outs[1]));
    return;
  }
#endif
  GTEST_SKIP() << "needs Serial and OpenMP over host memory";
}

TEST(Conv, SerialAndOpenMPGiveTheSameBits) { serial_and_openmp_same_bits<Mem>(); }

// ---------------------------------------------------------------------------
// A forward split into pieces (at any token, pieces shorter than W-1
// included) == one call, bit for bit: the conv state carries.
template <class T, class Y>
void check_pieces(int width, const std::vector<int>& lens,
                  const std::vector<std::vector<std::uint32_t>>& cuts, std::uint64_t seed) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const ConvCase cc = make_case<T>(cfg, width, lens, seed);
  const int B = cc.batch(), C = cc.C(), rows = B + 1;
  const Index slots = to_device(spread_rows(B, rows, 2, 1));
  const auto S0 = make_conv_state<T>(rows, C, width, seed + 3);
  auto S1 = clone3(S0);
  const DevConv<T> d = upload_conv<T>(cc);
  Arr2<Y> out1 = make_arr<Y>(cc.tokens(), C, Layout::Dense, nullptr);
  gdn::conv1d_fwd(space, cfg, d.in, slots, S1, out1.view);
  // The pieces: cuts[k][b] tokens of row b in call k.
  auto Sp = clone3(S0);
  std::vector<std::uint32_t> done(B, 0);
  std::vector<float> y(std::size_t(cc.tokens()) * C, 0.0f);
  for (const auto& cut : cuts) {
    std::vector<std::uint32_t> first(B), count(B);
    for (int b = 0; b < B; ++b) {
      first[b] = cc.offsets[b] + done[b];
      count[b] = std::min<std::uint32_t>(cut[b], std::uint32_t(cc.len(b)) - done[b]);
    }
    const ConvCase piece = sub_case(cc, first, count);
    const DevConv<T> dp = upload_conv<T>(piece);
    Arr2<Y> o = make_arr<Y>(piece.tokens(), C, Layout::Dense, nullptr);
    gdn::conv1d_fwd(space, cfg, dp.in, slots, Sp, o.view);
    space.fence();
    const auto yo = read_arr(o);
    for (int b = 0; b < B; ++b) {
      std::copy(yo.begin() + std::size_t(piece.offsets[b]) * C,
                yo.begin() + std::size_t(piece.offsets[b + 1]) * C,
                y.begin() + (std::size_t(first[b])) * C);
      done[b] += count[b];
    }
  }
  for (int b = 0; b < B; ++b) ASSERT_EQ(done[b], std::uint32_t(cc.len(b))) << "bad test cuts";
  space.fence();
  EXPECT_TRUE(same_bits(y, read_arr(out1))) << "pieces' outputs != one call's";
  EXPECT_TRUE(same_bytes(bytes_of(Sp), bytes_of(S1))) << "pieces' conv state != one call's";
}

TEST(Conv, PiecesEqualOneCall) {
  const std::vector<int> lens = {9, 1, 2, 40, 0, 3, 5};
  // Pieces of 0, 1, 2 tokens (shorter than W-1) and longer ones, cut anywhere.
  const std::vector<std::vector<std::uint32_t>> cuts = {{4, 1, 1, 17, 0, 2, 1},
                                                        {1, 0, 1, 2, 0, 0, 1},
                                                        {2, 0, 0, 20, 0, 1, 0},
                                                        {99, 9, 9, 99, 9, 9, 9}};
  std::uint64_t seed = 700;
  for (int width = 2; width <= 4; ++width) {
    SCOPED_TRACE("W=" + std::to_string(width));
    check_pieces<float, float>(width, lens, cuts, seed++);
    check_pieces<gdn::bf16, float>(width, lens, cuts, seed++);
    check_pieces<gdn::bf16, gdn::bf16>(width, lens, cuts, seed++);
  }
}

// A row's bits do not depend on the rest of the batch (which changes how
// many teams a sequence is split over).
TEST(Conv, RowBitsIndependentOfBatch) {
  const ExecSpace space;
  const auto cfg = heads(1, 2, 64);
  const ConvCase all = make_case<float>(cfg, 4, {200, 1, 1, 1, 1, 1, 1, 1}, 31);
  const ConvCase alone = sub_case(all, {0}, {200});
  const auto S0 = make_conv_state<float>(8, all.C(), 4, 32);
  auto Sa = clone3(S0), Sb = clone3(S0);
  const DevConv<float> da = upload_conv<float>(all), db = upload_conv<float>(alone);
  Arr2<float> oa = make_arr<float>(all.tokens(), all.C(), Layout::Dense, nullptr);
  Arr2<float> ob = make_arr<float>(alone.tokens(), all.C(), Layout::Dense, nullptr);
  gdn::conv1d_fwd(space, cfg, da.in, to_device(iota_u32(8)), Sa, oa.view);
  gdn::conv1d_fwd(space, cfg, db.in, to_device({0u}), Sb, ob.view);
  space.fence();
  const auto ya = read_arr(oa), yb = read_arr(ob);
  EXPECT_TRUE(same_bits(std::vector<float>(ya.begin(), ya.begin() + yb.size()), yb));
  const auto fa = floats3(Sa), fb = floats3(Sb);
  const std::size_t row = std::size_t(all.C()) * 3;
  EXPECT_TRUE(same_bits(std::vector<float>(fa.begin(), fa.begin() + row),
                        std::vector<float>(fb.begin(), fb.begin() + row)));
}

// Strided and transposed qkv and out give the dense call's bits.
TEST(Conv, StridedInputsAndOutputsSameBits) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const ConvCase cc = make_case<gdn::bf16>(cfg, 4, {6, 1, 0, 19}, 41);
  const Index slots = to_device({3, 0, 1, 2});
  const auto S0 = make_conv_state<gdn::bf16>(4, cc.C(), 4, 42);
  std::vector<float> ref_y;
  std::vector<unsigned char> ref_s;
  for (Layout l : {Layout::Dense, Layout::Padded, Layout::Transposed, Layout::Strided}) {
    SCOPED_TRACE(layout_name(l));
    const DevConv<gdn::bf16> d = upload_conv<gdn::bf16>(cc, l);
    auto S = clone3(S0);
    Arr2<float> out =
        make_arr<float>(cc.tokens(), cc.C(), l == Layout::Dense ? Layout::Transposed : l, nullptr);
    gdn::conv1d_fwd(space, cfg, d.in, slots, S, out.view);
    space.fence();
    if (l == Layout::Dense) {
      ref_y = read_arr(out);
      ref_s = bytes_of(S);
    } else {
      EXPECT_TRUE(same_bits(read_arr(out), ref_y));
      EXPECT_TRUE(same_bytes(bytes_of(S), ref_s));
    }
  }
}

// ---------------------------------------------------------------------------
TEST(ConvEdges, EmptyBatchAndEmptyRows) {
  const ExecSpace space;
  const auto cfg = heads(1, 2, 64);
  const int C = int(cfg.conv_dim());
  const auto C0 = make_conv_state<float>(3, C, 4, 5);
  const auto S0 = make_state<float>(3, cfg, 6);
  const auto conv_ring = make_conv_ring<float>(3, 4, C);
  const auto ring = make_ring<float>(3, cfg, 4, int(gdn::ring_record_elements(64, 64, 2)));
  const auto ring0 = bytes_of(conv_ring);
  auto Cs = clone3(C0);
  auto S = clone(S0);
  {  // B == 0
    const ConvCase cc = make_case<float>(cfg, 4, {}, 7);
    const DevConv<float> d = upload_conv<float>(cc);
    Arr2<float> out = make_arr<float>(0, C, Layout::Dense, nullptr);
    const Index none("none", 0);
    gdn::conv1d_fwd(space, cfg, d.in, none, Cs, out.view);
    gdn::conv1d_verify_ring(space, cfg, d.in, none, Cs, out.view, none, conv_ring);
    gdn::state_fold(space, cfg, Table("s", 3, 0), S, Table("r", 3, 0), ring, none,
                    gdn::ConvFold<Mem, float>{Cs, conv_ring});
    gdn::state_fold(space, cfg, Table("s", 0, 0), S, Table("r", 0, 0), ring, none,
                    gdn::ConvFold<Mem, float>{Cs, conv_ring});
  }
  {  // every row empty
    const ConvCase cc = make_case<float>(cfg, 4, {0, 0, 0}, 8);
    const DevConv<float> d = upload_conv<float>(cc);
    Arr2<float> out = make_arr<float>(2, C, Layout::Dense, nullptr);  // extra rows: untouched
    const auto out0 = bytes_of(out.buf);
    gdn::conv1d_fwd(space, cfg, d.in, to_device({0, 1, 2}), Cs, out.view);
    gdn::conv1d_verify_ring(space, cfg, d.in, to_device({0, 1, 2}), Cs, out.view,
                            to_device({0, 1, 2}), conv_ring);
    space.fence();
    EXPECT_TRUE(same_bytes(bytes_of(out.buf), out0));
  }
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(Cs), bytes_of(C0)));
  EXPECT_TRUE(same_bytes(bytes_of(S), bytes_of(S0)));
  EXPECT_TRUE(same_bytes(bytes_of(conv_ring), ring0));
}

}  // namespace
}  // namespace gdn_test
