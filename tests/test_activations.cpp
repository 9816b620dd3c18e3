// bf16 activations (TokenInputs<M, gdn::bf16>) and raw gates computed in the
// kernel (GateInputs<M, ActT>): the promises of docs/design.md, section 4,
// with the new inputs, through the public API.
//
// Stated tolerances (max |kernel - reference| / max |reference|, float64 reference):
//   float32 outputs and state: 2e-5, as for given gates (test_reference.cpp);
//   bf16 outputs: 4e-3 (the output is rounded to bf16, a relative 2^-9 per element);
//   bf16 state: 1e-2 (test_reference.cpp).
#include "test_support.hpp"

#include <gdn/impl/core/token_io.hpp>

#include <cmath>
#include <limits>
#include <type_traits>

namespace gdn_test {
namespace {

constexpr int C = 16;  // a length scale for rows of several stages of the kernel

enum class Form { Given, Gates };
const char* form_name(Form f) { return f == Form::Given ? "decay and beta given" : "raw gates"; }

template <class T>
constexpr bool is_bf16 = std::is_same<T, gdn::bf16>::value;

float round_bf16(float x) { return float(gdn::bf16(x)); }

// Host inputs of one layer. For Form::Gates, p.host.decay and p.host.beta
// hold the raw gates a and b (so that sub_problem and prefix_problem slice
// them like any per-token input), A_log and dt_bias the per-head parameters.
// With bf16 activations every per-token value is a bf16 value.
struct Host {
  Problem p;
  Form form = Form::Given;
  std::vector<float> A_log, dt_bias;  // [nv]
  Host with(const Problem& q) const {
    Host r = *this;
    r.p = q;
    return r;
  }
};

Host make_host(const gdn::HeadConfig& cfg, const std::vector<int>& lens, std::uint64_t seed,
               Form form, bool bf16_values) {
  Host h;
  h.form = form;
  h.p = make_problem(cfg, lens, seed);
  if (form == Form::Gates) {
    std::mt19937_64 rng(seed + 1);
    std::uniform_real_distribution<float> a(-3.0f, 2.0f), b(-4.0f, 4.0f), alog(-3.0f, 0.5f),
        bias(-1.0f, 1.0f);
    for (std::size_t e = 0; e < h.p.host.decay.size(); ++e) {
      h.p.host.decay[e] = a(rng);
      h.p.host.beta[e] = b(rng);
      // Both branches of the softplus (threshold 20), a decay near 1, betas at the ends.
      if (e % 13 == 5) h.p.host.decay[e] = 24.0f;
      if (e % 17 == 3) h.p.host.decay[e] = -30.0f;
      if (e % 11 == 7) h.p.host.beta[e] = e % 2 ? 30.0f : -30.0f;
    }
    for (int hh = 0; hh < cfg.num_value_heads; ++hh) {
      h.A_log.push_back(alog(rng));
      h.dt_bias.push_back(bias(rng));
    }
  }
  if (bf16_values) {
    for (float& v : h.p.host.qkv) v = round_bf16(v);
    for (float& v : h.p.host.decay) v = round_bf16(v);
    for (float& v : h.p.host.beta) v = round_bf16(v);
  }
  return h;
}

template <class T>
using Dense2D = Kokkos::View<T**, Kokkos::LayoutRight, Mem>;

template <class T>
Dense2D<T> dev_2d(std::size_t rows, std::size_t cols, const std::vector<float>& v) {
  Dense2D<T> d("gdn_test::act", rows, cols);
  auto h = Kokkos::create_mirror(d);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) h(r, c) = storage_from_float<T>(v[r * cols + c]);
  Kokkos::deep_copy(d, h);
  return d;
}

Kokkos::View<float*, Mem> dev_1d(const std::vector<float>& v) {
  Kokkos::View<float*, Mem> d("gdn_test::param", v.size());
  auto h = Kokkos::create_mirror(d);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(d, h);
  return d;
}

template <class T>
std::vector<float> floats_2d(const Dense2D<T>& d) {
  auto h = Kokkos::create_mirror(d);
  Kokkos::deep_copy(h, d);
  std::vector<float> r(h.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = to_f(h.data()[i]);
  return r;
}

// Device copies of a Host's inputs with activation type ActT.
template <class ActT>
struct Dev {
  Dense2D<ActT> qkv, g0, g1;  // qkv; decay or a; beta or b
  Kokkos::View<float*, Mem> A_log, dt_bias;
  Index offsets;
  Form form = Form::Given;
  gdn::HeadConfig cfg{};
};

template <class ActT>
Dev<ActT> upload_as(const Host& h) {
  Dev<ActT> d;
  const std::size_t T = h.p.tokens(), nv = h.p.cfg.num_value_heads;
  d.qkv = dev_2d<ActT>(T, h.p.cfg.conv_dim(), h.p.host.qkv);
  d.g0 = dev_2d<ActT>(T, nv, h.p.host.decay);
  d.g1 = dev_2d<ActT>(T, nv, h.p.host.beta);
  d.A_log = dev_1d(h.form == Form::Gates ? h.A_log : std::vector<float>(nv, 0.0f));
  d.dt_bias = dev_1d(h.form == Form::Gates ? h.dt_bias : std::vector<float>(nv, 0.0f));
  d.offsets = to_device(h.p.offsets);
  d.form = h.form;
  d.cfg = h.p.cfg;
  return d;
}

template <class ActT>
Dense2D<ActT> make_out_as(const Problem& p) {
  return Dense2D<ActT>("gdn_test::out", p.tokens(), p.cfg.value_dim());
}

// The public calls with the input form of `d`.
template <class ActT, class StateT>
void fwd(const Dev<ActT>& d, const Index& slots, const Pool<StateT>& S, const Dense2D<ActT>& out) {
  const ExecSpace space;
  const auto run = [&](const auto& in) { gdn::recurrence_fwd(space, d.cfg, in, slots, S, out); };
  if (d.form == Form::Given) {
    run(gdn::TokenInputs<Mem, ActT>{d.qkv, d.g0, d.g1, d.offsets});
  } else {
    run(gdn::GateInputs<Mem, ActT>{d.qkv, d.g0, d.g1, d.A_log, d.dt_bias, d.offsets});
  }
}

template <class ActT, class StateT, class RingT>
void verify(const Dev<ActT>& d, const Index& slots, const Pool<StateT>& S, const Dense2D<ActT>& out,
            const Index& rslots, const Pool<RingT>& ring) {
  const ExecSpace space;
  if (d.form == Form::Given) {
    const gdn::TokenInputs<Mem, ActT> in{d.qkv, d.g0, d.g1, d.offsets};
    gdn::recurrence_verify_ring(space, d.cfg, in, slots, S, out, rslots, ring);
  } else {
    const gdn::GateInputs<Mem, ActT> in{d.qkv, d.g0, d.g1, d.A_log, d.dt_bias, d.offsets};
    gdn::recurrence_verify_ring(space, d.cfg, in, slots, S, out, rslots, ring);
  }
}

// The decay the kernel should use for flat (token, head) index th, in float32.
float kernel_decay(const Host& h, std::size_t th) {
  if (h.form == Form::Given) return h.p.host.decay[th];
  const int hh = int(th % std::size_t(h.p.cfg.num_value_heads));
  return gdn::Impl::gate_decay(h.p.host.decay[th], h.A_log[hh], h.dt_bias[hh]);
}

// exp and log1p are the library's own (fixed_math.hpp), so the decay the
// host computes here is the kernel's, bit for bit, on every backend.
bool decay_matches(float got, float want) { return std::memcmp(&got, &want, 4) == 0; }

// ---------------------------------------------------------------------------
// verify == forward (bits), committed rows == forward, untouched short rows,
// record decays, fold(verify, n) == forward(prefix) (bits, float ring).
template <class ActT, class StateT>
void cycle(Form form, const gdn::HeadConfig& cfg, const std::vector<int>& lens, int ring_len,
           std::uint64_t seed) {
  SCOPED_TRACE(std::string(form_name(form)) + (is_bf16<ActT> ? ", bf16" : ", float") +
               " activations, " + (is_bf16<StateT> ? "bf16" : "float") + " state");
  const ExecSpace space;
  const Host h = make_host(cfg, lens, seed, form, is_bf16<ActT>);
  const Problem& p = h.p;
  const int B = p.batch();
  const auto slots = iota_u32(B);
  std::vector<std::uint32_t> rslots(B);
  for (int b = 0; b < B; ++b) rslots[b] = std::uint32_t(B - 1 - b);
  const Dev<ActT> d = upload_as<ActT>(h);
  const Index d_slots = to_device(slots), d_rslots = to_device(rslots);
  const auto S0 = make_state<StateT>(B, cfg, seed + 3);
  const gdn::RingLayout lay{cfg.key_head_dim, cfg.value_head_dim, cfg.group_size()};
  const auto ring = make_ring<float>(B, cfg, ring_len, int(lay.elements()) + 1);

  auto Sf = clone(S0), Sv = clone(S0);
  const auto out_f = make_out_as<ActT>(p), out_v = make_out_as<ActT>(p);
  fwd(d, d_slots, Sf, out_f);
  verify(d, d_slots, Sv, out_v, d_rslots, ring);
  space.fence();
  EXPECT_TRUE(same_bits(floats_2d(out_f), floats_2d(out_v))) << "verify output != forward output";
  {
    const auto f0 = bytes_of(S0), ff = bytes_of(Sf), fv = bytes_of(Sv);
    const std::size_t row = f0.size() / std::size_t(B > 0 ? B : 1);
    for (int b = 0; b < B; ++b) {
      const bool committed = p.len(b) > ring_len;
      const auto& want = committed ? ff : f0;
      EXPECT_EQ(std::memcmp(fv.data() + b * row, want.data() + b * row, row), 0)
          << "row " << b << " (len " << p.len(b) << ") after verify";
    }
  }
  {  // the decays recorded are the ones the kernel computed
    auto hr = Kokkos::create_mirror(ring);
    Kokkos::deep_copy(hr, ring);
    int bad = 0;
    for (int b = 0; b < B; ++b) {
      if (p.len(b) == 0 || p.len(b) > ring_len) continue;
      for (int kh = 0; kh < cfg.num_key_heads; ++kh)
        for (int pos = 0; pos < p.len(b); ++pos)
          for (int g = 0; g < cfg.group_size(); ++g) {
            const std::size_t th =
                std::size_t(p.offsets[b] + pos) * cfg.num_value_heads + kh * cfg.group_size() + g;
            bad += !decay_matches(hr(rslots[b], kh, pos, lay.decay_offset(g)), kernel_decay(h, th));
          }
    }
    EXPECT_EQ(bad, 0) << "recorded decays differ from the gate formula";
  }

  std::mt19937_64 rng(seed + 29);
  std::vector<std::uint32_t> acc(B);
  for (int b = 0; b < B; ++b) {
    const int L = p.len(b);
    acc[b] = L > ring_len ? std::uint32_t(L)
                          : std::uint32_t(std::uniform_int_distribution<int>(0, L)(rng));
  }
  if (B > 0) acc[0] = std::uint32_t(std::min(p.len(0), ring_len));
  gdn::state_fold(space, cfg, to_device(1, B, slots), Sv, to_device(1, B, rslots), ring,
                  to_device(acc));
  const Host pre = h.with(prefix_problem(p, acc));
  const Dev<ActT> dpre = upload_as<ActT>(pre);
  auto Se = clone(S0);
  const auto out_e = make_out_as<ActT>(pre.p);
  fwd(dpre, d_slots, Se, out_e);
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(Sv), bytes_of(Se))) << "fold(verify) != forward(accepted prefix)";
  const auto ov = floats_2d(out_v), oe = floats_2d(out_e);
  const std::size_t VD = cfg.value_dim();
  int diff = 0;
  for (int b = 0; b < B; ++b)
    for (std::uint32_t t = 0; t < pre.p.offsets[b + 1] - pre.p.offsets[b]; ++t)
      diff +=
          std::memcmp(&ov[(p.offsets[b] + t) * VD], &oe[(pre.p.offsets[b] + t) * VD], VD * 4) != 0;
  EXPECT_EQ(diff, 0) << "accepted verify outputs differ from a forward replay";
}

