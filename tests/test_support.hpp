#ifndef GDN_TESTS_SUPPORT_HPP
#define GDN_TESTS_SUPPORT_HPP

// Shared helpers of the gdn test suite. The suite is compiled once per
// backend; GDN_TEST_EXEC_SPACE names the execution space under test.

#include <gdn/gdn.hpp>

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "reference/reference.hpp"

#ifndef GDN_TEST_EXEC_SPACE
#define GDN_TEST_EXEC_SPACE Kokkos::DefaultExecutionSpace
#endif

namespace gdn_test {

using ExecSpace = GDN_TEST_EXEC_SPACE;
using Mem = ExecSpace::memory_space;
template <class T>
using Pool = Kokkos::View<T****, Kokkos::LayoutRight, Mem>;  // state [slots, nv, Dk, Dv] or ring
using Index = Kokkos::View<std::uint32_t*, Mem>;             // [B]
using Table = Kokkos::View<std::uint32_t**, Mem>;            // [L, B]

constexpr std::uint32_t kPoisonF32 = 0x7fa5a5a5u;  // a NaN nobody computes
constexpr std::uint16_t kPoisonBf16 = 0x7fa5u;

inline gdn::HeadConfig heads(int nk, int nv, int d) { return gdn::HeadConfig{nk, nv, d, d}; }

// ---------------------------------------------------------------------------
// A ragged batch of random per-token inputs, kept on the host (dense).
struct Problem {
  gdn::HeadConfig cfg{};
  std::vector<std::uint32_t> offsets;  // [B+1]
  gdn_ref::Tokens host;                // qkv [tokens][conv_dim], decay/beta [tokens][nv]
  int batch() const { return int(offsets.size()) - 1; }
  int tokens() const { return int(offsets.back()); }
  int len(int b) const { return int(offsets[b + 1] - offsets[b]); }
  gdn_ref::Geometry geo() const {
    return {cfg.num_key_heads, cfg.num_value_heads, cfg.key_head_dim, cfg.value_head_dim};
  }
};

inline Problem make_problem(const gdn::HeadConfig& cfg, const std::vector<int>& lens,
                            std::uint64_t seed) {
  Problem p;
  p.cfg = cfg;
  p.offsets.assign(1, 0);
  for (int l : lens) p.offsets.push_back(p.offsets.back() + std::uint32_t(l));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> x(-1.0f, 1.0f), dec(0.80f, 1.0f), bet(0.05f, 0.95f);
  const int T = p.tokens();
  p.host.qkv.resize(std::size_t(T) * cfg.conv_dim());
  for (auto& v : p.host.qkv) v = x(rng);
  p.host.decay.resize(std::size_t(T) * cfg.num_value_heads);
  p.host.beta.resize(p.host.decay.size());
  for (auto& v : p.host.decay) v = dec(rng);
  for (auto& v : p.host.beta) v = bet(rng);
  return p;
}

// Tokens first[b] .. first[b] + count[b] - 1 (indices into p's tokens) of
// every row b of p, as a problem of its own.
inline Problem sub_problem(const Problem& p, const std::vector<std::uint32_t>& first,
                           const std::vector<std::uint32_t>& count) {
  Problem r;
  r.cfg = p.cfg;
  r.offsets.assign(1, 0);
  const std::size_t C = p.cfg.conv_dim(), H = p.cfg.num_value_heads;
  for (int b = 0; b < p.batch(); ++b) {
    for (std::size_t t = first[b]; t < std::size_t(first[b]) + count[b]; ++t) {
      r.host.qkv.insert(r.host.qkv.end(), p.host.qkv.begin() + t * C,
                        p.host.qkv.begin() + (t + 1) * C);
      r.host.decay.insert(r.host.decay.end(), p.host.decay.begin() + t * H,
                          p.host.decay.begin() + (t + 1) * H);
      r.host.beta.insert(r.host.beta.end(), p.host.beta.begin() + t * H,
                         p.host.beta.begin() + (t + 1) * H);
    }
    r.offsets.push_back(r.offsets.back() + count[b]);
  }
  return r;
}

// The first n[b] tokens of every row of p, as a problem of its own.
inline Problem prefix_problem(const Problem& p, const std::vector<std::uint32_t>& n) {
  std::vector<std::uint32_t> first(p.batch()), take(p.batch());
  for (int b = 0; b < p.batch(); ++b) {
    first[b] = p.offsets[b];
    take[b] = std::min<std::uint32_t>(n[b], std::uint32_t(p.len(b)));
  }
  return sub_problem(p, first, take);
}

// ---------------------------------------------------------------------------
// Strided 2-D device arrays.
enum class Layout { Dense, Padded, Transposed, Strided };
inline const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Dense:
      return "dense";
    case Layout::Padded:
      return "padded";
    case Layout::Transposed:
      return "transposed";
    default:
      return "strided";
  }
}

