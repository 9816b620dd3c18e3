#ifndef GDN_IMPL_TOKEN_IO_HPP
#define GDN_IMPL_TOKEN_IO_HPP

/// \file token_io.hpp
/// \brief How the forward / verify kernel reads a token's inputs and writes its outputs.
///
/// `TokenReader` hands the kernel every per-token input as float32, whatever
/// the activation type (float or gdn::bf16, widened exactly) and whichever
/// input form (TokenInputs: decay and beta given; GateInputs: the gates
/// computed here by `gate_decay` and `gate_beta`). `OutWriter` stores an
/// output, rounding to nearest even for bf16 with the library's software
/// rounding (bf16.hpp), so every backend writes the same bits for the same
/// float. The input form is a run-time flag rather than a template parameter:
/// one kernel per activation type serves both forms, and the flag costs one
/// branch per (token, head), not per element.

#include <gdn/bf16.hpp>
#include <gdn/config.hpp>
#include <gdn/impl/core/fixed_math.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace gdn {
namespace Impl {

/// `x > 20 ? x : log1p(exp(x))` (torch's softplus with threshold 20): exp
/// overflows no earlier than x = 88, and above 20 log1p(exp(x)) rounds to x
/// in float32 anyway. exp and log1p are the library's own (fixed_math.hpp),
/// so every backend computes the same bits.
KOKKOS_FORCEINLINE_FUNCTION float softplus(float x) {
  return x > 20.0f ? x : log1p_fixed(exp_fixed(x));
}

/// The decay of raw gate input `a` for a head with parameters `A_log`,
/// `dt_bias`: `exp(-(exp(A_log) * softplus(a + dt_bias)))`, each operation
/// rounded to float32 once, in this order, exp the library's own. The
/// product is a separately rounded multiply on every backend (`__fmul_rn` on
/// CUDA, which the compiler never fuses into a neighbouring add; on the host
/// it feeds only a negation), so every kernel of every backend computes the
/// same bits.
KOKKOS_FORCEINLINE_FUNCTION float gate_decay(float a, float A_log, float dt_bias) {
  const float rate = exp_fixed(A_log);
  const float sp = softplus(a + dt_bias);
#ifdef __CUDA_ARCH__
  const float e = __fmul_rn(rate, sp);
#else
  const float e = rate * sp;
#endif
  return exp_fixed(-e);
}

/// The beta of raw input `b`: `1 / (1 + exp(-b))` (0 for b below about -88,
/// 1 above about 17; never NaN for a finite b), exp the library's own.
KOKKOS_FORCEINLINE_FUNCTION float gate_beta(float b) { return 1.0f / (1.0f + exp_fixed(-b)); }

/// The kernel's view of either input form with activation type `ActT`.
/// Accessors take flat token `t`, channel `c` or value head `h`.
template <class ActT, class M>
struct TokenReader {
  using InView = Kokkos::View<const ActT**, Kokkos::LayoutStride, M>;
  using ParamView = Kokkos::View<const float*, Kokkos::LayoutStride, M>;

  InView m_qkv;         // [tokens, conv_dim]
  InView m_gate;        // [tokens, nv]: decay (given) or a (raw)
  InView m_beta;        // [tokens, nv]: beta (given) or b (raw)
  ParamView m_A_log;    // [nv] (raw gates only)
  ParamView m_dt_bias;  // [nv] (raw gates only)
  Kokkos::View<const std::uint32_t*, Kokkos::LayoutStride, M> m_offsets;  // [B+1]
  bool m_raw_gates = false;

  TokenReader() = default;
  explicit TokenReader(const TokenInputs<M, ActT>& in)
      : m_qkv(in.qkv), m_gate(in.decay), m_beta(in.beta), m_offsets(in.row_offsets) {}
  explicit TokenReader(const GateInputs<M, ActT>& in)
      : m_qkv(in.qkv),
        m_gate(in.a),
        m_beta(in.b),
        m_A_log(in.A_log),
        m_dt_bias(in.dt_bias),
        m_offsets(in.row_offsets),
        m_raw_gates(true) {}

  KOKKOS_FORCEINLINE_FUNCTION std::uint32_t row_offsets(int b) const { return m_offsets(b); }
  KOKKOS_FORCEINLINE_FUNCTION float qkv(int t, long c) const { return to_float(m_qkv(t, c)); }
  /// The decay and beta of token t, head h.
  KOKKOS_FORCEINLINE_FUNCTION float decay(int t, int h) const {
    const float g = to_float(m_gate(t, h));
    return m_raw_gates ? gate_decay(g, m_A_log(h), m_dt_bias(h)) : g;
  }
  KOKKOS_FORCEINLINE_FUNCTION float beta(int t, int h) const {
    const float x = to_float(m_beta(t, h));
    return m_raw_gates ? gate_beta(x) : x;
  }
  /// The gate inputs of token t, head h as stored: decay or a, beta or b.
  KOKKOS_FORCEINLINE_FUNCTION float gate_input(int t, int h) const {
    return to_float(m_gate(t, h));
  }
  KOKKOS_FORCEINLINE_FUNCTION float beta_input(int t, int h) const {
    return to_float(m_beta(t, h));
  }
  /// The decay and beta of those inputs (`A_log`, `dt_bias`: the head's
  /// parameters, read only for raw gates).
  KOKKOS_FORCEINLINE_FUNCTION float decay_of(float g, float A_log, float dt_bias) const {
    return m_raw_gates ? gate_decay(g, A_log, dt_bias) : g;
  }
  KOKKOS_FORCEINLINE_FUNCTION float beta_of(float x) const {
    return m_raw_gates ? gate_beta(x) : x;
  }
};

/// The kernel's output `out[t, h*Dv + j]` of type `ActT`.
template <class ActT, class M>
struct OutWriter {
  Kokkos::View<ActT**, Kokkos::LayoutStride, M> m_out;  // [tokens, value_dim]

  KOKKOS_FORCEINLINE_FUNCTION void write(int t, long c, float v) const {
    m_out(t, c) = from_float<ActT>(v);
  }
};

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_TOKEN_IO_HPP