template <class ActT>
void cycles(Form form) {
  // Rows shorter than, equal to and longer than RING_LEN, and an empty row.
  cycle<ActT, float>(form, heads(2, 4, 64), {3, 0, 8, 1, 5, 11}, 8, 300);
  cycle<ActT, gdn::bf16>(form, heads(2, 2, 128), {3, 0, 8, 1, 5, 11}, 8, 301);
  // Rows spanning several stages of the kernel.
  cycle<ActT, float>(form, heads(1, 2, 128), {2 * C + 5, C + 1, 3 * C}, 3 * C, 302);
}

TEST(Activations, Bf16GivenGatesVerifyForwardFold) { cycles<gdn::bf16>(Form::Given); }
TEST(Gates, FloatRawGatesVerifyForwardFold) { cycles<float>(Form::Gates); }
TEST(Gates, Bf16RawGatesVerifyForwardFold) { cycles<gdn::bf16>(Form::Gates); }

// ---------------------------------------------------------------------------
// A forward over L tokens == forwards over pieces split anywhere (here at 7 and 23).
template <class ActT>
void split_anywhere(Form form) {
  SCOPED_TRACE(std::string(form_name(form)) + (is_bf16<ActT> ? ", bf16" : ", float"));
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const Host h = make_host(cfg, {3 * C + 5, 2 * C, C + 1}, 51, form, is_bf16<ActT>);
  const Problem& p = h.p;
  const auto slots = to_device(iota_u32(3));
  const auto S0 = make_state<float>(3, cfg, 52);
  auto S_one = clone(S0), S_split = clone(S0);
  const auto out_one = make_out_as<ActT>(p);
  fwd(upload_as<ActT>(h), slots, S_one, out_one);
  std::vector<float> out_split(std::size_t(p.tokens()) * cfg.value_dim());
  const int cuts[] = {0, 7, 23, 1 << 20};
  for (int piece = 0; piece < 3; ++piece) {
    std::vector<std::uint32_t> first(3), count(3);
    for (int b = 0; b < 3; ++b) {
      const int lo = std::min(cuts[piece], p.len(b)), hi = std::min(cuts[piece + 1], p.len(b));
      first[b] = p.offsets[b] + std::uint32_t(lo);
      count[b] = std::uint32_t(hi - lo);
    }
    const Host q = h.with(sub_problem(p, first, count));
    const auto o = make_out_as<ActT>(q.p);
    fwd(upload_as<ActT>(q), slots, S_split, o);
    const auto ho = floats_2d(o);
    for (int b = 0; b < 3; ++b)
      for (std::uint32_t t = 0; t < count[b]; ++t)
        std::memcpy(&out_split[(first[b] + t) * cfg.value_dim()],
                    &ho[(q.p.offsets[b] + t) * cfg.value_dim()], cfg.value_dim() * sizeof(float));
  }
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(S_one), bytes_of(S_split))) << "state";
  EXPECT_TRUE(same_bits(floats_2d(out_one), out_split)) << "outputs";
}

