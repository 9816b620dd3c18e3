// The GPU kernels' q/k norms (gdn::Impl::quad_sum_squares, token_step.hpp):
// a quad of 4 lanes sums a vector's squares in an order that must not depend
// on which quad runs it (its `swz`), or forward and verify, which hand the
// same vector to different quads, would disagree in the last bit. Kernels
// that compute the norms where the inputs are staged use octets of 8 lanes
// (octet_sum_squares), which must give the quads' bits: the forward with a
// bf16 state uses quads, verify octets.
#include "test_support.hpp"

#include <gdn/impl/token_step.hpp>

#include <cmath>
#include <cstring>
#include <type_traits>

namespace gdn_test {
namespace {

constexpr int kVectors = 8;  // one per quad of a warp

std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// kVectors random vectors of Dk floats, 16-byte aligned rows.
template <int Dk>
std::vector<float> random_vectors(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> x(-2.0f, 2.0f);
  std::vector<float> v(kVectors * Dk);
  for (float& e : v) e = x(rng);
  return v;
}

double sum_squares64(const float* x, int n) {
  double s = 0.0;
  for (int i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
  return s;
}

// On the host quad_sum is the identity, so quad_sum_squares returns lane j's
// own partial sum: the same bits for swz = 0 and 1, and combined in the xor
// butterfly's order (lanes j ^ 1, then j ^ 2) the quad's sum.
template <int Dk>
float host_quad_sum(const float* x, int swz) {
  float p[4];
  for (int j = 0; j < 4; ++j) p[j] = gdn::Impl::quad_sum_squares<Dk>(x, j, swz);
  return (p[0] + p[1]) + (p[2] + p[3]);
}

// On the host pair_sum and quad_sum are the identity, so octet_sum_squares
// returns lane o's own partial sum; combined as on the GPU (lane o ^ 4, then
// the quad butterfly) the octet's sum.
template <int Dk>
float host_octet_sum(const float* x) {
  float p[8];
  for (int o = 0; o < 8; ++o) p[o] = gdn::Impl::octet_sum_squares<Dk>(x, o);
  float v[4];
  for (int j = 0; j < 4; ++j) v[j] = p[j] + p[j + 4];
  return (v[0] + v[1]) + (v[2] + v[3]);
}

template <int Dk>
void check_host() {
  alignas(16) float buf[kVectors * Dk];
  const auto v = random_vectors<Dk>(Dk);
  std::memcpy(buf, v.data(), sizeof buf);
  for (int k = 0; k < kVectors; ++k) {
    const float* x = buf + k * Dk;
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(bits(gdn::Impl::quad_sum_squares<Dk>(x, j, 0)),
                bits(gdn::Impl::quad_sum_squares<Dk>(x, j, 1)))
          << "Dk=" << Dk << " vector " << k << " lane " << j;
    }
    const double ref = sum_squares64(x, Dk);
    EXPECT_NEAR(host_quad_sum<Dk>(x, 0), ref, 1e-6 * ref) << "Dk=" << Dk << " vector " << k;
    EXPECT_EQ(bits(host_octet_sum<Dk>(x)), bits(host_quad_sum<Dk>(x, 0)))
        << "Dk=" << Dk << " vector " << k << ": octets and quads must give the same bits";
  }
}

TEST(QuadNorms, OrderIndependentOfSwizzleAndSameAsOctetsOnHost) {
  check_host<64>();
  check_host<128>();
}

#if defined(KOKKOS_ENABLE_CUDA)
// One warp (a team of one 32-lane vector, the kernels' CUDA mapping): in pass
// p quad q sums vector (q + p) % 8 with swz = q % 2, so every vector is summed
// once with either swz, by two different quads; out(p, w) is lane w's result.
template <int Dk>
void quad_sums_on_device(const Kokkos::View<const float**, Kokkos::LayoutRight, Mem>& x,
                         const Kokkos::View<float**, Kokkos::LayoutRight, Mem>& out) {
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  Kokkos::parallel_for(
      "quad_norms_test", Policy(1, 1, 32), KOKKOS_LAMBDA(const typename Policy::member_type&) {
        const int w = gdn::Impl::vector_index();
        const int q = w / 4;
        for (int p = 0; p < 2; ++p) {
          out(p, w) = gdn::Impl::quad_sum_squares<Dk>(&x((q + p) % kVectors, 0), w % 4, q % 2);
        }
        // Octets: in pass p octet c sums vector (4p + c + 1) % 8, so octets sum every vector.
        for (int p = 0; p < 2; ++p) {
          out(2 + p, w) =
              gdn::Impl::octet_sum_squares<Dk>(&x((4 * p + w / 8 + 1) % kVectors, 0), w % 8);
        }
      });
}

template <int Dk>
void check_device() {
  const auto v = random_vectors<Dk>(Dk + 1);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> x("x", kVectors, Dk);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> out("out", 4, 32);
  auto hx = Kokkos::create_mirror_view(x);
  for (int k = 0; k < kVectors; ++k)
    for (int i = 0; i < Dk; ++i) hx(k, i) = v[k * Dk + i];
  Kokkos::deep_copy(x, hx);
  quad_sums_on_device<Dk>(x, out);
  auto h = Kokkos::create_mirror_view(out);
  Kokkos::deep_copy(h, out);
  for (int k = 0; k < kVectors; ++k) {
    const int q0 = k, q1 = (k + kVectors - 1) % kVectors;  // the quads of pass 0 and pass 1
    const float first = h(0, 4 * q0);
    for (int j = 0; j < 4; ++j) {
      EXPECT_EQ(bits(h(0, 4 * q0 + j)), bits(first)) << "Dk=" << Dk << " vector " << k;
      EXPECT_EQ(bits(h(1, 4 * q1 + j)), bits(first)) << "Dk=" << Dk << " vector " << k;
    }
    // Octets: vector k in pass p = ((k + 7) % 8) / 4, octet (k + 7) % 4, all 8 of its lanes.
    const int ko = (k + kVectors - 1) % kVectors;
    for (int o = 0; o < 8; ++o) {
      EXPECT_EQ(bits(h(2 + ko / 4, 8 * (ko % 4) + o)), bits(first))
          << "Dk=" << Dk << " vector " << k << ": octet lane " << o << " differs from the quads";
    }
    // The same operations as the host's lanes and butterfly: the same bits.
    EXPECT_EQ(bits(first), bits(host_quad_sum<Dk>(&v[k * Dk], 0)))
        << "Dk=" << Dk << " vector " << k;
    const double ref = sum_squares64(&v[k * Dk], Dk);
    EXPECT_NEAR(first, ref, 1e-6 * ref) << "Dk=" << Dk << " vector " << k;
  }
}

TEST(QuadNorms, SameBitsOnEveryQuadAndOctetOnTheExecutionSpace) {
  if constexpr (!std::is_same_v<ExecSpace, Kokkos::Cuda>) {
    GTEST_SKIP() << "quad norms run only in the GPU kernels";
  } else {
    check_device<64>();
    check_device<128>();
  }
}
#endif

}  // namespace
}  // namespace gdn_test
