#ifndef GDN_IMPL_FAST_DIV_HPP
#define GDN_IMPL_FAST_DIV_HPP

/// \file fast_div.hpp
/// \brief Unsigned division by a divisor fixed at launch, without a divide.
///
/// The kernels decode a work item's sequence and head with divisions by
/// run-time values (the number of value heads, the group size). A 32-bit
/// division is a sequence of about 20 instructions on a GPU; `FastDiv`
/// precomputes, on the host, a multiplier `m` and a shift `s` so that
/// `n / d == (mulhi(n, m) + n) >> s` for every `n < 2^31` (the "round-up"
/// method of Granlund and Montgomery, 1994: `s = ceil(log2 d)`,
/// `m = floor(2^32 (2^s - d) / d) + 1`; the sum cannot overflow because
/// `mulhi(n, m) <= n < 2^31`).

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace gdn {
namespace Impl {

struct FastDiv {
  std::uint32_t mul = 1;  // m (d = 1: mulhi(n, 1) = 0, so the quotient is n)
  std::uint32_t shift = 0;

  FastDiv() = default;
  /// `divisor` >= 1 and < 2^31.
  explicit FastDiv(std::uint32_t divisor) {
    while ((std::uint64_t(1) << shift) < divisor) ++shift;
    mul = static_cast<std::uint32_t>(
        ((std::uint64_t(1) << 32) * ((std::uint64_t(1) << shift) - divisor)) / divisor + 1);
  }

  /// n / divisor, for n < 2^31.
  KOKKOS_FORCEINLINE_FUNCTION std::uint32_t div(std::uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const std::uint32_t hi = __umulhi(n, mul);
#else
    const std::uint32_t hi = static_cast<std::uint32_t>((std::uint64_t(n) * mul) >> 32);
#endif
    return (hi + n) >> shift;
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_FAST_DIV_HPP