TEST(Activations, Bf16ForwardSplitAnywhereIsBitIdentical) {
  split_anywhere<gdn::bf16>(Form::Given);
}
TEST(Gates, ForwardSplitAnywhereIsBitIdentical) {
  split_anywhere<float>(Form::Gates);
  split_anywhere<gdn::bf16>(Form::Gates);
}

// ---------------------------------------------------------------------------
// Agreement with the float64 reference (gates and recurrence in float64).
template <class ActT, class StateT>
void vs_reference(Form form) {
  SCOPED_TRACE(std::string(form_name(form)) + (is_bf16<ActT> ? ", bf16" : ", float") +
               " activations, " + (is_bf16<StateT> ? "bf16" : "float") + " state");
  const ExecSpace space;
  const auto cfg = heads(2, 4, 128);
  const Host h = make_host(cfg, {8 * C + 3, 47, 1, 0, 4 * C}, 21, form, is_bf16<ActT>);
  const Problem& p = h.p;
  const auto g = p.geo();
  std::vector<double> decay, beta;
  if (form == Form::Gates) {
    gdn_ref::gates(g, p.host.decay, p.host.beta, h.A_log, h.dt_bias, decay, beta);
  } else {
    decay.assign(p.host.decay.begin(), p.host.decay.end());
    beta.assign(p.host.beta.begin(), p.host.beta.end());
  }
  auto S = make_state<StateT>(p.batch(), cfg, 22);
  const auto s0 = floats_of(S);
  std::vector<double> ref_pool(s0.begin(), s0.end());
  std::vector<double> ref_out(std::size_t(p.tokens()) * g.value_dim(), 0.0);
  const std::size_t head = std::size_t(g.nv) * g.dk * g.dv;
  for (int b = 0; b < p.batch(); ++b) {
    std::vector<double> s(ref_pool.begin() + b * head, ref_pool.begin() + (b + 1) * head);
    gdn_ref::forward(g, p.host, decay, beta, int(p.offsets[b]), int(p.offsets[b + 1]), s, ref_out);
    std::copy(s.begin(), s.end(), ref_pool.begin() + b * head);
  }
  if (is_bf16<StateT>)
    for (double& v : ref_pool) v = gdn_ref::round_to_bf16(v);
  const auto out = make_out_as<ActT>(p);
  fwd(upload_as<ActT>(h), to_device(iota_u32(p.batch())), S, out);
  space.fence();
  const double out_err = rel_err(floats_2d(out), ref_out);
  const double state_err = rel_err(floats_of(S), ref_pool);
  EXPECT_LE(out_err, is_bf16<ActT> ? 4e-3 : 2e-5) << "outputs";
  EXPECT_LE(state_err, is_bf16<StateT> ? 1e-2 : 2e-5) << "state";
}

