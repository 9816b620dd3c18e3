// The exact path computes docs/design.md section 2 one token at a time in the
// canonical order, bit for bit: a float32 recurrence written here from the
// specification (blocks of 16 rows, each an fma chain from 0 in ascending
// rows, combined by ((b0+b4)+(b2+b6))+((b1+b5)+(b3+b7)) at Dk = 128 and
// (b0+b2)+(b1+b3) at Dk = 64; the decay one rounded product, the update one
// fma, out on the updated state) against the library's forward and verify,
// outputs and states. It shares no code with include/gdn; on CUDA the same
// calls are also compared with the host by tests/test_backends_agree.cpp.

#include "test_support.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace gdn_test {
namespace {

// sum_i x[i] * y[i] over dk rows in the canonical order (x, y at stride sx, sy).
float spec_dot(const float* x, int sx, const float* y, int sy, int dk) {
  float b[8] = {};
  for (int blk = 0; blk < dk / 16; ++blk)
    for (int r = 0; r < 16; ++r) {
      const int i = 16 * blk + r;
      b[blk] = std::fma(x[i * sx], y[i * sy], b[blk]);
    }
  if (dk == 128) {
    const float l = (b[0] + b[4]) + (b[2] + b[6]);
    const float r = (b[1] + b[5]) + (b[3] + b[7]);
    return l + r;
  }
  return (b[0] + b[2]) + (b[1] + b[3]);  // dk == 64
}

// The plain serial order, to show that the inputs tell orders apart.
float serial_dot(const float* x, int sx, const float* y, int sy, int dk) {
  float acc = 0.0f;
  for (int i = 0; i < dk; ++i) acc = std::fma(x[i * sx], y[i * sy], acc);
  return acc;
}

bool same(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

// docs/design.md section 2 over tokens [t0, t1) of problem p, state S [nv][dk][dv]
// (one sequence), outputs into out [tokens][value_dim]. Returns how many
// out values would differ if the sums were serial (a can-fail check).
int spec_forward(const Problem& p, int t0, int t1, std::vector<float>& S, std::vector<float>& out) {
  const auto g = p.geo();
  const std::size_t CD = g.conv_dim();
  const float q_scale = float(1.0 / std::sqrt(double(g.dk)));
  std::vector<float> u(g.dv);
  int serial_differs = 0;
  for (int t = t0; t < t1; ++t) {
    for (int h = 0; h < g.nv; ++h) {
      const int kh = h / g.group();
      const float* q = &p.host.qkv[t * CD + kh * g.dk];
      const float* k = &p.host.qkv[t * CD + g.key_dim() + kh * g.dk];
      const float* v = &p.host.qkv[t * CD + 2 * g.key_dim() + h * g.dv];
      const float a = p.host.decay[std::size_t(t) * g.nv + h];
      const float beta = p.host.beta[std::size_t(t) * g.nv + h];
      const float qf = q_scale / std::sqrt(spec_dot(q, 1, q, 1, g.dk) + 1e-6f);
      const float kinv = 1.0f / std::sqrt(spec_dot(k, 1, k, 1, g.dk) + 1e-6f);
      float* s = &S[std::size_t(h) * g.dk * g.dv];
      for (int e = 0; e < g.dk * g.dv; ++e) s[e] = s[e] * a;
      for (int j = 0; j < g.dv; ++j) {
        const float kv = spec_dot(s + j, g.dv, k, 1, g.dk);
        u[j] = (beta * std::fma(-kv, kinv, v[j])) * kinv;
      }
      for (int i = 0; i < g.dk; ++i)
        for (int j = 0; j < g.dv; ++j) s[i * g.dv + j] = std::fma(k[i], u[j], s[i * g.dv + j]);
      for (int j = 0; j < g.dv; ++j) {
        const float o = spec_dot(s + j, g.dv, q, 1, g.dk);
        out[std::size_t(t) * g.value_dim() + h * g.dv + j] = qf * o;
        serial_differs += !same(qf * o, qf * serial_dot(s + j, g.dv, q, 1, g.dk));
      }
    }
  }
  return serial_differs;
}

void check_against_spec(const gdn::HeadConfig& cfg, const std::vector<int>& lens,
                        std::uint64_t seed) {
  const ExecSpace space;
  // Magnitudes over several octaves, so that another order changes bits.
  Problem p = make_problem(cfg, lens, seed);
  std::mt19937_64 rng(seed + 7);
  std::uniform_real_distribution<float> e(-4.0f, 4.0f);
  for (float& x : p.host.qkv) x *= std::exp2(e(rng));
  const int B = p.batch();
  auto S = make_state<float>(B, cfg, seed + 1);
  const std::vector<float> S0 = floats_of(S);
  const DeviceInputs d = upload(p, Layout::Padded);
  Strided2D out = make_out(p);
  gdn::recurrence_fwd(space, cfg, d.in, to_device(iota_u32(B)), S, out.view);
  // Verify of the same rows (RING_LEN above every row: all record).
  int max_len = 1;
  for (int l : lens) max_len = std::max(max_len, l);
  auto S_v = make_state<float>(B, cfg, seed + 1);
  auto ring = make_ring<float>(
      B, cfg, max_len,
      int(gdn::ring_record_elements(cfg.key_head_dim, cfg.value_head_dim, cfg.group_size())));
  Strided2D out_v = make_out(p);
  gdn::recurrence_verify_ring(space, cfg, d.in, to_device(iota_u32(B)), S_v, out_v.view,
                              to_device(iota_u32(B)), ring);
  space.fence();

  const std::size_t head = std::size_t(cfg.num_value_heads) * cfg.key_head_dim * cfg.value_head_dim;
  std::vector<float> want_out(std::size_t(p.tokens()) * cfg.value_dim());
  std::vector<float> want_S(S0);
  int serial_differs = 0;
  for (int b = 0; b < B; ++b) {
    std::vector<float> s(S0.begin() + b * head, S0.begin() + (b + 1) * head);
    serial_differs += spec_forward(p, int(p.offsets[b]), int(p.offsets[b + 1]), s, want_out);
    std::copy(s.begin(), s.end(), want_S.begin() + b * head);
  }
  EXPECT_TRUE(same_bits(read_2d(out), want_out)) << "forward outputs";
  EXPECT_TRUE(same_bits(floats_of(S), want_S)) << "forward state";
  EXPECT_TRUE(same_bits(read_2d(out_v), want_out)) << "verify outputs";
  EXPECT_TRUE(same_bits(floats_of(S_v), S0)) << "verify leaves the state";
  EXPECT_GT(serial_differs, 0) << "inputs too tame to tell orders apart";
}

TEST(CanonicalOrder, ForwardAndVerifyAreTheSpecificationsBits) {
  check_against_spec(heads(2, 4, 128), {3, 0, 1, 7}, 11);
  check_against_spec(heads(1, 1, 64), {5, 2}, 12);
  check_against_spec(heads(2, 2, 64), {17}, 13);
}

}  // namespace
}  // namespace gdn_test
