// The host's head-dimension sums follow docs/design.md section 2's canonical order:
// blocks of 16 rows, each an fma chain from 0 in ascending rows, combined by
// ((b0+b4)+(b2+b6))+((b1+b5)+(b3+b7)) at Dk = 128 and (b0+b2)+(b1+b3) at
// Dk = 64, written out here from the specification. (On CUDA the same order
// is checked against the host by tests/test_backends_agree.cpp.)

#include <gdn/config.hpp>
#include <gdn/impl/chunk_algebra.hpp>
#include <gdn/impl/host_algebra.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {

// The block sums of x . y over `dk` rows, each an fma chain from 0.
std::vector<float> block_sums(const float* x, const float* y, int dk) {
  std::vector<float> b(dk / 16, 0.0f);
  for (int blk = 0; blk < dk / 16; ++blk)
    for (int r = 0; r < 16; ++r) b[blk] = std::fma(x[16 * blk + r], y[16 * blk + r], b[blk]);
  return b;
}

float spec_dot(const float* x, const float* y, int dk) {
  const std::vector<float> b = block_sums(x, y, dk);
  if (dk == 128) {
    const float l = (b[0] + b[4]) + (b[2] + b[6]);
    const float r = (b[1] + b[5]) + (b[3] + b[7]);
    return l + r;
  }
  return (b[0] + b[2]) + (b[1] + b[3]);  // dk == 64
}

bool same(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

template <int Dk>
void check_host_order() {
  using S = gdn::Impl::ChunkScratch<Dk, gdn::chunk_tokens>;
  constexpr int kCols = gdn::Impl::kTiledCols;
  std::vector<float> area(S::kFloats + 4);
  const S s(gdn::Impl::align16(area.data()));
  std::mt19937 rng(7 + Dk);
  // Magnitudes spread over several octaves, so that a different order
  // changes bits.
  std::uniform_real_distribution<float> u(-1.0f, 1.0f), e(-6.0f, 6.0f);
  const auto draw = [&] { return u(rng) * std::exp2(e(rng)); };
  const int n = 3;
  for (int i = 0; i < n * Dk; ++i) {
    s.k[i] = draw();
    s.q[i] = draw();
  }
  static float st[Dk][kCols];
  for (auto& row : st)
    for (auto& v : row) v = draw();
  for (int j = 0; j < n; ++j) gdn::Impl::host_project(st, s, j, 0);
  int differ = 0;
  std::vector<float> col(Dk);
  for (int j = 0; j < n; ++j) {
    for (int c = 0; c < kCols; ++c) {
      for (int i = 0; i < Dk; ++i) col[i] = st[i][c];
      differ += !same(s.p[j * kCols + c], spec_dot(col.data(), s.k + j * Dk, Dk));
      differ += !same(s.r[j * kCols + c], spec_dot(col.data(), s.q + j * Dk, Dk));
    }
    for (int i = 0; i <= j; ++i) {
      std::vector<float> kt(Dk), qt(Dk);
      gdn::Impl::interleave_blocks<Dk>(s.k + i * Dk, kt.data());
      gdn::Impl::interleave_blocks<Dk>(s.q + j * Dk, qt.data());
      const float kq = gdn::Impl::interleaved_dot<Dk>(kt.data(), qt.data());
      differ += !same(kq, spec_dot(s.k + i * Dk, s.q + j * Dk, Dk));
    }
  }
  // The chunk's Gram entries as the kernels compute them (unit decays: the
  // coefficients are the raw dot products).
  for (int j = 0; j < n; ++j) s.a[j] = 1.0f;
  gdn::Impl::host_chunk_coefficients(s, n, 1.0f);
  constexpr int C = S::kC;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i <= j; ++i) {
      differ += !same(s.akq[j * C + i], spec_dot(s.k + i * Dk, s.q + j * Dk, Dk));
      if (i < j) differ += !same(s.akk[j * C + i], spec_dot(s.k + i * Dk, s.k + j * Dk, Dk));
    }
    const float kn = spec_dot(s.k + j * Dk, s.k + j * Dk, Dk);
    differ += !same(s.kinv[j], 1.0f / std::sqrt(kn + 1e-6f));
  }
  EXPECT_EQ(differ, 0) << "Dk = " << Dk;
  // The check can fail: plain serial sums differ from the canonical ones.
  int serial_differ = 0;
  for (int c = 0; c < kCols; ++c) {
    float serial = 0.0f;
    for (int i = 0; i < Dk; ++i) serial = std::fma(st[i][c], s.k[i], serial);
    serial_differ += !same(serial, s.p[c]);
  }
  EXPECT_GT(serial_differ, 0) << "inputs too tame to tell orders apart";
}

TEST(CanonicalOrder, HostProjectionAndDotsFollowTheSpecification) {
  check_host_order<128>();
  check_host_order<64>();
}

}  // namespace
