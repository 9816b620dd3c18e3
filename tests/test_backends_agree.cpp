// The same call gives the same bits on the backend under test and on the host
// (docs/design.md section 2, "the canonical order"): verify (outputs, records, the
// states of rows that commit), the forward (outputs, states) and the fold, for
// float and bf16 states, rings and activations, given and raw gates, both head
// dims, G = 1 and G = 2, and rows of one staging pass of the kernel (16
// tokens) beside longer ones. On a host build both runs take the
// host space: the test then checks that two runs agree.

#include <gdn/gdn.hpp>

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace {

using Host = Kokkos::DefaultHostExecutionSpace;

struct Case {
  int nk, nv, d;
  std::vector<int> lens;
  bool bf16_state, bf16_ring, bf16_act, raw_gates;
  std::string name() const {
    std::string s = "nk" + std::to_string(nk) + "_nv" + std::to_string(nv) + "_d" +
                    std::to_string(d) + (bf16_state ? "_bf16state" : "_f32state") +
                    (bf16_ring ? "_bf16ring" : "") + (bf16_act ? "_bf16act" : "") +
                    (raw_gates ? "_rawgates" : "");
    return s;
  }
};

// Inputs of a case on the host, as floats (widened bf16 values where the
// activations are bf16, so both runs see the same values).
struct HostData {
  gdn::HeadConfig cfg{};
  std::vector<std::uint32_t> offsets;
  std::vector<float> qkv, gate, beta, A_log, dt_bias;
  std::vector<float> state;  // [slots][nv][Dk][Dv]
  int tokens = 0, batch = 0;
};

HostData make_data(const Case& c, std::uint64_t seed) {
  HostData h;
  h.cfg = gdn::HeadConfig{c.nk, c.nv, c.d, c.d};
  h.batch = int(c.lens.size());
  h.offsets.assign(1, 0);
  for (int l : c.lens) h.offsets.push_back(h.offsets.back() + std::uint32_t(l));
  h.tokens = int(h.offsets.back());
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> x(-1.0f, 1.0f), dec(0.8f, 1.0f), bet(0.05f, 0.95f),
      raw(-4.0f, 4.0f), st(-0.5f, 0.5f);
  const auto round_act = [&](float v) { return c.bf16_act ? float(gdn::bf16(v)) : v; };
  h.qkv.resize(std::size_t(h.tokens) * h.cfg.conv_dim());
  for (auto& v : h.qkv) v = round_act(x(rng));
  h.gate.resize(std::size_t(h.tokens) * c.nv);
  h.beta.resize(h.gate.size());
  for (auto& v : h.gate) v = round_act(c.raw_gates ? raw(rng) : dec(rng));
  for (auto& v : h.beta) v = round_act(c.raw_gates ? raw(rng) : bet(rng));
  for (int i = 0; i < c.nv; ++i) {
    h.A_log.push_back(raw(rng) * 0.5f);
    h.dt_bias.push_back(raw(rng) * 0.5f);
  }
  h.state.resize(std::size_t(h.batch) * c.nv * c.d * c.d);
  for (auto& v : h.state) v = c.bf16_state ? float(gdn::bf16(st(rng))) : st(rng);
  return h;
}

template <class T>
T cast_to(float v) {
  return T(v);
}

template <class T, class M>
Kokkos::View<T**, Kokkos::LayoutStride, M> matrix(const std::vector<float>& v, std::size_t rows,
                                                  std::size_t cols) {
  Kokkos::View<T**, Kokkos::LayoutRight, M> d("gdn_test::matrix", rows, cols);
  auto h = Kokkos::create_mirror(d);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) h(r, c) = cast_to<T>(v[r * cols + c]);
  Kokkos::deep_copy(d, h);
  return d;
}

template <class M>
Kokkos::View<std::uint32_t*, M> index_view(const std::vector<std::uint32_t>& v) {
  Kokkos::View<std::uint32_t*, M> d("gdn_test::index", v.size());
  auto h = Kokkos::create_mirror(d);
  for (std::size_t i = 0; i < v.size(); ++i) h(i) = v[i];
  Kokkos::deep_copy(d, h);
  return d;
}

