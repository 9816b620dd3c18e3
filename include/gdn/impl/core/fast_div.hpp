#ifndef GDN_IMPL_CORE_FAST_DIV_HPP
#define GDN_IMPL_CORE_FAST_DIV_HPP

/// \file fast_div.hpp
/// \brief Unsigned division by a divisor fixed at launch, without a divide.
///
/// The token kernel decodes a work item's sequence and head with divisions
/// by run-time values (the number of value heads, the group size). A 32-bit
/// division is a sequence of about 20 instructions on a GPU; `FastDiv`
/// precomputes, on the host, a multiplier `m` and a shift `s` so that
/// `n / d == (mulhi(n, m) + n) >> s` for every `n < 2^31` (the "round-up"
/// method of Granlund and Montgomery, 1994: `s = ceil(log2 d)`,
/// `m = floor(2^32 (2^s - d) / d) + 1`; the sum cannot overflow because
/// `mulhi(n, m) <= n < 2^31`).

#include <gdn/impl/backend/backend.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace gdn {
namespace Impl {

struct FastDiv {
  std::uint32_t mul = 1;  // m (d = 1: mulhi(n, 1) = 0, so the quotient is n)
  std::uint32_t shift = 0;
  std::uint32_t divisor = 1;

  FastDiv() = default;
  /// `d` >= 1 and < 2^31.
  explicit FastDiv(std::uint32_t d) : divisor(d) {
    while ((std::uint64_t(1) << shift) < d) ++shift;
    mul = static_cast<std::uint32_t>(
        ((std::uint64_t(1) << 32) * ((std::uint64_t(1) << shift) - d)) / d + 1);
  }

  /// n / divisor, for n < 2^31.
  KOKKOS_FORCEINLINE_FUNCTION std::uint32_t div(std::uint32_t n) const {
    return (mul_hi(n, mul) + n) >> shift;
  }
  /// n % divisor, for n < 2^31.
  KOKKOS_FORCEINLINE_FUNCTION std::uint32_t mod(std::uint32_t n) const {
    return n - div(n) * divisor;
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_CORE_FAST_DIV_HPP
