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
  for (std::uint32_t v : {1000u, 1023u, 1024u, 1025u, 4095u, 65535u, 65536u, 65537u, 999999u,
                          1u << 20, (1u << 20) + 1, 0x7ffffffeu, 0x7fffffffu}) {
    d.push_back(v);
  }
  return d;
}

std::vector<std::uint32_t> numerators() {
  std::vector<std::uint32_t> n;
  for (std::uint32_t v = 0; v < 4096; ++v) n.push_back(v);
  for (std::uint32_t v : {0x7fffffffu, 0x7ffffffeu, 0x40000000u, 0x3fffffffu, 65535u, 65536u})
    n.push_back(v);
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
      for (std::uint64_t m :
           {std::uint64_t(q) * d, std::uint64_t(q) * d + d - 1, std::uint64_t(q + 1) * d}) {
        if (m > 0x7fffffffu) continue;
        ASSERT_EQ(f.div(std::uint32_t(m)), std::uint32_t(m) / d) << "n=" << m << " d=" << d;
      }
    }
  }
}

// The quotients of n(i) / d on the execution space under test (a free
// function: CUDA device lambdas may not live in gtest's private TestBody; a
// parallel_for, not a reduction, so that compute-sanitizer racecheck sees
// only this test's own accesses).
void divide_on_device(const gdn::Impl::FastDiv& f, const Kokkos::View<std::uint32_t*, Mem>& n,
                      const Kokkos::View<std::uint32_t*, Mem>& q) {
  Kokkos::parallel_for(
      "fast_div_test", Kokkos::RangePolicy<ExecSpace>(0, n.extent(0)),
      KOKKOS_LAMBDA(const int i) { q(i) = f.div(n(i)); });
}

TEST(FastDiv, MatchesDivisionOnTheExecutionSpace) {
  const auto ns = numerators();
  Kokkos::View<std::uint32_t*, Mem> dn("n", ns.size());
  Kokkos::View<std::uint32_t*, Mem> dq("q", ns.size());
  auto h = Kokkos::create_mirror_view(dn);
  for (std::size_t i = 0; i < ns.size(); ++i) h(i) = ns[i];
  Kokkos::deep_copy(dn, h);
  auto hq = Kokkos::create_mirror_view(dq);
  for (std::uint32_t d : divisors()) {
    divide_on_device(gdn::Impl::FastDiv(d), dn, dq);
    Kokkos::deep_copy(hq, dq);
    for (std::size_t i = 0; i < ns.size(); ++i)
      ASSERT_EQ(hq(i), ns[i] / d) << "n=" << ns[i] << " d=" << d;
  }
}

}  // namespace
}  // namespace gdn_test