template <class M>
Kokkos::View<std::uint32_t**, M> table(const std::vector<std::uint32_t>& v, std::size_t cols) {
  Kokkos::View<std::uint32_t**, M> d("gdn_test::table", 1, cols);
  auto h = Kokkos::create_mirror(d);
  for (std::size_t i = 0; i < cols; ++i) h(0, i) = v[i];
  Kokkos::deep_copy(d, h);
  return d;
}

template <class T, class M>
Kokkos::View<T****, Kokkos::LayoutRight, M> state_pool(const HostData& h) {
  const int nv = h.cfg.num_value_heads, d = h.cfg.key_head_dim;
  Kokkos::View<T****, Kokkos::LayoutRight, M> s("gdn_test::state", h.batch, nv, d, d);
  auto m = Kokkos::create_mirror(s);
  for (std::size_t i = 0; i < h.state.size(); ++i) m.data()[i] = T(h.state[i]);
  Kokkos::deep_copy(s, m);
  return s;
}

template <class T, class M>
Kokkos::View<T****, Kokkos::LayoutRight, M> poisoned_ring(const HostData& h, int ring_len) {
  const int G = h.cfg.group_size(), d = h.cfg.key_head_dim;
  const int stride = int(gdn::ring_record_elements(d, d, G)) + 3;
  Kokkos::View<T****, Kokkos::LayoutRight, M> r(
      Kokkos::view_alloc("gdn_test::ring", Kokkos::WithoutInitializing), h.batch,
      h.cfg.num_key_heads, ring_len, stride);
  auto m = Kokkos::create_mirror(r);
  unsigned char* p = reinterpret_cast<unsigned char*>(m.data());
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (sizeof(T) == 4)
      std::memcpy(p + 4 * i, &gdn_test::kPoisonF32, 4);
    else
      std::memcpy(p + 2 * i, &gdn_test::kPoisonBf16, 2);
  }
  Kokkos::deep_copy(r, m);
  return r;
}

// Everything a case writes, as bytes.
struct Bytes {
  std::vector<unsigned char> verify_out, ring, verify_state, fwd_out, fwd_state, fold_state;
};

constexpr int kRingLen = 16;

// One case on execution space Space: verify, then the fold of a prefix of
// every recording row (from the verify's ring, into a copy of the start
// state), and a forward over the same tokens from the start state.
template <class Space, class StateT, class RingT, class ActT>
Bytes run_case(const HostData& h, bool raw_gates) {
  using M = typename Space::memory_space;
  const Space space;
  const auto& cfg = h.cfg;
  const std::size_t T = std::size_t(h.tokens), nv = cfg.num_value_heads;
  const auto qkv = matrix<ActT, M>(h.qkv, T, cfg.conv_dim());
  const auto gate = matrix<ActT, M>(h.gate, T, nv);
  const auto beta = matrix<ActT, M>(h.beta, T, nv);
  const auto A_log = matrix<float, M>(h.A_log, 1, nv);
  const auto dt_bias = matrix<float, M>(h.dt_bias, 1, nv);
  const auto offsets = index_view<M>(h.offsets);
  const auto slots = index_view<M>(gdn_test::iota_u32(h.batch));
  Bytes r;
  const auto run = [&](auto&& call) {
    if (raw_gates) {
      gdn::GateInputs<M, ActT> in;
      in.qkv = qkv;
      in.a = gate;
      in.b = beta;
      in.A_log = Kokkos::subview(A_log, 0, Kokkos::ALL());
      in.dt_bias = Kokkos::subview(dt_bias, 0, Kokkos::ALL());
      in.row_offsets = offsets;
      call(in);
    } else {
      gdn::TokenInputs<M, ActT> in;
      in.qkv = qkv;
      in.decay = gate;
      in.beta = beta;
      in.row_offsets = offsets;
      call(in);
    }
  };
  // verify
  auto state = state_pool<StateT, M>(h);
  auto ring = poisoned_ring<RingT, M>(h, kRingLen);
  auto out = matrix<ActT, M>(std::vector<float>(T * cfg.value_dim(), -7.0f), T, cfg.value_dim());
  run([&](const auto& in) {
    gdn::recurrence_verify_ring(space, cfg, in, slots, state, out, slots, ring);
  });
  space.fence();
  r.verify_out = gdn_test::bytes_of(out);
  r.ring = gdn_test::bytes_of(ring);
  r.verify_state = gdn_test::bytes_of(state);
  // fold of n = 1 + b % len records of every recording row, into the start state
  std::vector<std::uint32_t> accepted(h.batch);
  for (int b = 0; b < h.batch; ++b) {
    const int len = int(h.offsets[b + 1] - h.offsets[b]);
    accepted[b] = len > 0 && len <= kRingLen ? std::uint32_t(1 + b % len) : 0u;
  }
  auto fold_state = state_pool<StateT, M>(h);
  const auto rows = table<M>(gdn_test::iota_u32(h.batch), h.batch);
  const auto na = index_view<M>(accepted);
  gdn::state_fold(space, cfg, rows, fold_state, rows, ring, na);
  space.fence();
  r.fold_state = gdn_test::bytes_of(fold_state);
  // forward
  auto fwd_state = state_pool<StateT, M>(h);
  auto fwd_out =
      matrix<ActT, M>(std::vector<float>(T * cfg.value_dim(), -7.0f), T, cfg.value_dim());
  run([&](const auto& in) { gdn::recurrence_fwd(space, cfg, in, slots, fwd_state, fwd_out); });
  space.fence();
  r.fwd_out = gdn_test::bytes_of(fwd_out);
  r.fwd_state = gdn_test::bytes_of(fwd_state);
  return r;
}

