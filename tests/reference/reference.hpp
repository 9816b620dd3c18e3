#ifndef GDN_TESTS_REFERENCE_HPP
#define GDN_TESTS_REFERENCE_HPP

// A deliberately simple float64 reference of the gated delta recurrence
// (the mathematics of docs/design.md, section 2), independent of the
// library: plain loops, no tiling, no shared code with include/gdn. Tests
// compare the kernels against it within stated tolerances.

#include <cstdint>
#include <vector>

namespace gdn_ref {

struct Geometry {
  int nk, nv, dk, dv;
  int group() const { return nv / nk; }
  int key_dim() const { return nk * dk; }
  int value_dim() const { return nv * dv; }
  int conv_dim() const { return 2 * key_dim() + value_dim(); }
};

// Host per-token inputs, dense row-major: qkv [tokens][conv_dim], decay and beta [tokens][nv].
struct Tokens {
  std::vector<float> qkv, decay, beta;
};

// One record of the ring, as the reference computes it (for one token, one value head).
struct RefStep {
  std::vector<double> u;  // [dv] delta factors
};

// Runs tokens [t0, t1) over the state of all value heads of one sequence.
// state: [nv][dk][dv] (float64), updated in place. out: [tokens][value_dim],
// rows t0..t1-1 written. If `deltas` is not null it receives, per token and
// value head, the delta factors u (deltas[(t - t0) * nv + h]).
void forward(const Geometry& g, const Tokens& in, int t0, int t1, std::vector<double>& state,
             std::vector<double>& out, std::vector<RefStep>* deltas = nullptr);

// The same with decay and beta given in float64, [tokens][nv] (e.g. from gates below);
// in.decay and in.beta are not read.
void forward(const Geometry& g, const Tokens& in, const std::vector<double>& decay,
             const std::vector<double>& beta, int t0, int t1, std::vector<double>& state,
             std::vector<double>& out);

// Decay and beta of raw gates in float64 ([tokens][nv] each; A_log and dt_bias [nv]):
//   decay = exp(-exp(A_log[h]) * softplus(a[t, h] + dt_bias[h])),  softplus(x) = log(1 + e^x)
//   beta  = 1 / (1 + exp(-b[t, h]))
// (the mathematics; the kernel's float32 softplus returns x above 20, where the
// difference is below float32 resolution).
void gates(const Geometry& g, const std::vector<float>& a, const std::vector<float>& b,
           const std::vector<float>& A_log, const std::vector<float>& dt_bias,
           std::vector<double>& decay, std::vector<double>& beta);

// One gate of the formulas above: the decay's exponent exp(A_log) * softplus(a + dt_bias)
// (decay = exp(-exponent)) and beta.
double gate_decay_exponent(double a, double A_log, double dt_bias);
double gate_beta(double b);

// bfloat16 round-to-nearest-even of a value, computed from the double (not via float).
double round_to_bf16(double x);

}  // namespace gdn_ref

#endif
