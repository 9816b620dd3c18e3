#ifndef GDN_BF16_HPP
#define GDN_BF16_HPP

/// \file bf16.hpp
/// \brief 2-byte bfloat16 storage type for state pools and rings.
///
/// `gdn::bf16` is storage only: arithmetic always runs in float32. Widening
/// is exact (the 16 bits become the high half of a float); narrowing rounds
/// to nearest, ties to even, and keeps NaN a (quiet) NaN. The same code runs
/// on host and device, and the kernels store a bf16 state with it on every
/// backend (impl/backend/backend.hpp, store_frag), so a bf16 pool holds the same bits
/// whichever backend wrote it, NaN payloads included.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace gdn {
namespace Impl {

KOKKOS_FORCEINLINE_FUNCTION std::uint32_t float_to_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

KOKKOS_FORCEINLINE_FUNCTION float bits_to_float(std::uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// Round-to-nearest-even narrowing of a float to the bfloat16 bit pattern.
KOKKOS_FORCEINLINE_FUNCTION std::uint16_t float_to_bf16_bits(float f) {
  const std::uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep sign and payload top, force quiet
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  }
  const std::uint32_t bias = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + bias) >> 16);
}

}  // namespace Impl

/// \brief bfloat16 storage: exact widening to float, round-to-nearest-even narrowing.
struct bf16 {
  std::uint16_t bits;

  bf16() = default;
  /// \brief Narrow a float (round to nearest even).
  KOKKOS_FORCEINLINE_FUNCTION explicit bf16(float f) : bits(Impl::float_to_bf16_bits(f)) {}
  /// \brief Widen to float (exact).
  KOKKOS_FORCEINLINE_FUNCTION explicit operator float() const {
    return Impl::bits_to_float(static_cast<std::uint32_t>(bits) << 16);
  }
  /// \brief The value with the given bit pattern.
  KOKKOS_FORCEINLINE_FUNCTION static bf16 from_bits(std::uint16_t b) {
    bf16 r;
    r.bits = b;
    return r;
  }
};

static_assert(sizeof(bf16) == 2, "gdn::bf16 must be 2 bytes");

namespace Impl {
/// Storage <-> float32 conversions used by every kernel.
KOKKOS_FORCEINLINE_FUNCTION float to_float(float x) { return x; }
KOKKOS_FORCEINLINE_FUNCTION float to_float(bf16 x) { return static_cast<float>(x); }

template <class T>
struct FromFloat;
template <>
struct FromFloat<float> {
  KOKKOS_FORCEINLINE_FUNCTION static float apply(float x) { return x; }
};
template <>
struct FromFloat<bf16> {
  KOKKOS_FORCEINLINE_FUNCTION static bf16 apply(float x) { return bf16(x); }
};
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T from_float(float x) {
  return FromFloat<T>::apply(x);
}

template <class T>
struct IsStorageType : std::false_type {};
template <>
struct IsStorageType<float> : std::true_type {};
template <>
struct IsStorageType<bf16> : std::true_type {};
}  // namespace Impl
}  // namespace gdn

#endif  // GDN_BF16_HPP