TEST(Activations, Bf16AgreesWithFloat64Reference) {
  vs_reference<gdn::bf16, float>(Form::Given);
  vs_reference<gdn::bf16, gdn::bf16>(Form::Given);
}
TEST(Gates, AgreeWithFloat64Reference) {
  vs_reference<float, float>(Form::Gates);
  vs_reference<float, gdn::bf16>(Form::Gates);
  vs_reference<gdn::bf16, float>(Form::Gates);
}

// ---------------------------------------------------------------------------
// bf16 activations are float activations on the widened values with the
// output rounded to nearest even: the same state and ring bits, and
// out_bf16 == bf16(out_float) element for element.
template <class StateT>
void bf16_is_widened_float(Form form) {
  SCOPED_TRACE(std::string(form_name(form)) + (is_bf16<StateT> ? ", bf16" : ", float") + " state");
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const Host h = make_host(cfg, {C + 3, 0, 5, 2 * C}, 31, form, true);
  const auto slots = to_device(iota_u32(h.p.batch()));
  const auto S0 = make_state<StateT>(h.p.batch(), cfg, 32);
  const int stride = int(gdn::ring_record_elements(64, 64, 2));
  const auto df = upload_as<float>(h);
  const auto db = upload_as<gdn::bf16>(h);
  auto Sf = clone(S0), Sb = clone(S0);
  const auto of = make_out_as<float>(h.p);
  const auto ob = make_out_as<gdn::bf16>(h.p);
  fwd(df, slots, Sf, of);
  fwd(db, slots, Sb, ob);
  auto Vf = clone(S0), Vb = clone(S0);
  const auto rf = make_ring<float>(h.p.batch(), cfg, 2 * C, stride);
  const auto rb = make_ring<float>(h.p.batch(), cfg, 2 * C, stride);
  const auto vof = make_out_as<float>(h.p);
  const auto vob = make_out_as<gdn::bf16>(h.p);
  verify(df, slots, Vf, vof, slots, rf);
  verify(db, slots, Vb, vob, slots, rb);
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(Sf), bytes_of(Sb))) << "forward state";
  EXPECT_TRUE(same_bytes(bytes_of(rf), bytes_of(rb))) << "verify ring";
  for (const auto& pr : {std::make_pair(of, ob), std::make_pair(vof, vob)}) {
    std::vector<float> want = floats_2d(pr.first);
    for (float& v : want) v = round_bf16(v);
    EXPECT_TRUE(same_bits(floats_2d(pr.second), want)) << "bf16 out != bf16(float out)";
  }
}