template <class StateT, class RingT, class ActT>
void compare(const Case& c) {
  const HostData h = make_data(c, 1234u + std::uint64_t(c.d) * 7u + std::uint64_t(c.nv));
  const Bytes dev = run_case<gdn_test::ExecSpace, StateT, RingT, ActT>(h, c.raw_gates);
  const Bytes host = run_case<Host, StateT, RingT, ActT>(h, c.raw_gates);
  EXPECT_TRUE(gdn_test::same_bytes(dev.verify_out, host.verify_out)) << c.name() << " verify out";
  EXPECT_TRUE(gdn_test::same_bytes(dev.ring, host.ring)) << c.name() << " ring";
  EXPECT_TRUE(gdn_test::same_bytes(dev.verify_state, host.verify_state))
      << c.name() << " verify state";
  EXPECT_TRUE(gdn_test::same_bytes(dev.fold_state, host.fold_state)) << c.name() << " fold state";
  EXPECT_TRUE(gdn_test::same_bytes(dev.fwd_out, host.fwd_out)) << c.name() << " forward out";
  EXPECT_TRUE(gdn_test::same_bytes(dev.fwd_state, host.fwd_state)) << c.name() << " forward state";
  // The forward and verify write the same outputs; the run compares something.
  EXPECT_TRUE(gdn_test::same_bytes(dev.fwd_out, dev.verify_out)) << c.name() << " verify == fwd";
}

void compare_case(const Case& c) {
  using gdn::bf16;
  if (c.bf16_act) {
    if (c.bf16_state)
      c.bf16_ring ? compare<bf16, bf16, bf16>(c) : compare<bf16, float, bf16>(c);
    else
      c.bf16_ring ? compare<float, bf16, bf16>(c) : compare<float, float, bf16>(c);
  } else {
    if (c.bf16_state)
      c.bf16_ring ? compare<bf16, bf16, float>(c) : compare<bf16, float, float>(c);
    else
      c.bf16_ring ? compare<float, bf16, float>(c) : compare<float, float, float>(c);
  }
}

// Rows of one staging pass or less (T = 1, 4, 16, an empty one) beside longer rows
// (17: recorded over two passes; 40: longer than RING_LEN, committed).
const std::vector<int> kLens = {1, 4, 16, 0, 7, 17, 40, 2};

TEST(BackendsAgree, GivenGates) {
  for (int d : {128, 64}) {
    for (int nv : {2, 4}) {
      for (bool bf16_state : {false, true}) {
        compare_case(Case{2, nv, d, kLens, bf16_state, false, false, false});
      }
    }
  }
}

TEST(BackendsAgree, Bf16RingAndActivations) {
  compare_case(Case{2, 4, 128, kLens, false, true, false, false});
  compare_case(Case{2, 4, 128, kLens, true, false, true, false});
  compare_case(Case{1, 2, 64, kLens, false, false, true, false});
}

TEST(BackendsAgree, RawGates) {
  compare_case(Case{2, 4, 128, kLens, false, false, false, true});
  compare_case(Case{2, 4, 128, kLens, true, false, true, true});
  compare_case(Case{2, 2, 64, kLens, false, false, false, true});
}

}  // namespace
