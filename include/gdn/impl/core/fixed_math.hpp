#ifndef GDN_IMPL_FIXED_MATH_HPP
#define GDN_IMPL_FIXED_MATH_HPP

/// \file fixed_math.hpp
/// \brief exp and log1p in float32 as one fixed sequence of IEEE operations,
/// so the host and CUDA compute the same bits for the same input.
///
/// The platforms' expf and log1pf are different implementations (the host's
/// C library, CUDA's device functions) and may differ in the last bit. These
/// use only operations IEEE 754 rounds correctly everywhere: explicit fmaf,
/// `/`, `+` and `-` of values that are not rounded products, products that
/// feed no addition or are exact (a compiler may fuse `a * b + c` into one
/// fma on one platform and not on another), comparisons and bit manipulation. Both are within
/// 1 ulp of the exact result over the whole float range (tests/test_fixed_math.cpp
/// measures it), subnormal results included.

#include <gdn/bf16.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace gdn {
namespace Impl {

/// ln(2) = kLn2Hi + kLn2Lo to about 2^-54 (kLn2Hi is ln(2) rounded to float).
inline constexpr float kLn2Hi = 0x1.62e430p-1f;
inline constexpr float kLn2Lo = -0x1.05c610p-29f;

/// 2^k as a float, for -126 <= k <= 127.
KOKKOS_FORCEINLINE_FUNCTION float pow2_fixed(int k) {
  return bits_to_float(static_cast<std::uint32_t>(k + 127) << 23);
}

/// exp(x): x = k ln(2) + r with |r| <= ln(2)/2 (k = x log2(e) rounded to an
/// integer by adding 1.5 * 2^23 in one fma, where the float spacing is 1),
/// exp(r) by its Taylor polynomial of degree 7 (truncation below 0.1 ulp)
/// in Horner form, then the scaling by 2^k in two multiplies by powers of 2.
/// Where the result is subnormal (k < -126), p is first rounded to the
/// result's spacing (2^-149 / 2^k) by adding and subtracting 2^(-126 - k),
/// so the scaling is exact everywhere: the result is rounded once, and a
/// compiler that fuses the last product into a following addition cannot
/// change a bit. x - k ln(2) in two fmas: the
/// first is exact, since x and k * kLn2Hi are multiples of 2^-25 that differ
/// by less than 1/2. Above 88.7228317 (the largest float whose exp is finite)
/// the result is +inf, below -104 (exp < 2^-150) it is 0; NaN stays NaN.
KOKKOS_FORCEINLINE_FUNCTION float exp_fixed(float x) {
  constexpr float hi = 0x1.62e42ep+6f;
  constexpr float lo = -104.0f;
  constexpr float shifter = 0x1.8p23f;
  const float xc = x > hi ? hi : (x >= lo ? x : lo);  // NaN becomes lo, patched below
  const float t = fmaf(xc, 0x1.715476p+0f, shifter);  // 1.5 * 2^23 + rint(x log2(e))
  const float kf = t - shifter;
  const int k = static_cast<int>(float_to_bits(t) - float_to_bits(shifter));  // -150 .. 128
  float r = fmaf(kf, -kLn2Hi, xc);
  r = fmaf(kf, -kLn2Lo, r);
  float p = 0x1.a01a02p-13f;        // 1/7!
  p = fmaf(p, r, 0x1.6c16c2p-10f);  // 1/6!
  p = fmaf(p, r, 0x1.111112p-7f);   // 1/5!
  p = fmaf(p, r, 0x1.555556p-5f);   // 1/4!
  p = fmaf(p, r, 0x1.555556p-3f);   // 1/3!
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  const float m = k < -126 ? bits_to_float(static_cast<std::uint32_t>(1 - k) << 23) : 0.0f;
  p = (p + m) - m;       // p + m lies in [m, 2m), where the float spacing is 2^-149 / 2^k
  const int k1 = k / 2;  // both halves within -75 .. 64: 2^k1 and 2^(k - k1) are normal
  const float y = (p * pow2_fixed(k1)) * pow2_fixed(k - k1);
  const float inf = bits_to_float(0x7f800000u);
  return x > hi ? inf : (x >= lo ? y : (x != x ? x : 0.0f));
}

/// log1p(x), the method of fdlibm's log1pf: 1 + x = 2^k (1 + f) with
/// 1 + f in [sqrt(2)/2, sqrt(2)) taken from the bits of u = fl(1 + x), plus
/// c = (1 + x - u) / u (1 + x - u computed exactly) for the rounding of u;
/// then log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), s = f / (2 + f), R the
/// Taylor series of 2 atanh(s) / s - 2 to degree 8 in s (truncation below
/// 0.05 ulp for |s| <= 0.1716); the result k ln(2) + c + log(1 + f) summed
/// with the small terms first. x near 0 (1 + x within [sqrt(2)/2, sqrt(2)))
/// skips the reduction: f = x, k = c = 0. log1p(-1) = -inf, x < -1 gives
/// NaN, +inf gives +inf, NaN stays NaN, |x| < 2^-24 gives x.
KOKKOS_FORCEINLINE_FUNCTION float log1p_fixed(float x) {
  const float inf = bits_to_float(0x7f800000u);
  const bool finite = x > -1.0f && x < inf;
  const float xc = finite ? x : 0.0f;
  const float u = 1.0f + xc;  // a normal float in [2^-24, FLT_MAX]
  const std::uint32_t iu = float_to_bits(u) + (0x3f800000u - 0x3f3504f3u);
  const int k = static_cast<int>(iu >> 23) - 127;
  const float fr = bits_to_float((iu & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  // Exact: u - x and u - 1 are differences of floats within a factor 2.
  const float cr = k >= 2 ? 1.0f - (u - xc) : xc - (u - 1.0f);
  const bool near0 = xc > -0x1.2bec34p-2f && xc < 0x1.a8279ap-2f;  // 1 - sqrt(2)/2, sqrt(2) - 1
  const float f = near0 ? xc : fr;
  const float c = near0 || k >= 25 ? 0.0f : cr / u;
  const float kf = near0 ? 0.0f : static_cast<float>(k);
  const float s = f / (2.0f + f);
  const float z = s * s;
  float R = fmaf(z, 0x1.c71c72p-3f, 0x1.24924ap-2f);  // 2/9, 2/7
  R = fmaf(z, R, 0x1.99999ap-2f);                     // 2/5
  R = fmaf(z, R, 0x1.555556p-1f);                     // 2/3
  const float hf = 0.5f * f;
  const float hfsq = hf * f;
  const float small = fmaf(s, fmaf(z, R, hfsq), fmaf(kf, kLn2Lo, c));
  const float y = fmaf(kf, kLn2Hi, f - fmaf(hf, f, -small));
  const float nan = bits_to_float(0x7fc00000u);
  if (finite) return (xc < 0x1p-24f && xc > -0x1p-24f) ? xc : y;
  return x == inf ? inf : (x == -1.0f ? -inf : (x != x ? x : nan));
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_FIXED_MATH_HPP
