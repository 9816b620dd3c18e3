// gdn::Impl::FastDiv (the kernels' work-item decoding): n / d for every
// divisor the launchers can pass and numerators up to 2^31 - 1, on the host
// and on the execution space under test.
#include "test_support.hpp"

#include <gdn/impl/fast_div.hpp>

#include <random>
#include <vector>

namespace gdn_test {
namespace {

std::vector<std::uint32_t> divisors() {
  std::vector<std::uint32_t> d;
  for (std::uint32_t v = 1; v <= 600; ++v) d.push_back(v);
  for (std::uint32_t v : {1000u, 1023u, 1024u, 1025u, 4095u, 65535u, 65536u, 65537u, 999999u, 1u << 20,
                          (1u << 20) + 1, 0x7ffffffeu, 0x7fffffffu}) {
    d.push_back(v);
  }
  return d;
}

std::vector<std::uint32_t> numerators() {
  std::vector<std::uint32_t> n;
  for (std::uint32_t v = 0; v < 4096; ++v) n.push_back(v);
  for (std::uint32_t v : {0x7fffffffu, 0x7ffffffeu, 0x40000000u, 0x3fffffffu, 65535u, 65536u}) n.push_back(v);
  std::mt19937 rng(7);
  for (int i = 0; i < 4096; ++i) n.push_back(rng() & 0x7fffffffu);
  return n;
}

TEST(FastDiv, MatchesDivisionOnHost) {
  const auto ns = numerators();
  for (std::uint32_t d : divisors()) {
    const gdn::Impl::FastDiv f(d);
    for (std::uint32_t n : ns) {
      ASSERT_EQ(f.div(n), n / d) << "n=" << n << " d=" << d;
      // Numerators around multiples of d, where an off-by-one would show.
      const std::uint32_t q = n / d;
      for (std::uint64_t m : {std::uint64_t(q) * d, std::uint64_t(q) * d + d - 1, std::uint64_t(q + 1) * d}) {
        if (m > 0x7fffffffu) continue;
        ASSERT_EQ(f.div(std::uint32_t(m)), std::uint32_t(m) / d) << "n=" << m << " d=" << d;
      }
    }
  }
}

// Count the quotients the execution space under test gets wrong (a free
// function: CUDA device lambdas may not live in gtest's private TestBody).
long long device_mismatches(const gdn::Impl::FastDiv& f, std::uint32_t d, const Kokkos::View<std::uint32_t*, Mem>& n) {
  long long bad = 0;
  Kokkos::parallel_reduce(
      "fast_div_test", Kokkos::RangePolicy<ExecSpace>(0, n.extent(0)),
      KOKKOS_LAMBDA(const int i, long long& acc) { acc += f.div(n(i)) != n(i) / d ? 1 : 0; }, bad);
  return bad;
}

TEST(FastDiv, MatchesDivisionOnTheExecutionSpace) {
  const auto ns = numerators();
  Kokkos::View<std::uint32_t*, Mem> dn("n", ns.size());
  auto h = Kokkos::create_mirror_view(dn);
  for (std::size_t i = 0; i < ns.size(); ++i) h(i) = ns[i];
  Kokkos::deep_copy(dn, h);
  for (std::uint32_t d : divisors()) {
    ASSERT_EQ(device_mismatches(gdn::Impl::FastDiv(d), d, dn), 0) << "d=" << d;
  }
}

}  // namespace
}  // namespace gdn_test
