#ifndef GDN_IMPL_PREFILL_HOST_HPP
#define GDN_IMPL_PREFILL_HOST_HPP

/// \file prefill_host.hpp
/// \brief The chunked prefill on the host backends (Serial, OpenMP): the WY/UT form of
/// docs/design.md ("The chunked prefill") in float32, one work item per (row, value head),
/// its chunks in order, every matrix of a chunk in the team's scratch.
///
/// Preconditions: the call's arguments validated (prefill_launch_impl.hpp); Dk == Dv == D.
/// Thread mapping: a team of one thread per work item; the products are register-blocked
/// loops over rows of 4 and columns of 16 that the compiler vectorises.

#include <gdn/bf16.hpp>
#include <gdn/impl/prefill/prefill_params.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>

namespace gdn {
namespace Impl {

/// A vector of floats in one register (GCC and Clang vector extensions), the unit of the
/// products: 16 floats where the target has AVX-512, else 8. The compiler keeps a block's
/// accumulators in registers and emits one FMA per vector.
#if defined(__AVX512F__)
inline constexpr int kHostLanes = 16;
#else
inline constexpr int kHostLanes = 8;
#endif
using HostVec = float __attribute__((vector_size(4 * kHostLanes)));

inline HostVec host_load(const float* p) {
  HostVec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

/// Which triangle of a product host_gemm may skip: none; the blocks of `c` wholly above
/// the diagonal (a lower-triangular result); the terms k > m (a lower-triangular `a`).
enum class HostTri { None, LowerC, LowerA };

/// c[m][n] += alpha * sum_k a(m, k) b[k][n] for m < rows, k < depth, n < N, with
/// a(m, k) = a[m * a_rs + k * a_cs], b and c row-major (leading dimensions ldb, ldc).
/// Blocks of 4 rows by two vectors of columns: 8 independent accumulators.
template <int N, HostTri Tri = HostTri::None>
inline void host_gemm(int rows, int depth, const float* a, long a_rs, long a_cs, const float* b,
                      long ldb, float* c, long ldc, float alpha) {
  constexpr int L = kHostLanes, NB = 2 * kHostLanes, MR = 4;
  static_assert(N % NB == 0, "host_gemm: columns in blocks of two vectors");
  const auto add_to = [&](float* cr, const HostVec& x0, const HostVec& x1) {
    const HostVec c0 = host_load(cr) + alpha * x0, c1 = host_load(cr + L) + alpha * x1;
    std::memcpy(cr, &c0, sizeof c0);
    std::memcpy(cr + L, &c1, sizeof c1);
  };
  int m = 0;
  for (; m + MR <= rows; m += MR) {
    const int n_end = Tri == HostTri::LowerC ? std::min(N, m + MR) : N;
    const int k_end = Tri == HostTri::LowerA ? std::min(depth, m + MR) : depth;
    for (int n0 = 0; n0 < n_end; n0 += NB) {
      HostVec acc[MR][2] = {};
      for (int k = 0; k < k_end; ++k) {
        const HostVec b0 = host_load(b + k * ldb + n0), b1 = host_load(b + k * ldb + n0 + L);
        for (int r = 0; r < MR; ++r) {
          const float s = a[(m + r) * a_rs + k * a_cs];
          acc[r][0] += s * b0;
          acc[r][1] += s * b1;
        }
      }
      for (int r = 0; r < MR; ++r) add_to(c + (m + r) * ldc + n0, acc[r][0], acc[r][1]);
    }
  }
  for (; m < rows; ++m) {
    const int n_end = Tri == HostTri::LowerC ? std::min(N, m + 1) : N;
    const int k_end = Tri == HostTri::LowerA ? std::min(depth, m + 1) : depth;
    for (int n0 = 0; n0 < n_end; n0 += NB) {
      HostVec acc[2] = {};
      for (int k = 0; k < k_end; ++k) {
        const float s = a[m * a_rs + k * a_cs];
        acc[0] += s * host_load(b + k * ldb + n0);
        acc[1] += s * host_load(b + k * ldb + n0 + L);
      }
      add_to(c + m * ldc + n0, acc[0], acc[1]);
    }
  }
}

/// sum_i x[i]^2 for i < N, in kHostLanes partial sums.
template <int N>
inline float host_sumsq(const float* x) {
  HostVec acc = {};
  for (int i = 0; i < N; i += kHostLanes) {
    const HostVec v = host_load(x + i);
    acc += v * v;
  }
  float s = 0.0f;
  for (int l = 0; l < kHostLanes; ++l) s += acc[l];
  return s;
}

/// x_t -= sum_{i < t} l[i] x_i for one row x_t of N floats (rows of X N apart), the row in
/// registers across the sum: one step of the forward substitution.
template <int N>
inline void host_substitute(float* xt, const float* l, const float* X, int t) {
  constexpr int V = N / kHostLanes;
  HostVec acc[V];
  for (int v = 0; v < V; ++v) acc[v] = host_load(xt + v * kHostLanes);
  for (int i = 0; i < t; ++i) {
    const float li = l[i];
    for (int v = 0; v < V; ++v) acc[v] -= li * host_load(X + i * N + v * kHostLanes);
  }
  std::memcpy(xt, acc, sizeof acc);
}

/// The host prefill for one (execution space, activation type, state type, head dim D).
template <class ExecSpace, class ActT, class StateT, int D>
struct PrefillHostKernel {
  using M = typename ExecSpace::memory_space;
  using Policy = Kokkos::TeamPolicy<ExecSpace>;
  using Member = typename Policy::member_type;
  static constexpr int C = kPrefillChunk;

  // Scratch layout, in floats.
  static constexpr long kS = 0;              // S [D][D]: the carried state
  static constexpr long kKh = kS + D * D;    // K^ [C][D]: normalised keys
  static constexpr long kKt = kKh + C * D;   // K^ transposed [D][C], zero past the chunk
  static constexpr long kQ = kKt + D * C;    // Q^ [C][D], then diag(G) Q^
  static constexpr long kU = kQ + C * D;     // V [C][D], then U
  static constexpr long kW = kU + C * D;     // W [C][D]
  static constexpr long kKd = kW + C * D;    // diag(G_C / G_t) K^ [C][D]
  static constexpr long kDm = kKd + C * D;   // D = U - W S [C][D]
  static constexpr long kO = kDm + C * D;    // outputs [C][D]
  static constexpr long kGram = kO + C * D;  // K^ K^T, then L [C][C]
  static constexpr long kP = kGram + C * C;  // Q^ K^T, then P [C][C]
  static constexpr long kG = kP + C * C;     // cumulative log-decay [C]
  static constexpr long kBeta = kG + C;      // beta [C]
  static constexpr long kFloats = kBeta + C;

  PrefillParams<ActT, StateT, M> m_p;

  static std::size_t scratch_bytes() { return kFloats * sizeof(float); }

  void operator()(const Member& member) const {
    const int item = member.league_rank();
    const int b = item / m_p.nv;
    const int h = item % m_p.nv;
    long long start = 0, end = 0;
    if (!m_p.row(b, start, end)) return;
    float* sc = static_cast<float*>(member.team_scratch(1).get_shmem(scratch_bytes()));
    run(sc, b, h, start, end);
  }

  void run(float* sc, int b, int h, long long start, long long end) const {
    const auto& in = m_p.in;
    const std::uint32_t slot = m_p.slots(b);
    const long qc = long(h / m_p.group) * D;  // query channels of the key head
    const long kc = m_p.key_dim + qc;
    const long vc = 2 * m_p.key_dim + long(h) * D;
    float* S = sc + kS;
    float* Kh = sc + kKh;
    float* Kt = sc + kKt;
    float* Q = sc + kQ;
    float* U = sc + kU;
    float* W = sc + kW;
    float* Kd = sc + kKd;
    float* Dm = sc + kDm;
    float* O = sc + kO;
    float* Gram = sc + kGram;
    float* P = sc + kP;
    float* g = sc + kG;
    float* beta = sc + kBeta;
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < D; ++j) S[i * D + j] = to_float(m_p.state(slot, h, i, j));

    for (long long t0 = start; t0 < end; t0 += C) {
      const int n = static_cast<int>(std::min<long long>(C, end - t0));
      // Inputs, norms and the cumulative log-decay.
      float cum = 0.0f;
      for (int t = 0; t < n; ++t) {
        const int tok = static_cast<int>(t0 + t);
        for (int i = 0; i < D; ++i) {
          Q[t * D + i] = in.qkv(tok, qc + i);
          Kh[t * D + i] = in.qkv(tok, kc + i);
          U[t * D + i] = in.qkv(tok, vc + i);
        }
        const float qf = m_p.q_scale / std::sqrt(host_sumsq<D>(Q + t * D) + 1e-6f);
        const float kinv = 1.0f / std::sqrt(host_sumsq<D>(Kh + t * D) + 1e-6f);
        for (int i = 0; i < D; ++i) {
          Q[t * D + i] *= qf;
          Kh[t * D + i] *= kinv;
        }
        // log(decay), clamped so that a decay of 0 keeps the differences finite (exp(-80)
        // is below float32's normal range).
        const float a = in.decay(tok, h);
        cum += a > 0.0f ? std::max(std::log(a), -80.0f) : -80.0f;
        g[t] = cum;
        beta[t] = in.beta(tok, h);
      }
      for (int i = 0; i < D; ++i)
        for (int t = 0; t < C; ++t) Kt[i * C + t] = t < n ? Kh[t * D + i] : 0.0f;
      // Gram K^ K^T and Q^ K^T (full C columns; the columns past n are zero).
      std::fill(Gram, Gram + C * C, 0.0f);
      std::fill(P, P + C * C, 0.0f);
      host_gemm<C, HostTri::LowerC>(n, D, Kh, D, 1, Kt, C, Gram, C, 1.0f);
      host_gemm<C, HostTri::LowerC>(n, D, Q, D, 1, Kt, C, P, C, 1.0f);
      // L(t, i) = beta_t M(t, i) K^_t . K^_i (i < t); P(t, i) = M(t, i) Q^_t . K^_i (i <= t).
      for (int t = 0; t < n; ++t) {
        for (int i = 0; i < C; ++i) {
          const float m = i <= t ? std::exp(g[t] - g[i]) : 0.0f;
          Gram[t * C + i] = i < t ? beta[t] * m * Gram[t * C + i] : 0.0f;
          P[t * C + i] *= m;
        }
      }
      // (I + L) U = diag(beta) V and (I + L) W = diag(beta G) K^ by forward substitution.
      const float gl = g[n - 1];
      for (int t = 0; t < n; ++t) {
        const float et = std::exp(g[t]);
        float* ut = U + t * D;
        float* wt = W + t * D;
        for (int j = 0; j < D; ++j) {
          ut[j] *= beta[t];
          wt[j] = beta[t] * et * Kh[t * D + j];
        }
        host_substitute<D>(ut, Gram + t * C, U, t);
        host_substitute<D>(wt, Gram + t * C, W, t);
        const float ed = std::exp(gl - g[t]);
        for (int j = 0; j < D; ++j) {
          Kd[t * D + j] = ed * Kh[t * D + j];
          Q[t * D + j] *= et;
        }
      }
      // D = U - W S.
      std::copy(U, U + n * D, Dm);
      host_gemm<D>(n, D, W, D, 1, S, D, Dm, D, -1.0f);
      // O = diag(G) Q^ S + P D.
      std::fill(O, O + n * D, 0.0f);
      host_gemm<D>(n, D, Q, D, 1, S, D, O, D, 1.0f);
      host_gemm<D, HostTri::LowerA>(n, n, P, C, 1, Dm, D, O, D, 1.0f);
      for (int t = 0; t < n; ++t) {
        const int tok = static_cast<int>(t0 + t);
        for (int j = 0; j < D; ++j) m_p.out.write(tok, long(h) * D + j, O[t * D + j]);
      }
      // S <- G_C S + Kd^T D.
      const float gc = std::exp(gl);
      for (int i = 0; i < D * D; ++i) S[i] *= gc;
      host_gemm<D>(D, n, Kd, 1, D, Dm, D, S, D, 1.0f);
    }
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < D; ++j) m_p.state(slot, h, i, j) = from_float<StateT>(S[i * D + j]);
  }
};

/// Launches the host prefill over every (row, value head).
template <class ExecSpace, class ActT, class StateT, int D>
void launch_prefill_host(const ExecSpace& space,
                         const PrefillParams<ActT, StateT, typename ExecSpace::memory_space>& p) {
  using Kernel = PrefillHostKernel<ExecSpace, ActT, StateT, D>;
  const long long items = static_cast<long long>(p.batch) * p.nv;
  if (items == 0) return;
  typename Kernel::Policy policy(space, static_cast<int>(items), 1);
  policy.set_scratch_size(1, Kokkos::PerTeam(Kernel::scratch_bytes()));
  Kokkos::parallel_for("gdn::recurrence_prefill::host_kernel", policy, Kernel{p});
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_PREFILL_HOST_HPP