TEST(Activations, Bf16IsFloatOnWidenedValuesWithRoundedOutput) {
  bf16_is_widened_float<float>(Form::Given);
  bf16_is_widened_float<gdn::bf16>(Form::Given);
  bf16_is_widened_float<float>(Form::Gates);
}

// ---------------------------------------------------------------------------
// Raw gates give the results of the decay and beta computed by the formula on
// the host, bit for bit on every backend (exp and log1p are the library's own).
TEST(Gates, SameResultsAsTheFormulaAppliedBeforeTheCall) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const Host raw = make_host(cfg, {C + 7, 3, 0, 9}, 41, Form::Gates, false);
  Host given = raw;
  given.form = Form::Given;
  for (std::size_t th = 0; th < raw.p.host.decay.size(); ++th) {
    given.p.host.decay[th] = kernel_decay(raw, th);
    given.p.host.beta[th] = gdn::Impl::gate_beta(raw.p.host.beta[th]);
  }
  const auto slots = to_device(iota_u32(raw.p.batch()));
  const auto S0 = make_state<float>(raw.p.batch(), cfg, 42);
  auto Sr = clone(S0), Sg = clone(S0);
  const auto orw = make_out_as<float>(raw.p), og = make_out_as<float>(raw.p);
  fwd(upload_as<float>(raw), slots, Sr, orw);
  fwd(upload_as<float>(given), slots, Sg, og);
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(Sr), bytes_of(Sg))) << "state";
  EXPECT_TRUE(same_bits(floats_2d(orw), floats_2d(og))) << "outputs";
}

