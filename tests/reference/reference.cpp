#include "reference.hpp"

#include <cmath>

namespace gdn_ref {

void forward(const Geometry& g, const Tokens& in, int t0, int t1, std::vector<double>& state,
             std::vector<double>& out, std::vector<RefStep>* deltas) {
  const int C = g.conv_dim();
  for (int t = t0; t < t1; ++t) {
    for (int h = 0; h < g.nv; ++h) {
      const int kh = h / g.group();
      std::vector<double> q(g.dk), k(g.dk), v(g.dv);
      for (int i = 0; i < g.dk; ++i) {
        q[i] = in.qkv[std::size_t(t) * C + kh * g.dk + i];
        k[i] = in.qkv[std::size_t(t) * C + g.key_dim() + kh * g.dk + i];
      }
      for (int j = 0; j < g.dv; ++j)
        v[j] = in.qkv[std::size_t(t) * C + 2 * g.key_dim() + h * g.dv + j];
      const double decay = in.decay[std::size_t(t) * g.nv + h];
      const double beta = in.beta[std::size_t(t) * g.nv + h];
      double qq = 0, kk = 0;
      for (int i = 0; i < g.dk; ++i) {
        qq += q[i] * q[i];
        kk += k[i] * k[i];
      }
      const double qf = (1.0 / std::sqrt(double(g.dk))) / std::sqrt(qq + 1e-6);
      const double kinv = 1.0 / std::sqrt(kk + 1e-6);
      double* S = &state[std::size_t(h) * g.dk * g.dv];
      for (int e = 0; e < g.dk * g.dv; ++e) S[e] *= decay;
      std::vector<double> u(g.dv);
      for (int j = 0; j < g.dv; ++j) {
        double kv = 0;
        for (int i = 0; i < g.dk; ++i) kv += S[i * g.dv + j] * k[i];
        u[j] = beta * (v[j] - kv * kinv) * kinv;
      }
      for (int i = 0; i < g.dk; ++i)
        for (int j = 0; j < g.dv; ++j) S[i * g.dv + j] += k[i] * u[j];
      for (int j = 0; j < g.dv; ++j) {
        double o = 0;
        for (int i = 0; i < g.dk; ++i) o += S[i * g.dv + j] * q[i];
        out[std::size_t(t) * g.value_dim() + h * g.dv + j] = qf * o;
      }
      if (deltas) (*deltas)[std::size_t(t - t0) * g.nv + h].u = u;
    }
  }
}

double round_to_bf16(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  const double m = std::frexp(x, &e);               // x = m * 2^e, 0.5 <= |m| < 1
  const double scaled = std::nearbyint(m * 256.0);  // 8 significant bits, ties to even
  return std::ldexp(scaled / 256.0, e);
}

}  // namespace gdn_ref
