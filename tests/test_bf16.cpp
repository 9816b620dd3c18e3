// gdn::bf16: exact widening, round-to-nearest-even narrowing, same bits on host and device.
#include "test_support.hpp"

#include <gdn/impl/backend/backend.hpp>

#include <cmath>
#include <limits>

namespace gdn_test {
namespace {

std::uint16_t bf16_bits(float f) { return gdn::bf16(f).bits; }
float from_bits32(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Bf16, WideningIsExact) {
  for (std::uint32_t b = 0; b < 0x10000u; ++b) {
    const gdn::bf16 x = gdn::bf16::from_bits(std::uint16_t(b));
    const float f = static_cast<float>(x);
    std::uint32_t u;
    std::memcpy(&u, &f, 4);
    ASSERT_EQ(u, b << 16);
    if (!std::isnan(f)) {
      ASSERT_EQ(gdn::bf16(f).bits, b) << "narrowing a bf16 value must give it back";
    }
  }
}

TEST(Bf16, TiesGoToEven) {
  // 1 + 2^-8 lies halfway between 1 (even mantissa) and 1 + 2^-7.
  EXPECT_EQ(bf16_bits(from_bits32(0x3f808000u)), 0x3f80u);
  // 1 + 3*2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  EXPECT_EQ(bf16_bits(from_bits32(0x3f818000u)), 0x3f82u);
  // Just above a tie rounds up, just below rounds down.
  EXPECT_EQ(bf16_bits(from_bits32(0x3f808001u)), 0x3f81u);
  EXPECT_EQ(bf16_bits(from_bits32(0x3f807fffu)), 0x3f80u);
  // Negative values mirror positive ones.
  EXPECT_EQ(bf16_bits(from_bits32(0xbf808000u)), 0xbf80u);
}

TEST(Bf16, SpecialValues) {
  EXPECT_EQ(bf16_bits(0.0f), 0x0000u);
  EXPECT_EQ(bf16_bits(-0.0f), 0x8000u);
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::infinity()), 0x7f80u);
  EXPECT_EQ(bf16_bits(-std::numeric_limits<float>::infinity()), 0xff80u);
  EXPECT_EQ(bf16_bits(std::numeric_limits<float>::max()), 0x7f80u);  // rounds up to infinity
  const gdn::bf16 n(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(static_cast<float>(n)));
  // A signalling NaN whose payload sits only in the low bits must stay NaN.
  EXPECT_TRUE(std::isnan(static_cast<float>(gdn::bf16(from_bits32(0x7f800001u)))));
  // Subnormals round in the same way (bf16 shares float's exponent range).
  EXPECT_EQ(bf16_bits(from_bits32(0x00008000u)), 0x0000u);  // tie to even (0)
  EXPECT_EQ(bf16_bits(from_bits32(0x00018000u)), 0x0002u);  // tie to even (2)
}

TEST(Bf16, MatchesIndependentReferenceOnRandomFloats) {
  std::mt19937_64 rng(5);
  int checked = 0;
  for (int i = 0; i < 2000000; ++i) {
    const std::uint32_t u = std::uint32_t(rng());
    const float f = from_bits32(u);
    if (!std::isfinite(f) || std::fpclassify(f) == FP_SUBNORMAL) continue;
    const double want = gdn_ref::round_to_bf16(double(f));
    const float got = static_cast<float>(gdn::bf16(f));
    if (std::isinf(got)) {
      ASSERT_GE(std::abs(want), 3.3895313892515355e38) << "only overflow may round to infinity";
      continue;
    }
    ASSERT_EQ(double(got), want) << "input bits 0x" << std::hex << u;
    ++checked;
  }
  EXPECT_GT(checked, 1000000);
}

// Narrow on the execution space under test (a free function: CUDA device
// lambdas may not live in gtest's private TestBody).
void narrow_on_device(const Kokkos::View<std::uint32_t*, Mem>& in,
                      const Kokkos::View<std::uint16_t*, Mem>& out) {
  Kokkos::parallel_for(
      "bf16_test", Kokkos::RangePolicy<ExecSpace>(0, in.extent(0)),
      KOKKOS_LAMBDA(const int i) { out(i) = gdn::bf16(gdn::Impl::bits_to_float(in(i))).bits; });
}

