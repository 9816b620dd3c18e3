// The causal depthwise conv1d with SiLU (gdn/conv1d.hpp) and the fold of its
// conv state (gdn::state_fold with a gdn::ConvFold): agreement with the
// float64 reference, the bit-exact promises (pieces, verify, fold), the
// conv feeding the recurrence, edge cases and bad input.
#include <cmath>
#include <functional>
#include <string>
#include <type_traits>

#include "reference/conv_reference.hpp"
#include "test_support.hpp"

#include <gdn/impl/fixed_math.hpp>

namespace gdn_test {
namespace {

template <class T>
using ConvPool = Kokkos::View<T***, Kokkos::LayoutRight, Mem>;  // [rows, C, W-1] or conv ring

template <class T>
T from_f(float x) {
  return storage_from_float<T>(x);
}

template <class T>
bool is_poison(T v) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &v, sizeof v);
  return sizeof(T) == 4 ? bits == kPoisonF32 : bits == kPoisonBf16;
}

template <class T>
T poison() {
  T v;
  if (sizeof(T) == 4)
    std::memcpy(&v, &kPoisonF32, 4);
  else
    std::memcpy(&v, &kPoisonBf16, 2);
  return v;
}

// ---------------------------------------------------------------------------
// A 2-D device array of T in a chosen layout (Strided2D for any value type).
template <class T>
struct Arr2 {
  Kokkos::View<T*, Mem> buf;
  Kokkos::View<T**, Kokkos::LayoutStride, Mem> view;  // [rows, cols]
  std::size_t rows = 0, cols = 0, s0 = 0, s1 = 0;
};

template <class T>
Arr2<T> make_arr(std::size_t rows, std::size_t cols, Layout layout, const float* dense) {
  Arr2<T> a;
  a.rows = rows;
  a.cols = cols;
  if (layout == Layout::Transposed) {
    a.s0 = 1;
    a.s1 = rows > 0 ? rows : 1;
  } else if (layout == Layout::Strided) {
    a.s0 = 2 * cols + 3;
    a.s1 = 2;
  } else {
    a.s0 = cols;
    a.s1 = 1;
  }
  const std::size_t n = (rows && cols) ? (rows - 1) * a.s0 + (cols - 1) * a.s1 + 1 : 1;
  a.buf =
      Kokkos::View<T*, Mem>(Kokkos::view_alloc("gdn_test::arr", Kokkos::WithoutInitializing), n);
  auto h = Kokkos::create_mirror(a.buf);
  for (std::size_t i = 0; i < n; ++i) h(i) = poison<T>();
  if (dense)
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c)
        h(r * a.s0 + c * a.s1) = from_f<T>(dense[r * cols + c]);
  Kokkos::deep_copy(a.buf, h);
  a.view = Kokkos::View<T**, Kokkos::LayoutStride, Mem>(
      a.buf.data(), Kokkos::LayoutStride(rows, a.s0, cols, a.s1));
  return a;
}

template <class T>
std::vector<float> read_arr(const Arr2<T>& a) {  // dense [rows][cols]
  auto h = Kokkos::create_mirror(a.buf);
  Kokkos::deep_copy(h, a.buf);
  std::vector<float> r(a.rows * a.cols);
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t c = 0; c < a.cols; ++c) r[i * a.cols + c] = to_f(h(i * a.s0 + c * a.s1));
  return r;
}

// ---------------------------------------------------------------------------
// One layer's conv problem on the host: inputs hold values exact in T.
struct ConvCase {
  gdn::HeadConfig cfg;
  int width = 4;
  std::vector<std::uint32_t> offsets;  // [B+1]
  std::vector<float> x;                // [tokens][C] pre-conv inputs
  std::vector<float> weight;           // [C][W]
  std::vector<float> bias;             // [C] or empty
  std::vector<float> decay, beta;      // [tokens][nv] (for the recurrence after the conv)
  int C() const { return int(cfg.conv_dim()); }
  int batch() const { return int(offsets.size()) - 1; }
  int tokens() const { return int(offsets.back()); }
  int len(int b) const { return int(offsets[b + 1] - offsets[b]); }
};