// The float32 formula against float64 over the whole input range: no
// overflow, no NaN, decay in [0, 1], beta in [0, 1]; relative error of the
// decay within 1e-6 * max(1, exp(A_log) * softplus) (the exponent's error is
// relative, the decay's is that times the exponent).
TEST(Gates, FormulaAgreesWithFloat64OverTheInputRange) {
  int bad = 0;
  double worst_decay = 0, worst_beta = 0;
  for (float x = -120.0f; x <= 120.0f; x += 0.37f) {
    for (float a_log : {-8.0f, -3.0f, -0.5f, 0.0f, 1.0f, 3.0f}) {
      const float d = gdn::Impl::gate_decay(x, a_log, 0.25f);
      const double e = gdn_ref::gate_decay_exponent(x, a_log, 0.25);
      const double want = std::exp(-e);
      const double err = std::abs(double(d) - want) / std::max(want, 1e-300);
      if (!(d >= 0.0f && d <= 1.0f)) ++bad;
      if (want > 1e-30) {  // below that the float result is subnormal or 0
        worst_decay = std::max(worst_decay, err / std::max(1.0, e));
      }
    }
    const float b = gdn::Impl::gate_beta(x);
    const double want_b = gdn_ref::gate_beta(x);
    if (!(b >= 0.0f && b <= 1.0f)) ++bad;
    // Relative, except below 1e-30, where float rounds to a subnormal or 0.
    worst_beta = std::max(worst_beta, std::abs(double(b) - want_b) / (want_b + 1e-30));
  }
  EXPECT_EQ(bad, 0) << "decay or beta outside [0, 1] or NaN";
  EXPECT_LE(worst_decay, 1e-6);
  EXPECT_LE(worst_beta, 1e-6);
  // Infinite raw inputs still give a decay and a beta in range.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(gdn::Impl::gate_decay(inf, 0.0f, 0.0f), 0.0f);
  EXPECT_EQ(gdn::Impl::gate_decay(-inf, 0.0f, 0.0f), 1.0f);
  EXPECT_EQ(gdn::Impl::gate_beta(inf), 1.0f);
  EXPECT_EQ(gdn::Impl::gate_beta(-inf), 0.0f);
}

}  // namespace
}  // namespace gdn_test
