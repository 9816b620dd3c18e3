#include "reference.hpp"

#include <KokkosBatched_Gemv_Decl.hpp>
#include <KokkosBatched_Gemv_Serial_Impl.hpp>
#include <Kokkos_Core.hpp>

#include <cmath>

namespace gdn_ref {

namespace {
using HostMatrix =
    Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
using HostVector = Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;

/// y = S^T x for the row-major dk x dv state S, by Kokkos Kernels' serial
/// batched GEMV (float64; its order enters no promise of the library).
void state_transpose_times(double* S, int dk, int dv, double* x, double* y) {
  namespace KB = KokkosBatched;
  KB::SerialGemv<KB::Trans::Transpose, KB::Algo::Gemv::Unblocked>::invoke(
      1.0, HostMatrix(S, dk, dv), HostVector(x, dk), 0.0, HostVector(y, dv));
}

void run(const Geometry& g, const Tokens& in, const float* decay_f, const double* decay_d,
         const float* beta_f, const double* beta_d, int t0, int t1, std::vector<double>& state,
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
      const std::size_t th = std::size_t(t) * g.nv + h;
      const double decay = decay_d ? decay_d[th] : double(decay_f[th]);
      const double beta = beta_d ? beta_d[th] : double(beta_f[th]);
      double qq = 0, kk = 0;
      for (int i = 0; i < g.dk; ++i) {
        qq += q[i] * q[i];
        kk += k[i] * k[i];
      }
      const double qf = (1.0 / std::sqrt(double(g.dk))) / std::sqrt(qq + 1e-6);
      const double kinv = 1.0 / std::sqrt(kk + 1e-6);
      double* S = &state[std::size_t(h) * g.dk * g.dv];
      for (int e = 0; e < g.dk * g.dv; ++e) S[e] *= decay;
      std::vector<double> u(g.dv), kv(g.dv), o(g.dv);
      state_transpose_times(S, g.dk, g.dv, k.data(), kv.data());
      for (int j = 0; j < g.dv; ++j) u[j] = beta * (v[j] - kv[j] * kinv) * kinv;
      for (int i = 0; i < g.dk; ++i)
        for (int j = 0; j < g.dv; ++j) S[i * g.dv + j] += k[i] * u[j];
      state_transpose_times(S, g.dk, g.dv, q.data(), o.data());
      for (int j = 0; j < g.dv; ++j) out[std::size_t(t) * g.value_dim() + h * g.dv + j] = qf * o[j];
      if (deltas) (*deltas)[std::size_t(t - t0) * g.nv + h].u = u;
    }
  }
}

}  // namespace

void forward(const Geometry& g, const Tokens& in, int t0, int t1, std::vector<double>& state,
             std::vector<double>& out, std::vector<RefStep>* deltas) {
  run(g, in, in.decay.data(), nullptr, in.beta.data(), nullptr, t0, t1, state, out, deltas);
}

void forward(const Geometry& g, const Tokens& in, const std::vector<double>& decay,
             const std::vector<double>& beta, int t0, int t1, std::vector<double>& state,
             std::vector<double>& out) {
  run(g, in, nullptr, decay.data(), nullptr, beta.data(), t0, t1, state, out, nullptr);
}

void gates(const Geometry& g, const std::vector<float>& a, const std::vector<float>& b,
           const std::vector<float>& A_log, const std::vector<float>& dt_bias,
           std::vector<double>& decay, std::vector<double>& beta) {
  decay.resize(a.size());
  beta.resize(b.size());
  for (std::size_t th = 0; th < a.size(); ++th) {
    const int h = int(th % std::size_t(g.nv));
    decay[th] = std::exp(-gate_decay_exponent(a[th], A_log[h], dt_bias[h]));
    beta[th] = gate_beta(b[th]);
  }
}

double gate_decay_exponent(double a, double A_log, double dt_bias) {
  const double x = a + dt_bias;
  const double softplus = x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  return std::exp(A_log) * softplus;
}

double gate_beta(double b) { return 1.0 / (1.0 + std::exp(-b)); }

double round_to_bf16(double x) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  const double m = std::frexp(x, &e);               // x = m * 2^e, 0.5 <= |m| < 1
  const double scaled = std::nearbyint(m * 256.0);  // 8 significant bits, ties to even
  return std::ldexp(scaled / 256.0, e);
}

}  // namespace gdn_ref
