// The library's own exp and log1p (gdn/impl/core/fixed_math.hpp): within 1 ulp of
// float64 over a sweep of the whole float range, the special values, and the
// same bits on the execution space under test as on the host. FastDiv
// (gdn/impl/core/fast_div.hpp) against the division operator.
#include "test_support.hpp"

#include <gdn/impl/core/fast_div.hpp>
#include <gdn/impl/core/fixed_math.hpp>
#include <gdn/impl/core/token_io.hpp>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

namespace gdn_test {
namespace {

using gdn::Impl::exp_fixed;
using gdn::Impl::log1p_fixed;

float from_bits(std::uint32_t u) { return gdn::Impl::bits_to_float(u); }
std::uint32_t to_bits(float f) { return gdn::Impl::float_to_bits(f); }

constexpr float kInf = std::numeric_limits<float>::infinity();

// Every 997th float bit pattern (both signs, NaNs and infinities included),
// plus every float within 2^12 patterns of the points where the methods
// change: exp's overflow and underflow limits, the smallest normal result,
// 0; log1p's -1, the edges of the unreduced interval, the end of the
// rounding correction (1 + x >= 2^24 sqrt(2)), 0.
std::vector<std::uint32_t> sweep_inputs() {
  std::vector<std::uint32_t> in;
  for (std::uint64_t b = 0; b < (std::uint64_t(1) << 32); b += 997) in.push_back(std::uint32_t(b));
  const float edges[] = {0x1.62e42ep+6f, -104.0f,         -0x1.9fe368p+6f, -0x1.5d58a0p+6f, 0.0f,
                         -1.0f,          -0x1.2bec34p-2f, 0x1.a8279ap-2f,  0x1.6a09e6p+24f, 2.0f};
  for (float e : edges)
    for (std::uint32_t sign : {0u, 0x80000000u}) {
      const std::uint32_t c = (to_bits(e) & 0x7fffffffu) | sign;
      for (std::uint32_t d = 0; d < 4096; ++d) {
        in.push_back(c + d);
        if (c - d <= c) in.push_back(c - d);
      }
    }
  return in;
}

// |got - want| in units of the last place of float at want's magnitude
// (subnormal spacing below 2^-126); 0 where both are the same infinity or
// NaN, infinite where only one is.
double ulp_error(float got, double want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : kInf;
  const double max_finite = 0x1.ffffffp+127;  // beyond it float rounds to infinity
  if (std::abs(want) >= max_finite) return std::isinf(got) && (got > 0) == (want > 0) ? 0 : kInf;
  if (std::isinf(got)) return kInf;
  int e = 0;
  std::frexp(want, &e);
  const double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::abs(double(got) - want) / ulp;
}

// Every divisor up to 1000 and a few large ones, against n near 0, near
// multiples of the divisor, and spread up to 2^31 - 1.
TEST(FastDiv, MatchesTheDivisionOperator) {
  std::vector<std::uint32_t> divisors;
  for (std::uint32_t d = 1; d <= 1000; ++d) divisors.push_back(d);
  for (std::uint32_t d : {65535u, 65536u, 65537u, 1000003u, (1u << 30) + 1u, (1u << 31) - 1u})
    divisors.push_back(d);
  long checked = 0;
  for (const std::uint32_t d : divisors) {
    const gdn::Impl::FastDiv f(d);
    std::vector<std::uint32_t> ns = {0u, 1u, d - 1u, d, d + 1u, (1u << 31) - 1u, (1u << 31) - d};
    for (std::uint32_t k = 1; k < 2000; k += 7) {
      const std::uint64_t m = std::uint64_t(k) * d;
      if (m < (1u << 31)) ns.insert(ns.end(), {std::uint32_t(m - 1), std::uint32_t(m)});
    }
    for (std::uint32_t n = 12345u; n < (1u << 31) - 40000000u; n += 39999989u) ns.push_back(n);
    for (const std::uint32_t n : ns) {
      if (n >= (1u << 31)) continue;
      ASSERT_EQ(f.div(n), n / d) << "n " << n << " d " << d;
      ASSERT_EQ(f.mod(n), n % d) << "n " << n << " d " << d;
      ++checked;
    }
  }
  EXPECT_GT(checked, 100000);
}

TEST(FixedMath, ExpWithinOneUlpOfFloat64) {
  double worst = 0;
  std::uint32_t worst_in = 0;
  for (std::uint32_t u : sweep_inputs()) {
    const float x = from_bits(u);
    const double err = ulp_error(exp_fixed(x), std::exp(double(x)));
    if (err > worst) worst = err, worst_in = u;
  }
  std::cout << "exp_fixed: max error " << worst << " ulp (input bits 0x" << std::hex << worst_in
            << std::dec << ")\n";
  ::testing::Test::RecordProperty("exp_max_ulp", std::to_string(worst));
  EXPECT_LT(worst, 1.0);
}

TEST(FixedMath, Log1pWithinOneUlpOfFloat64) {
  double worst = 0;
  std::uint32_t worst_in = 0;
  for (std::uint32_t u : sweep_inputs()) {
    const float x = from_bits(u);
    if (!(x >= -1.0f)) continue;  // NaN and below -1: the special values below
    const double err = ulp_error(log1p_fixed(x), std::log1p(double(x)));
    if (err > worst) worst = err, worst_in = u;
  }
  std::cout << "log1p_fixed: max error " << worst << " ulp (input bits 0x" << std::hex << worst_in
            << std::dec << ")\n";
  ::testing::Test::RecordProperty("log1p_max_ulp", std::to_string(worst));
  EXPECT_LT(worst, 1.0);
}

TEST(FixedMath, SpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(exp_fixed(0.0f), 1.0f);
  EXPECT_EQ(exp_fixed(-0.0f), 1.0f);
  EXPECT_EQ(exp_fixed(kInf), kInf);
  EXPECT_EQ(exp_fixed(-kInf), 0.0f);
  EXPECT_TRUE(std::isnan(exp_fixed(nan)));
  EXPECT_EQ(exp_fixed(0x1.62e42ep+6f), 0x1.ffff08p+127f);  // the largest finite result
  EXPECT_EQ(exp_fixed(0x1.62e430p+6f), kInf);              // the next float overflows
  EXPECT_EQ(exp_fixed(1000.0f), kInf);
  EXPECT_EQ(exp_fixed(-0x1.9fe368p+6f), tiny);  // just above 2^-150: rounds up to 2^-149
  EXPECT_EQ(exp_fixed(-0x1.9fe36ap+6f), 0.0f);  // the next float: just below 2^-150
  EXPECT_EQ(exp_fixed(-104.0f), 0.0f);
  EXPECT_EQ(exp_fixed(-1000.0f), 0.0f);
  EXPECT_EQ(exp_fixed(1e-30f), 1.0f);
  EXPECT_EQ(std::fpclassify(exp_fixed(-100.0f)), FP_SUBNORMAL);

  EXPECT_EQ(to_bits(log1p_fixed(0.0f)), to_bits(0.0f));
  EXPECT_EQ(to_bits(log1p_fixed(-0.0f)), to_bits(-0.0f));
  EXPECT_EQ(log1p_fixed(-1.0f), -kInf);
  EXPECT_TRUE(std::isnan(log1p_fixed(-1.5f)));
  EXPECT_TRUE(std::isnan(log1p_fixed(-kInf)));
  EXPECT_TRUE(std::isnan(log1p_fixed(nan)));
  EXPECT_EQ(log1p_fixed(kInf), kInf);
  EXPECT_EQ(log1p_fixed(tiny), tiny);
  EXPECT_EQ(log1p_fixed(-0x1p-25f), -0x1p-25f);
  EXPECT_EQ(log1p_fixed(0x1.fffffep-25f), 0x1.fffffep-25f);
  EXPECT_GT(log1p_fixed(std::numeric_limits<float>::max()), 88.72f);
}

// exp, log1p and the raw gates' decay and beta on the execution space under
// test (a free function: CUDA device lambdas may not live in gtest's private
// TestBody), as bit patterns.
void evaluate_on_device(const Kokkos::View<std::uint32_t*, Mem>& in,
                        const Kokkos::View<std::uint32_t* [4], Mem>& out) {
  Kokkos::parallel_for(
      "fixed_math_test", Kokkos::RangePolicy<ExecSpace>(0, in.extent(0)),
      KOKKOS_LAMBDA(const int i) {
        const float x = gdn::Impl::bits_to_float(in(i));
        out(i, 0) = gdn::Impl::float_to_bits(gdn::Impl::exp_fixed(x));
        out(i, 1) = gdn::Impl::float_to_bits(gdn::Impl::log1p_fixed(x));
        out(i, 2) = gdn::Impl::float_to_bits(gdn::Impl::gate_decay(x, 0.5f, 0.25f));
        out(i, 3) = gdn::Impl::float_to_bits(gdn::Impl::gate_beta(x));
      });
}

// The functions compiled for the execution space under test give the host's
// bits for every input of the sweep (on CUDA: nvcc's device code against the
// host compiler's).
TEST(FixedMath, DeviceGivesTheHostBits) {
  const auto in = sweep_inputs();
  const int n = int(in.size());
  Kokkos::View<std::uint32_t*, Mem> d_in("in", n);
  Kokkos::View<std::uint32_t* [4], Mem> d_out("out", n);
  {
    auto h = Kokkos::create_mirror_view(d_in);
    for (int i = 0; i < n; ++i) h(i) = in[i];
    Kokkos::deep_copy(d_in, h);
  }
  evaluate_on_device(d_in, d_out);
  auto h = Kokkos::create_mirror_view(d_out);
  Kokkos::deep_copy(h, d_out);
  // A NaN that went through arithmetic has the platform's payload (CUDA's is
  // canonical): for the gates, NaN against NaN is a match.
  const auto same = [](std::uint32_t a, float b) {
    return a == to_bits(b) || (std::isnan(from_bits(a)) && std::isnan(b));
  };
  int bad[4] = {0, 0, 0, 0};
  for (int i = 0; i < n; ++i) {
    const float x = from_bits(in[i]);
    bad[0] += h(i, 0) != to_bits(exp_fixed(x));
    bad[1] += h(i, 1) != to_bits(log1p_fixed(x));
    bad[2] += !same(h(i, 2), gdn::Impl::gate_decay(x, 0.5f, 0.25f));
    bad[3] += !same(h(i, 3), gdn::Impl::gate_beta(x));
  }
  EXPECT_EQ(bad[0], 0) << "exp_fixed";
  EXPECT_EQ(bad[1], 0) << "log1p_fixed";
  EXPECT_EQ(bad[2], 0) << "gate_decay";
  EXPECT_EQ(bad[3], 0) << "gate_beta";
}

}  // namespace
}  // namespace gdn_test
