// What the conv tests share (test_conv.cpp, test_conv_fold.cpp,
// test_conv_validation.cpp): one layer's conv problem on the host, its
// device copies, the conv pools and the recurrence's inputs after a conv call.
#ifndef GDN_TEST_CONV_SUPPORT_HPP
#define GDN_TEST_CONV_SUPPORT_HPP

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "reference/conv_reference.hpp"
#include "test_support.hpp"

#include <gdn/impl/core/fixed_math.hpp>

namespace gdn_test {

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
inline ConvCase sub_case(const ConvCase& cc, const std::vector<std::uint32_t>& first,
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

inline ConvCase prefix_case(const ConvCase& cc, const std::vector<std::uint32_t>& n) {
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
inline std::vector<std::uint32_t> spread_rows(int B, int rows, int mul, int add) {
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

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace gdn_test

#endif  // GDN_TEST_CONV_SUPPORT_HPP