template <class T>
ConvCase make_case(const gdn::HeadConfig& cfg, int width, const std::vector<int>& lens,
                   std::uint64_t seed, bool bias = true) {
  ConvCase cc;
  cc.cfg = cfg;
  cc.width = width;
  cc.offsets.assign(1, 0);
  for (int l : lens) cc.offsets.push_back(cc.offsets.back() + std::uint32_t(l));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> x(-1.0f, 1.0f), w(-0.6f, 0.6f), bi(-0.3f, 0.3f),
      dec(0.8f, 1.0f), bet(0.05f, 0.95f);
  const int C = cc.C();
  cc.x.resize(std::size_t(cc.tokens()) * C);
  for (auto& v : cc.x) v = to_f(from_f<T>(x(rng)));
  cc.weight.resize(std::size_t(C) * width);
  for (auto& v : cc.weight) v = w(rng);
  if (bias) {
    cc.bias.resize(C);
    for (auto& v : cc.bias) v = bi(rng);
  }
  cc.decay.resize(std::size_t(cc.tokens()) * cfg.num_value_heads);
  cc.beta.resize(cc.decay.size());
  for (auto& v : cc.decay) v = dec(rng);
  for (auto& v : cc.beta) v = bet(rng);
  return cc;
}

// Tokens first[b] .. first[b] + count[b] - 1 (indices into cc's tokens) as row b of a case
// of its own.
ConvCase sub_case(const ConvCase& cc, const std::vector<std::uint32_t>& first,
                  const std::vector<std::uint32_t>& count) {
  ConvCase r = cc;
  r.offsets.assign(1, 0);
  r.x.clear();
  r.decay.clear();
  r.beta.clear();
  const std::size_t C = cc.C(), H = cc.cfg.num_value_heads;
  for (std::size_t b = 0; b < first.size(); ++b) {
    for (std::size_t t = first[b]; t < std::size_t(first[b]) + count[b]; ++t) {
      r.x.insert(r.x.end(), cc.x.begin() + t * C, cc.x.begin() + (t + 1) * C);
      r.decay.insert(r.decay.end(), cc.decay.begin() + t * H, cc.decay.begin() + (t + 1) * H);
      r.beta.insert(r.beta.end(), cc.beta.begin() + t * H, cc.beta.begin() + (t + 1) * H);
    }
    r.offsets.push_back(r.offsets.back() + count[b]);
  }
  return r;
}

ConvCase prefix_case(const ConvCase& cc, const std::vector<std::uint32_t>& n) {
  std::vector<std::uint32_t> first(cc.batch()), take(cc.batch());
  for (int b = 0; b < cc.batch(); ++b) {
    first[b] = cc.offsets[b];
    take[b] = std::min<std::uint32_t>(n[b], std::uint32_t(cc.len(b)));
  }
  return sub_case(cc, first, take);
}

template <class T>
struct DevConv {
  Arr2<T> qkv;
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> weight;
  Kokkos::View<float*, Mem> bias;
  Index offsets;
  gdn::ConvInputs<Mem, T> in;
};

template <class T>
DevConv<T> upload_conv(const ConvCase& cc, Layout layout = Layout::Dense) {
  DevConv<T> d;
  const int C = cc.C();
  d.qkv = make_arr<T>(cc.tokens(), C, layout, cc.x.data());
  d.weight = Kokkos::View<float**, Kokkos::LayoutRight, Mem>("gdn_test::weight", C, cc.width);
  auto hw = Kokkos::create_mirror(d.weight);
  for (int c = 0; c < C; ++c)
    for (int j = 0; j < cc.width; ++j) hw(c, j) = cc.weight[std::size_t(c) * cc.width + j];
  Kokkos::deep_copy(d.weight, hw);
  d.bias = Kokkos::View<float*, Mem>("gdn_test::bias", cc.bias.size());
  auto hb = Kokkos::create_mirror(d.bias);
  for (std::size_t c = 0; c < cc.bias.size(); ++c) hb(c) = cc.bias[c];
  Kokkos::deep_copy(d.bias, hb);
  d.offsets = to_device(cc.offsets);
  d.in.qkv = d.qkv.view;
  d.in.weight = d.weight;
  d.in.bias = d.bias;
  d.in.row_offsets = d.offsets;
  return d;
}

template <class T>
ConvPool<T> make_conv_state(int slots, int C, int width, std::uint64_t seed) {
  ConvPool<T> s(Kokkos::view_alloc("gdn_test::conv_state", Kokkos::WithoutInitializing), slots, C,
                width - 1);
  auto h = Kokkos::create_mirror(s);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> x(-1.0f, 1.0f);
  for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = from_f<T>(x(rng));
  Kokkos::deep_copy(s, h);
  return s;
}

