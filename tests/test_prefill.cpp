// recurrence_prefill (docs/api.md): the chunked WY/UT prefill against the float64 reference
// and against the exact path (recurrence_fwd) within the tolerances stated in docs/api.md,
// per precision; rows of every length around the chunk size (1, 63, 64, 65, 200, and empty);
// padding rows; batch invariance; strided layouts; the final state seeding the exact path;
// bad input.
#include "test_support.hpp"

#include <gdn/recurrence_prefill.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gdn_test {
namespace {

using gdn::PrefillPrecision;

constexpr PrefillPrecision kPrecisions[] = {PrefillPrecision::tf32x3, PrefillPrecision::bf16};
const char* precision_name(PrefillPrecision p) {
  return p == PrefillPrecision::bf16 ? "bf16" : "tf32x3";
}

// The bounds of docs/api.md, as max |x - ref| / max |ref| over a call's outputs or its final
// states, with float activations and a float32 state pool. The host computes in float32
// whatever the precision, CUDA runs the products in `p`.
double tolerance(PrefillPrecision p) {
  if (std::is_same<ExecSpace::memory_space, Kokkos::HostSpace>::value) return 2e-5;
  return p == PrefillPrecision::bf16 ? 2e-2 : 1e-4;
}
// A bf16 pool adds its rounding of the stored state (2^-9 relative) to the state's bound.
template <class StateT>
double state_tolerance(PrefillPrecision p) {
  return std::is_same<StateT, gdn::bf16>::value ? tolerance(p) + 4e-3 : tolerance(p);
}

gdn::PrefillWorkspace<Mem> workspace_for(const Problem& p) {
  return gdn::PrefillWorkspace<Mem>("gdn_test::prefill_ws",
                                    gdn::prefill_workspace_bytes(p.cfg, p.tokens(), p.batch()));
}

// The prefill of p's rows from pool S (rows `slots`); returns out [tokens][value_dim].
template <class StateT>
std::vector<float> prefill(const Problem& p, const std::vector<std::uint32_t>& slots,
                           const Pool<StateT>& S, PrefillPrecision prec) {
  const ExecSpace space;
  const DeviceInputs d = upload(p);
  Strided2D out = make_out(p);
  gdn::recurrence_prefill(space, p.cfg, d.in, to_device(slots), S, out.view, workspace_for(p),
                          prec);
  space.fence();
  return read_2d(out);
}

template <class StateT>
std::vector<float> forward(const Problem& p, const std::vector<std::uint32_t>& slots,
                           const Pool<StateT>& S) {
  const ExecSpace space;
  const DeviceInputs d = upload(p);
  Strided2D out = make_out(p);
  gdn::recurrence_fwd(space, p.cfg, d.in, to_device(slots), S, out.view);
  space.fence();
  return read_2d(out);
}

// max |a - b| / max |b| against a float reference
double rel_err_f(const std::vector<float>& a, const std::vector<float>& b) {
  return rel_err(a, std::vector<double>(b.begin(), b.end()));
}

const std::vector<int> kLens = {1, 63, 64, 65, 200, 0, 130};

template <class StateT>
void agrees_with_reference_and_forward(const gdn::HeadConfig& cfg) {
  for (PrefillPrecision prec : kPrecisions) {
    const Problem p = make_problem(cfg, kLens, 5000 + cfg.key_head_dim + cfg.num_key_heads);
    const int B = p.batch();
    std::vector<std::uint32_t> slots(B);
    for (int b = 0; b < B; ++b) slots[b] = std::uint32_t(B - 1 - b);  // not the identity
    const Pool<StateT> S0 = make_state<StateT>(B, cfg, 77);
    const Pool<StateT> S = clone(S0), Sf = clone(S0);
    const std::vector<float> out = prefill(p, slots, S, prec);
    const std::vector<float> out_fwd = forward(p, slots, Sf);
    const std::vector<float> f0 = floats_of(S0);
    std::vector<double> pool(f0.begin(), f0.end());
    const std::vector<double> ref = reference_run(p, slots, pool);
    const double e_out = rel_err(out, ref), e_state = rel_err(floats_of(S), pool);
    const double f_out = rel_err_f(out, out_fwd), f_state = rel_err_f(floats_of(S), floats_of(Sf));
    std::printf(
        "[ prefill  ] Dk %d G %d state %s %s: vs float64 out %.2e state %.2e; vs recurrence_fwd "
        "out %.2e state %.2e\n",
        cfg.key_head_dim, cfg.group_size(), std::is_same<StateT, float>::value ? "float" : "bf16",
        precision_name(prec), e_out, e_state, f_out, f_state);
    EXPECT_LE(e_out, tolerance(prec)) << precision_name(prec);
    EXPECT_LE(e_state, state_tolerance<StateT>(prec)) << precision_name(prec);
    EXPECT_LE(f_out, tolerance(prec)) << precision_name(prec);
    EXPECT_LE(f_state, state_tolerance<StateT>(prec)) << precision_name(prec);
    // Every real token's outputs were written (the poison fill is a NaN).
    for (float v : out) ASSERT_FALSE(std::isnan(v));
  }
}

// On CUDA the state kernel runs 4-warp blocks when its B x nv x Dk / 32 blocks fit the SMs,
// 8-warp blocks otherwise: the last config of each test (7 rows x 8 or 16 value heads: 224
// such blocks, more than the 132 SMs of an H100 or H200) takes the 8-warp blocks.
TEST(Prefill, AgreesWithFloat64AndForwardD128) {
  agrees_with_reference_and_forward<float>(heads(1, 2, 128));
  agrees_with_reference_and_forward<float>(heads(2, 2, 128));
  agrees_with_reference_and_forward<float>(heads(4, 8, 128));
}
TEST(Prefill, AgreesWithFloat64AndForwardD64) {
  agrees_with_reference_and_forward<float>(heads(1, 2, 64));
  agrees_with_reference_and_forward<float>(heads(2, 2, 64));
  agrees_with_reference_and_forward<float>(heads(8, 16, 64));
}
TEST(Prefill, AgreesWithFloat64AndForwardBf16State) {
  agrees_with_reference_and_forward<gdn::bf16>(heads(1, 2, 128));
}

// A row alone against the same row among others (before and after it, longer and shorter,
// sharing none of its chunk boundaries): the same bits in out and state.
TEST(Prefill, BatchInvariance) {
  const gdn::HeadConfig cfg = heads(1, 2, 128);
  for (PrefillPrecision prec : kPrecisions) {
    const Problem p = make_problem(cfg, {37, 150, 3, 90}, 6001);
    const Pool<float> S0 = make_state<float>(4, cfg, 78);
    const Pool<float> S = clone(S0);
    const std::vector<float> out = prefill(p, {0, 1, 2, 3}, S, prec);
    const Problem alone = sub_problem(p, {0, p.offsets[1], 0, 0}, {0, 150, 0, 0});
    const Pool<float> S1 = clone(S0);
    const std::vector<float> out1 = prefill(alone, {0, 1, 2, 3}, S1, prec);
    const std::size_t W = cfg.value_dim();
    const std::vector<float> row(out.begin() + p.offsets[1] * W, out.begin() + p.offsets[2] * W);
    EXPECT_TRUE(same_bits(row, out1)) << precision_name(prec);
    const std::vector<float> s = floats_of(S), s1 = floats_of(S1);
    const std::size_t head = std::size_t(cfg.num_value_heads) * 128 * 128;
    EXPECT_TRUE(same_bits(std::vector<float>(s.begin() + head, s.begin() + 2 * head),
                          std::vector<float>(s1.begin() + head, s1.begin() + 2 * head)))
        << precision_name(prec);
    // The rows with no tokens in `alone` kept their state.
    const std::vector<float> s0 = floats_of(S0);
    EXPECT_TRUE(same_bits(std::vector<float>(s1.begin(), s1.begin() + head),
                          std::vector<float>(s0.begin(), s0.begin() + head)));
  }
}

// Padding rows (gdn::pad_slot) among real ones: the real rows get the bits of the call
// without them, the padding rows' outputs stay the poison fill, no other pool row changes.
TEST(Prefill, PaddingRowsAreSkipped) {
  const gdn::HeadConfig cfg = heads(1, 2, 64);
  const Problem p = make_problem(cfg, {70, 5, 64, 0, 129}, 6101);
  const std::uint32_t pad = gdn::pad_slot;
  const std::vector<std::uint32_t> slots = {pad, 2, pad, 0, 1};
  const Pool<float> S0 = make_state<float>(4, cfg, 79);
  const Pool<float> S = clone(S0);
  const std::vector<float> out = prefill(p, slots, S, PrefillPrecision::tf32x3);
  // Without the padding rows.
  Problem real =
      sub_problem(p, {0, p.offsets[1], 0, p.offsets[3], p.offsets[4]}, {0, 5, 0, 0, 129});
  real.offsets = {0, 5, 5, 134};  // the real rows alone: 5, 0 and 129 tokens
  const Pool<float> S1 = clone(S0);
  const std::vector<float> out1 = prefill(real, {2, 0, 1}, S1, PrefillPrecision::tf32x3);
  EXPECT_TRUE(same_bits(floats_of(S), floats_of(S1)));
  const std::size_t W = cfg.value_dim();
  std::vector<float> real_rows;
  real_rows.insert(real_rows.end(), out.begin() + p.offsets[1] * W, out.begin() + p.offsets[2] * W);
  real_rows.insert(real_rows.end(), out.begin() + p.offsets[4] * W, out.begin() + p.offsets[5] * W);
  EXPECT_TRUE(same_bits(real_rows, out1));
  for (int b : {0, 2})
    for (std::size_t e = p.offsets[b] * W; e < p.offsets[b + 1] * W; ++e) {
      std::uint32_t bits;
      std::memcpy(&bits, &out[e], 4);
      ASSERT_EQ(bits, kPoisonF32) << "padding row " << b << " written";
    }
  // The pool row no row uses (3) is untouched.
  const std::size_t head = std::size_t(cfg.num_value_heads) * 64 * 64;
  const std::vector<float> s = floats_of(S), s0 = floats_of(S0);
  EXPECT_TRUE(same_bits(std::vector<float>(s.begin() + 3 * head, s.end()),
                        std::vector<float>(s0.begin() + 3 * head, s0.end())));
}

// The allocating overload gives the bits of the one with a workspace.
TEST(Prefill, WithoutWorkspaceSameBits) {
  const gdn::HeadConfig cfg = heads(1, 2, 64);
  const Problem p = make_problem(cfg, {100, 3}, 6201);
  const Pool<float> S0 = make_state<float>(2, cfg, 80);
  const Pool<float> S = clone(S0), S1 = clone(S0);
  const std::vector<float> out = prefill(p, {0, 1}, S, PrefillPrecision::bf16);
  const ExecSpace space;
  const DeviceInputs d = upload(p);
  Strided2D out1 = make_out(p);
  gdn::recurrence_prefill(space, cfg, d.in, to_device({0u, 1u}), S1, out1.view,
                          PrefillPrecision::bf16);
  EXPECT_TRUE(same_bits(out, read_2d(out1)));
  EXPECT_TRUE(same_bits(floats_of(S), floats_of(S1)));
}

// qkv, the gates and out in each strided layout the API takes (rows padded, transposed, a
// column stride of 2): the bits of the dense call. On CUDA the dense qkv is read by 16-byte
// vectors and the others element by element.
TEST(Prefill, StridedLayoutsSameBits) {
  const gdn::HeadConfig cfg = heads(1, 2, 64);
  const Problem p = make_problem(cfg, {100, 3, 64}, 6211);
  const std::vector<std::uint32_t> slots = {0, 1, 2};
  for (PrefillPrecision prec : kPrecisions) {
    const Pool<float> S0 = make_state<float>(3, cfg, 82);
    const Pool<float> S = clone(S0);
    const std::vector<float> out = prefill(p, slots, S, prec);
    for (Layout layout : {Layout::Padded, Layout::Transposed, Layout::Strided}) {
      const Pool<float> S1 = clone(S0);
      const ExecSpace space;
      const DeviceInputs d = upload(p, layout);
      Strided2D out1 = make_out(p, layout);
      gdn::recurrence_prefill(space, cfg, d.in, to_device(slots), S1, out1.view, workspace_for(p),
                              prec);
      space.fence();
      EXPECT_TRUE(same_bits(out, read_2d(out1)))
          << layout_name(layout) << ' ' << precision_name(prec);
      EXPECT_TRUE(same_bits(floats_of(S), floats_of(S1)))
          << layout_name(layout) << ' ' << precision_name(prec);
    }
  }
}

// Raw gates and bf16 activations: the same agreement with recurrence_fwd on the same inputs.
template <class ActT>
void raw_gates_against_forward() {
  const gdn::HeadConfig cfg = heads(1, 2, 128);
  const Problem p = make_problem(cfg, {65, 200, 1}, 6301);
  const std::size_t T = p.tokens(), nv = cfg.num_value_heads;
  std::mt19937_64 rng(6302);
  std::uniform_real_distribution<float> a(-3.0f, 2.0f), bb(-4.0f, 4.0f), alog(-3.0f, 0.5f),
      bias(-1.0f, 1.0f);
  using Dense = Kokkos::View<ActT**, Kokkos::LayoutRight, Mem>;
  const auto dev = [](std::size_t r, std::size_t c, const std::function<float(std::size_t)>& f) {
    Dense v("gdn_test::act", r, c);
    auto h = Kokkos::create_mirror(v);
    for (std::size_t i = 0; i < r * c; ++i) h.data()[i] = storage_from_float<ActT>(f(i));
    Kokkos::deep_copy(v, h);
    return v;
  };
  const Dense qkv = dev(T, cfg.conv_dim(), [&](std::size_t i) { return p.host.qkv[i]; });
  const Dense ga = dev(T, nv, [&](std::size_t) { return a(rng); });
  const Dense gb = dev(T, nv, [&](std::size_t) { return bb(rng); });
  Kokkos::View<float*, Mem> A_log("gdn_test::A_log", nv), dt_bias("gdn_test::dt_bias", nv);
  auto hA = Kokkos::create_mirror(A_log);
  auto hD = Kokkos::create_mirror(dt_bias);
  for (std::size_t h = 0; h < nv; ++h) {
    hA(h) = alog(rng);
    hD(h) = bias(rng);
  }
  Kokkos::deep_copy(A_log, hA);
  Kokkos::deep_copy(dt_bias, hD);
  const Index offsets = to_device(p.offsets);
  const gdn::GateInputs<Mem, ActT> in{qkv, ga, gb, A_log, dt_bias, offsets};
  // The same qkv in rows padded to a stride that is no multiple of 8: on CUDA that is read
  // element by element, the dense qkv by 16-byte vectors; both give the same bits.
  const std::pair<std::size_t, std::size_t> cols(0, cfg.conv_dim());
  Dense wide("gdn_test::qkv_padded", T, cfg.conv_dim() + 3);
  const auto qkv_padded = Kokkos::subview(wide, Kokkos::ALL, cols);
  Kokkos::deep_copy(qkv_padded, qkv);
  const gdn::GateInputs<Mem, ActT> in_padded{qkv_padded, ga, gb, A_log, dt_bias, offsets};
  const ExecSpace space;
  for (PrefillPrecision prec : kPrecisions) {
    const Pool<float> S0 = make_state<float>(3, cfg, 81);
    const Pool<float> S = clone(S0), Sf = clone(S0), Sp = clone(S0);
    Dense out("gdn_test::out", T, cfg.value_dim()), out_f("gdn_test::out", T, cfg.value_dim()),
        out_p("gdn_test::out", T, cfg.value_dim());
    const Index slots = to_device({0u, 1u, 2u});
    gdn::recurrence_prefill(space, cfg, in, slots, S, out, workspace_for(p), prec);
    gdn::recurrence_prefill(space, cfg, in_padded, slots, Sp, out_p, workspace_for(p), prec);
    gdn::recurrence_fwd(space, cfg, in, slots, Sf, out_f);
    space.fence();
    const auto floats = [](const Dense& v) {
      auto h = Kokkos::create_mirror(v);
      Kokkos::deep_copy(h, v);
      std::vector<float> r(h.size());
      for (std::size_t i = 0; i < r.size(); ++i) r[i] = to_f(h.data()[i]);
      return r;
    };
    EXPECT_TRUE(same_bits(floats(out), floats(out_p))) << "padded qkv " << precision_name(prec);
    EXPECT_TRUE(same_bits(floats_of(S), floats_of(Sp))) << "padded qkv " << precision_name(prec);
    // bf16 outputs: both calls round to bf16 (2^-9 relative each).
    const double tol = tolerance(prec) + (std::is_same<ActT, gdn::bf16>::value ? 8e-3 : 0.0);
    const double e_out = rel_err_f(floats(out), floats(out_f));
    const double e_state = rel_err_f(floats_of(S), floats_of(Sf));
    std::printf(
        "[ prefill  ] raw gates, %s activations, %s: vs recurrence_fwd out %.2e state %.2e\n",
        std::is_same<ActT, float>::value ? "float" : "bf16", precision_name(prec), e_out, e_state);
    EXPECT_LE(e_out, tol);
    EXPECT_LE(e_state, tolerance(prec));
  }
}

TEST(Prefill, RawGatesFloatActivations) { raw_gates_against_forward<float>(); }
TEST(Prefill, RawGatesBf16Activations) { raw_gates_against_forward<gdn::bf16>(); }

// The prefill's final state seeds the exact path: a verify + fold from it equals
// recurrence_fwd from it bit for bit, and prefill + forward stays within the prefill's bound
// of the float64 reference over the whole row.
TEST(Prefill, FinalStateSeedsExactPath) {
  const gdn::HeadConfig cfg = heads(1, 2, 128);
  const Problem whole = make_problem(cfg, {150}, 6401);
  const Problem head = prefix_problem(whole, {130});
  const Problem tail = sub_problem(whole, {130}, {20});
  const ExecSpace space;
  const Pool<float> S0 = make_state<float>(1, cfg, 82);
  const Pool<float> S = clone(S0);
  prefill(head, {0}, S, PrefillPrecision::tf32x3);
  // Exact path from the prefill's state: verify 8 tokens, fold 5, against forward over 5.
  const Pool<float> Sv = clone(S), Sf = clone(S);
  const Problem five = prefix_problem(tail, {5});
  const Problem eight = prefix_problem(tail, {8});
  const int rec = int(gdn::ring_record_elements(128, 128, cfg.group_size()));
  const auto ring = make_ring<float>(1, cfg, 8, rec);
  {
    const DeviceInputs d = upload(eight);
    Strided2D out = make_out(eight);
    const Index zero = to_device({0u});
    gdn::recurrence_verify_ring(space, cfg, d.in, zero, Sv, out.view, zero, ring);
    gdn::state_fold(space, cfg, to_device(1, 1, {0u}), Sv, to_device(1, 1, {0u}), ring,
                    to_device({5u}));
    space.fence();
  }
  forward(five, {0}, Sf);
  EXPECT_TRUE(same_bits(floats_of(Sv), floats_of(Sf)));
  // Prefill then forward over the rest against the float64 reference over the whole row.
  const std::vector<float> out_tail = forward(tail, {0}, S);
  std::vector<double> pool;
  {
    const std::vector<float> f = floats_of(S0);
    pool.assign(f.begin(), f.end());
  }
  const std::vector<double> ref = reference_run(whole, {0}, pool);
  const std::size_t W = cfg.value_dim();
  const std::vector<double> ref_tail(ref.begin() + 130 * W, ref.end());
  EXPECT_LE(rel_err(out_tail, ref_tail), tolerance(PrefillPrecision::tf32x3));
  EXPECT_LE(rel_err(floats_of(S), pool), tolerance(PrefillPrecision::tf32x3));
}

int g_allocations = 0;
void count_allocation(Kokkos::Profiling::SpaceHandle, const char*, const void*, std::uint64_t) {
  ++g_allocations;
}

// With a workspace the call allocates nothing (after a first call, which may grow Kokkos'
// host team scratch), so it can be captured in a CUDA graph; the overload without one
// allocates its workspace (which also shows that the callback counts).
TEST(Prefill, WithWorkspaceAllocatesNothing) {
  const ExecSpace space;
  const gdn::HeadConfig cfg = heads(1, 2, 128);
  const Problem p = make_problem(cfg, {130, 7}, 6601);
  const Index slots = to_device({0u, 1u});
  const Pool<float> S = make_state<float>(2, cfg, 84);
  const DeviceInputs d = upload(p);
  Strided2D out = make_out(p);
  const gdn::PrefillWorkspace<Mem> ws = workspace_for(p);
  for (PrefillPrecision prec : kPrecisions) {
    gdn::recurrence_prefill(space, cfg, d.in, slots, S, out.view, ws, prec);  // warm-up
    space.fence();
    Kokkos::Tools::Experimental::set_allocate_data_callback(count_allocation);
    g_allocations = 0;
    gdn::recurrence_prefill(space, cfg, d.in, slots, S, out.view, ws, prec);
    space.fence();
    const int with_ws = g_allocations;
    gdn::recurrence_prefill(space, cfg, d.in, slots, S, out.view, prec);
    const int without_ws = g_allocations - with_ws;
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    EXPECT_EQ(with_ws, 0) << precision_name(prec);
    EXPECT_GE(without_ws, 1) << precision_name(prec);
  }
}

#if defined(KOKKOS_ENABLE_CUDA)
// With a workspace the call can be captured in a CUDA graph on the space's stream; the
// graph's replay gives the bits of a direct call.
TEST(Prefill, CapturedInACudaGraph) {
  if constexpr (!std::is_same<ExecSpace, Kokkos::Cuda>::value) {
    GTEST_SKIP() << "a CUDA graph needs the Cuda execution space";
  } else {
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
    {
      const Kokkos::Cuda space(stream);
      const gdn::HeadConfig cfg = heads(1, 2, 128);
      const Problem p = make_problem(cfg, {150, 20}, 6701);
      const Index slots = to_device({0u, 1u});
      const Pool<float> S0 = make_state<float>(2, cfg, 85);
      const Pool<float> S1 = clone(S0), S2 = clone(S0);
      const DeviceInputs d = upload(p);
      Strided2D o1 = make_out(p), o2 = make_out(p);
      const gdn::PrefillWorkspace<Mem> ws = workspace_for(p);
      Kokkos::fence();
      gdn::recurrence_prefill(space, cfg, d.in, slots, S1, o1.view, ws, PrefillPrecision::bf16);
      space.fence();
      cudaGraph_t graph = nullptr;
      cudaGraphExec_t exec = nullptr;
      ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), cudaSuccess);
      gdn::recurrence_prefill(space, cfg, d.in, slots, S2, o2.view, ws, PrefillPrecision::bf16);
      ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
      ASSERT_EQ(cudaGraphInstantiateWithFlags(&exec, graph, 0), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
      EXPECT_TRUE(same_bits(read_2d(o1), read_2d(o2)));
      EXPECT_TRUE(same_bits(floats_of(S1), floats_of(S2)));
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    }
    cudaStreamDestroy(stream);
  }
}
#endif