struct Strided2D {
  Kokkos::View<float*, Mem> buf;                          // backing storage
  Kokkos::View<float**, Kokkos::LayoutStride, Mem> view;  // [rows, cols]
  std::size_t rows = 0, cols = 0, s0 = 0, s1 = 0;
};

inline Strided2D make_2d(std::size_t rows, std::size_t cols, Layout layout, const float* dense,
                         std::uint32_t fill_bits = kPoisonF32) {
  Strided2D a;
  a.rows = rows;
  a.cols = cols;
  switch (layout) {
    case Layout::Dense:
      a.s0 = cols;
      a.s1 = 1;
      break;
    case Layout::Padded:
      a.s0 = cols + 5;
      a.s1 = 1;
      break;
    case Layout::Transposed:
      a.s0 = 1;
      a.s1 = rows > 0 ? rows : 1;
      break;
    case Layout::Strided:
      a.s0 = 2 * cols + 3;
      a.s1 = 2;
      break;
  }
  const std::size_t n = (rows && cols) ? (rows - 1) * a.s0 + (cols - 1) * a.s1 + 1 : 1;
  a.buf = Kokkos::View<float*, Mem>(
      Kokkos::view_alloc("gdn_test::buf", Kokkos::WithoutInitializing), n);
  auto h = Kokkos::create_mirror(a.buf);
  float fill;
  std::memcpy(&fill, &fill_bits, 4);
  for (std::size_t i = 0; i < n; ++i) h(i) = fill;
  if (dense)
    for (std::size_t r = 0; r < rows; ++r)
      for (std::size_t c = 0; c < cols; ++c) h(r * a.s0 + c * a.s1) = dense[r * cols + c];
  Kokkos::deep_copy(a.buf, h);
  a.view = Kokkos::View<float**, Kokkos::LayoutStride, Mem>(
      a.buf.data(), Kokkos::LayoutStride(rows, a.s0, cols, a.s1));
  return a;
}

inline std::vector<float> read_2d(const Strided2D& a) {  // dense [rows][cols]
  auto h = Kokkos::create_mirror(a.buf);
  Kokkos::deep_copy(h, a.buf);
  std::vector<float> r(a.rows * a.cols);
  for (std::size_t i = 0; i < a.rows; ++i)
    for (std::size_t c = 0; c < a.cols; ++c) r[i * a.cols + c] = h(i * a.s0 + c * a.s1);
  return r;
}

struct DeviceInputs {
  Strided2D qkv, decay, beta;
  Index offsets;
  gdn::TokenInputs<Mem> in;
};

inline Index to_device(const std::vector<std::uint32_t>& v) {
  Index d("gdn_test::index", v.size());
  auto h = Kokkos::create_mirror(d);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(d, h);
  return d;
}

inline Table to_device(std::size_t rows, std::size_t cols, const std::vector<std::uint32_t>& v) {
  Table d("gdn_test::table", rows, cols);
  auto h = Kokkos::create_mirror(d);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) h(i, j) = v[i * cols + j];
  Kokkos::deep_copy(d, h);
  return d;
}

inline DeviceInputs upload(const Problem& p, Layout layout = Layout::Dense) {
  DeviceInputs d;
  const std::size_t T = p.tokens();
  d.qkv = make_2d(T, p.cfg.conv_dim(), layout, p.host.qkv.data());
  d.decay = make_2d(T, p.cfg.num_value_heads, layout, p.host.decay.data());
  d.beta = make_2d(T, p.cfg.num_value_heads, layout, p.host.beta.data());
  d.offsets = to_device(p.offsets);
  d.in.qkv = d.qkv.view;
  d.in.decay = d.decay.view;
  d.in.beta = d.beta.view;
  d.in.row_offsets = d.offsets;
  return d;
}

inline Strided2D make_out(const Problem& p, Layout layout = Layout::Dense) {
  return make_2d(p.tokens(), p.cfg.value_dim(), layout, nullptr);
}

// ---------------------------------------------------------------------------
// Pools.
template <class T>
inline T storage_from_float(float x);
template <>
inline float storage_from_float<float>(float x) {
  return x;
}
template <>
inline gdn::bf16 storage_from_float<gdn::bf16>(float x) {
  return gdn::bf16(x);
}