// The kernels' vector store (store_vec: on CUDA a hardware conversion for
// non-NaN pairs) on the execution space under test.
void narrow_on_device_vec(const Kokkos::View<std::uint32_t*, Mem>& in,
                          const Kokkos::View<gdn::bf16*, Mem>& out) {
  Kokkos::parallel_for(
      "bf16_test_vec", Kokkos::RangePolicy<ExecSpace>(0, in.extent(0) / 8),
      KOKKOS_LAMBDA(const int i) {
        float f[8];
        for (int e = 0; e < 8; ++e) f[e] = gdn::Impl::bits_to_float(in(8 * i + e));
        gdn::Impl::store_frag<8>(out.data() + 8 * i, f);
        float g[4];
        for (int e = 0; e < 4; ++e) g[e] = f[e];
        gdn::Impl::store_frag<4>(out.data() + 8 * i,
                                 g);  // the 4-wide path (same values, same bits)
      });
}

// 2^16 random float bit patterns (seed `seed`), the first ones replaced by
// `special`; the host vector and its copy on the execution space under test.
std::vector<std::uint32_t> random_bits(unsigned seed, const std::vector<std::uint32_t>& special,
                                       Kokkos::View<std::uint32_t*, Mem>& d_in) {
  const int n = 1 << 16;
  std::vector<std::uint32_t> in(n);
  std::mt19937 rng(seed);
  for (auto& v : in) v = rng();
  for (std::size_t i = 0; i < special.size(); ++i) in[i] = special[i];
  d_in = Kokkos::View<std::uint32_t*, Mem>("in", n);
  auto h = Kokkos::create_mirror(d_in);
  for (int i = 0; i < n; ++i) h(i) = in[i];
  Kokkos::deep_copy(d_in, h);
  return in;
}

// The conversion compiled for the execution space under test gives the host's bits.
TEST(Bf16, DeviceConversionMatchesHost) {
  Kokkos::View<std::uint32_t*, Mem> d_in;
  const auto in = random_bits(3, {0x3f808000u, 0x3f818000u, 0x7fc00001u}, d_in);
  const int n = static_cast<int>(in.size());
  Kokkos::View<std::uint16_t*, Mem> d_out("out", n);
  narrow_on_device(d_in, d_out);
  auto h = Kokkos::create_mirror(d_out);
  Kokkos::deep_copy(h, d_out);
  for (int i = 0; i < n; ++i) ASSERT_EQ(h(i), gdn::bf16(from_bits32(in[i])).bits) << "index " << i;
}

// The same for the vector stores the kernels write a bf16 state with: random
// bit patterns (NaNs with payloads, subnormals, infinities among them) plus
// ties, the largest finite values and values that round to infinity. Every
// non-NaN value gives the host's bits; a NaN stays a NaN.
TEST(Bf16, VectorStoreMatchesHost) {
  Kokkos::View<std::uint32_t*, Mem> d_in;
  const auto in =
      random_bits(5,
                  {0x3f808000u, 0x3f818000u, 0x7fc00001u, 0xff800001u, 0x7f7fffffu, 0x7f7f8000u,
                   0x7f7f7fffu, 0x00008000u, 0x80018000u, 0x7f800000u, 0xff800000u, 0x00000000u,
                   0x80000000u, 0x0001ffffu, 0x3f7fffffu, 0x7fbfffffu},
                  d_in);
  const int n = static_cast<int>(in.size());
  Kokkos::View<gdn::bf16*, Mem> d_out("out", n);
  narrow_on_device_vec(d_in, d_out);
  auto h = Kokkos::create_mirror(d_out);
  Kokkos::deep_copy(h, d_out);
  for (int i = 0; i < n; ++i) {
    const float f = from_bits32(in[i]);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(static_cast<float>(h(i)))) << "index " << i;
    } else {
      ASSERT_EQ(h(i).bits, gdn::bf16(f).bits) << "index " << i;
    }
  }
}

}  // namespace
}  // namespace gdn_test