// Bad input: rejected before the launch, naming the argument; nothing written.
TEST(Prefill, RejectsBadInput) {
  const gdn::HeadConfig cfg = heads(1, 2, 64);
  const Problem p = make_problem(cfg, {70, 3}, 6501);
  const ExecSpace space;
  const DeviceInputs d = upload(p);
  Strided2D out = make_out(p);
  const Pool<float> S0 = make_state<float>(2, cfg, 83);
  const Pool<float> S = clone(S0);
  const Index slots = to_device({0u, 1u});
  const std::size_t need = gdn::prefill_workspace_bytes(cfg, p.tokens(), 2);
  ASSERT_GT(need, 0u);
  const auto expect_reject = [&](const char* arg, const auto& call) {
    try {
      call();
      ADD_FAILURE() << "no exception for a bad " << arg;
    } catch (const gdn::InvalidArgument& e) {
      EXPECT_EQ(e.argument(), arg) << e.what();
      EXPECT_EQ(e.function(), "gdn::recurrence_prefill") << e.what();
    }
  };
  gdn::PrefillWorkspace<Mem> small("gdn_test::small_ws", need - 1);
  expect_reject("workspace", [&] {
    gdn::recurrence_prefill(space, cfg, d.in, slots, S, out.view, small, PrefillPrecision::tf32x3);
  });
  gdn::PrefillWorkspace<Mem> ws("gdn_test::ws", need);
  expect_reject("precision", [&] {
    gdn::recurrence_prefill(space, cfg, d.in, slots, S, out.view, ws,
                            static_cast<PrefillPrecision>(7));
  });
  expect_reject("cfg.key_head_dim", [&] {
    gdn::recurrence_prefill(space, heads(1, 2, 96), d.in, slots, S, out.view, ws,
                            PrefillPrecision::bf16);
  });
  Kokkos::View<float**, Mem> narrow("gdn_test::narrow", p.tokens(), cfg.value_dim() - 1);
  expect_reject("out", [&] {
    gdn::recurrence_prefill(space, cfg, d.in, slots, S, narrow, ws, PrefillPrecision::bf16);
  });
  expect_reject("inputs.row_offsets", [&] {  // B = 1 against offsets of 2 rows
    gdn::recurrence_prefill(space, cfg, d.in, to_device({0u}), S, out.view, ws,
                            PrefillPrecision::bf16);
  });
  // The index checking mode: a slot past the pool, two rows on one slot.
  gdn::set_index_checking(true);
  expect_reject("state_slots", [&] {
    gdn::recurrence_prefill(space, cfg, d.in, to_device({0u, 2u}), S, out.view, ws,
                            PrefillPrecision::bf16);
  });
  expect_reject("state_slots", [&] {
    gdn::recurrence_prefill(space, cfg, d.in, to_device({1u, 1u}), S, out.view, ws,
                            PrefillPrecision::bf16);
  });
  gdn::set_index_checking(false);
  EXPECT_TRUE(same_bits(floats_of(S), floats_of(S0)));
  // A workspace of exactly the call's size is accepted.
  EXPECT_NO_THROW(
      gdn::recurrence_prefill(space, cfg, d.in, slots, S, out.view, ws, PrefillPrecision::bf16));
  space.fence();
  try {
    gdn::prefill_workspace_bytes(heads(2, 3, 64), 10, 1);
    ADD_FAILURE() << "no exception for nv % nk != 0";
  } catch (const gdn::InvalidArgument& e) {
    EXPECT_EQ(e.argument(), "cfg.num_value_heads");
  }
}

}  // namespace
}  // namespace gdn_test