template <class T>
Pool<T> make_state(int slots, const gdn::HeadConfig& cfg, std::uint64_t seed) {
  Pool<T> s(Kokkos::view_alloc("gdn_test::state", Kokkos::WithoutInitializing), slots,
            cfg.num_value_heads, cfg.key_head_dim, cfg.value_head_dim);
  auto h = Kokkos::create_mirror(s);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> x(-0.5f, 0.5f);
  T* p = h.data();
  for (std::size_t i = 0; i < h.size(); ++i) p[i] = storage_from_float<T>(x(rng));
  Kokkos::deep_copy(s, h);
  return s;
}

template <class T>
Pool<T> make_ring(int rows, const gdn::HeadConfig& cfg, int ring_len, int stride) {
  Pool<T> r(Kokkos::view_alloc("gdn_test::ring", Kokkos::WithoutInitializing), rows,
            cfg.num_key_heads, ring_len, stride);
  auto h = Kokkos::create_mirror(r);
  unsigned char* p = reinterpret_cast<unsigned char*>(h.data());
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (sizeof(T) == 4)
      std::memcpy(p + 4 * i, &kPoisonF32, 4);
    else
      std::memcpy(p + 2 * i, &kPoisonBf16, 2);
  }
  Kokkos::deep_copy(r, h);
  return r;
}

template <class T>
Pool<T> clone(const Pool<T>& a) {
  Pool<T> b(Kokkos::view_alloc("gdn_test::clone", Kokkos::WithoutInitializing), a.extent(0),
            a.extent(1), a.extent(2), a.extent(3));
  Kokkos::deep_copy(b, a);
  return b;
}

// The raw bytes of a view (host copy).
template <class V>
std::vector<unsigned char> bytes_of(const V& v) {
  auto h = Kokkos::create_mirror(v);
  Kokkos::deep_copy(h, v);
  std::vector<unsigned char> r(h.span() * sizeof(typename V::value_type));
  if (!r.empty()) std::memcpy(r.data(), h.data(), r.size());
  return r;
}

template <class T>
inline T storage_ring(float x) {
  return storage_from_float<T>(x);
}

inline float to_f(float x) { return x; }
inline float to_f(gdn::bf16 x) { return static_cast<float>(x); }

// Pool contents as floats, [slots][nv][Dk][Dv] flattened.
template <class T>
std::vector<float> floats_of(const Pool<T>& v) {
  auto h = Kokkos::create_mirror(v);
  Kokkos::deep_copy(h, v);
  std::vector<float> r(h.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = to_f(h.data()[i]);
  return r;
}

// Bitwise equality with the first difference reported.
inline ::testing::AssertionResult same_bytes(const std::vector<unsigned char>& a,
                                             const std::vector<unsigned char>& b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes differ: " << a.size() << " vs " << b.size();
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      return ::testing::AssertionFailure() << "first differing byte at " << i << " of " << a.size();
  return ::testing::AssertionSuccess();
}

inline ::testing::AssertionResult same_bits(const std::vector<float>& a,
                                            const std::vector<float>& b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes differ: " << a.size() << " vs " << b.size();
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], 4) != 0)
      return ::testing::AssertionFailure()
             << "element " << i << " differs: " << a[i] << " vs " << b[i];
  return ::testing::AssertionSuccess();
}

// Run the float64 reference for every row of p from the given pool contents
// (floats, [slots][nv][Dk][Dv]) with rows slot[b]; returns outputs [tokens][value_dim]
// and updates `pool` in place.
inline std::vector<double> reference_run(const Problem& p, const std::vector<std::uint32_t>& slots,
                                         std::vector<double>& pool) {
  const auto g = p.geo();
  const std::size_t head = std::size_t(g.nv) * g.dk * g.dv;
  std::vector<double> out(std::size_t(p.tokens()) * g.value_dim(), 0.0);
  for (int b = 0; b < p.batch(); ++b) {
    if (p.len(b) == 0) continue;
    std::vector<double> s(pool.begin() + slots[b] * head, pool.begin() + (slots[b] + 1) * head);
    gdn_ref::forward(g, p.host, int(p.offsets[b]), int(p.offsets[b + 1]), s, out);
    std::copy(s.begin(), s.end(), pool.begin() + slots[b] * head);
  }
  return out;
}

// max |a - b| / max |b|
inline double rel_err(const std::vector<float>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    num = std::max(num, std::abs(double(a[i]) - b[i]));
    den = std::max(den, std::abs(b[i]));
  }
  return den > 0 ? num / den : num;
}

inline std::vector<std::uint32_t> iota_u32(int n, std::uint32_t start = 0, std::uint32_t step = 1) {
  std::vector<std::uint32_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = start + std::uint32_t(i) * step;
  return v;
}

}  // namespace gdn_test

#endif