template <class T>
ConvPool<T> make_conv_ring(int rows, int ring_len, int cols) {
  ConvPool<T> r(Kokkos::view_alloc("gdn_test::conv_ring", Kokkos::WithoutInitializing), rows,
                ring_len, cols);
  auto h = Kokkos::create_mirror(r);
  for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = poison<T>();
  Kokkos::deep_copy(r, h);
  return r;
}

template <class T>
ConvPool<T> clone3(const ConvPool<T>& a) {
  ConvPool<T> b(Kokkos::view_alloc("gdn_test::clone", Kokkos::WithoutInitializing), a.extent(0),
                a.extent(1), a.extent(2));
  Kokkos::deep_copy(b, a);
  return b;
}

template <class T>
std::vector<float> floats3(const ConvPool<T>& v) {
  auto h = Kokkos::create_mirror(v);
  Kokkos::deep_copy(h, v);
  std::vector<float> r(h.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = to_f(h.data()[i]);
  return r;
}

// The recurrence's inputs after a conv call: its output `v` (the post-conv qkv,
// as float) and the case's gates, rows as in `offsets`.
struct PostConvInputs {
  Strided2D qkv, decay, beta;
  gdn::TokenInputs<Mem> in;
  PostConvInputs(const gdn::HeadConfig& cfg, const ConvCase& cc, const std::vector<float>& v,
                 const Index& offsets)
      : qkv(make_2d(cc.tokens(), std::size_t(cc.C()), Layout::Dense, v.data())),
        decay(make_2d(cc.tokens(), cfg.num_value_heads, Layout::Dense, cc.decay.data())),
        beta(make_2d(cc.tokens(), cfg.num_value_heads, Layout::Dense, cc.beta.data())) {
    in.qkv = qkv.view;
    in.decay = decay.view;
    in.beta = beta.view;
    in.row_offsets = offsets;
  }
};

// Distinct pool rows for B items out of `rows`, not the identity.
std::vector<std::uint32_t> spread_rows(int B, int rows, int mul, int add) {
  std::vector<std::uint32_t> r(B);
  std::vector<char> seen(rows, 0);
  for (int b = 0; b < B; ++b) {
    std::uint32_t s = std::uint32_t((b * mul + add) % rows);
    while (seen[s]) s = (s + 1) % rows;
    seen[s] = 1;
    r[b] = s;
  }
  return r;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

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
};

struct ConvBadCase {
  const char* name;
  const char* function;
  const char* argument;
  bool checking;
  std::function<void(ConvSetup&)> call;
};

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

TEST_P(ConvRejects, ThrowsNamesArgumentAndChangesNothing) {
  const ConvBadCase& c = GetParam();
  ConvSetup s;
  s.space.fence();
  const auto cs0 = bytes_of(s.cstate), cr0 = bytes_of(s.cring), st0 = bytes_of(s.state),
             out0 = bytes_of(s.out.buf);
  gdn::set_index_checking(c.checking);
  bool threw = false;
  try {
    c.call(s);
  } catch (const gdn::InvalidArgument& e) {
    threw = true;
    EXPECT_EQ(e.argument(), c.argument) << e.what();
    EXPECT_EQ(e.function(), c.function) << e.what();
  }
  gdn::set_index_checking(false);
  EXPECT_TRUE(threw) << c.name << " was not rejected";
  s.space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(s.cstate), cs0)) << "conv state changed";
  EXPECT_TRUE(same_bytes(bytes_of(s.cring), cr0)) << "conv ring changed";
  EXPECT_TRUE(same_bytes(bytes_of(s.state), st0)) << "state changed";
  EXPECT_TRUE(same_bytes(bytes_of(s.out.buf), out0)) << "out changed";
}

INSTANTIATE_TEST_SUITE_P(BadInput, ConvRejects, ::testing::ValuesIn(conv_cases()),
                         [](const ::testing::TestParamInfo<ConvBadCase>& i) {
                           return std::string(i.param.name);
                         });

// The valid setup passes with and without checking (so the cases above fail for their reason).
TEST(ConvChecking, ValidCallsPass) {
  for (bool on : {false, true}) {
    ConvSetup s;
    gdn::set_index_checking(on);
    EXPECT_NO_THROW(s.fwd());
    EXPECT_NO_THROW(s.verify());
    EXPECT_NO_THROW(s.fold());
    gdn::set_index_checking(false);
    s.space.fence();
  }
}

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
