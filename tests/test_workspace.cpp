// The forward with a caller-owned workspace (workspace.hpp): the bits of the
// forward without one, its size checks, and no allocation by the call.
// (Every input form and activation type: test_activations.cpp, Workspace.*.)

#include "test_support.hpp"

#include <Kokkos_Core.hpp>

#include <string>

namespace gdn_test {
namespace {

constexpr int C = gdn::chunk_tokens;
using Bytes = Kokkos::View<std::uint8_t*, Mem>;

struct Result {
  Pool<float> state;
  Strided2D out;
};

// A forward over `p` from `S0` into a fresh state and output, with `ws` or without (null).
Result forward(const Problem& p, const Index& slots, const Pool<float>& S0,
            const gdn::Workspace<Mem>* ws) {
  const ExecSpace space;
  Result r{clone(S0), make_out(p)};
  const DeviceInputs d = upload(p);
  if (ws != nullptr) {
    gdn::recurrence_fwd(space, p.cfg, d.in, slots, r.state, r.out.view, *ws);
  } else {
    gdn::recurrence_fwd(space, p.cfg, d.in, slots, r.state, r.out.view);
  }
  space.fence();
  return r;
}

// Head geometries (G = 1, 2, 3; Dk = 64, 128), rows shorter than, equal to
// and longer than a chunk, empty rows and a padding row; a workspace of
// exactly the size, and a larger raw byte View.
TEST(Workspace, SameBitsAsWithoutAcrossGeometries) {
  const gdn::HeadConfig cfgs[] = {heads(1, 1, 64), heads(2, 4, 64), heads(1, 3, 128),
                                  heads(2, 4, 128)};
  const std::vector<int> lens = {5 * C + 3, 0, 7, C, 2 * C + 1, 1, 3 * C};
  for (const auto& cfg : cfgs) {
    SCOPED_TRACE("nk " + std::to_string(cfg.num_key_heads) + ", nv " +
                 std::to_string(cfg.num_value_heads) + ", D " + std::to_string(cfg.key_head_dim));
    const Problem p = make_problem(cfg, lens, 401 + cfg.num_value_heads + cfg.key_head_dim);
    std::vector<std::uint32_t> slot_list = iota_u32(int(lens.size()));
    slot_list[4] = gdn::pad_slot;  // a padding row: skipped by both passes
    const Index slots = to_device(slot_list);
    const auto S0 = make_state<float>(int(lens.size()), cfg, 402);
    const Result plain = forward(p, slots, S0, nullptr);
    const gdn::Workspace<Mem> exact("gdn_test::ws", cfg, p.tokens(), lens.size());
    EXPECT_EQ(exact.size(), gdn::workspace_bytes(cfg, p.tokens(), lens.size()));
    const gdn::Workspace<Mem> larger(Bytes("gdn_test::ws_bytes", exact.size() + 4096));
    for (const auto* ws : {&exact, &larger}) {
      const Result two_pass = forward(p, slots, S0, ws);
      EXPECT_TRUE(same_bytes(bytes_of(plain.state), bytes_of(two_pass.state))) << "state";
      EXPECT_TRUE(same_bits(read_2d(plain.out), read_2d(two_pass.out))) << "outputs";
    }
  }
}

// Pieces split at multiples of C, each with the workspace, give the one call's bits.
TEST(Workspace, SplitAtChunkMultiplesMatchesOneCall) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 128);
  const Problem p = make_problem(cfg, {4 * C + 9, 3 * C}, 411);
  const Index slots = to_device(iota_u32(2));
  const auto S0 = make_state<float>(2, cfg, 412);
  const Result one = forward(p, slots, S0, nullptr);
  const gdn::Workspace<Mem> ws("gdn_test::ws", cfg, p.tokens(), 2);  // sized for the whole call
  auto S = clone(S0);
  std::vector<float> out(std::size_t(p.tokens()) * cfg.value_dim());
  for (int cut : {0, 2 * C}) {
    std::vector<std::uint32_t> first(2), count(2);
    for (int b = 0; b < 2; ++b) {
      const int lo = std::min(cut, p.len(b)), hi = cut == 0 ? std::min(2 * C, p.len(b)) : p.len(b);
      first[b] = p.offsets[b] + std::uint32_t(lo);
      count[b] = std::uint32_t(hi - lo);
    }
    const Problem q = sub_problem(p, first, count);
    const DeviceInputs dq = upload(q);
    Strided2D o = make_out(q);
    gdn::recurrence_fwd(space, cfg, dq.in, slots, S, o.view, ws);
    const auto h = read_2d(o);
    for (int b = 0; b < 2; ++b)
      for (std::uint32_t t = 0; t < count[b]; ++t)
        std::memcpy(&out[(first[b] + t) * cfg.value_dim()], &h[(q.offsets[b] + t) * cfg.value_dim()],
                    cfg.value_dim() * sizeof(float));
  }
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(one.state), bytes_of(S))) << "state";
  EXPECT_TRUE(same_bits(read_2d(one.out), out)) << "outputs";
}

// A workspace one byte too small, or misaligned, is rejected on the host
// with a message that names it and the bytes needed; nothing is written.
TEST(Workspace, TooSmallOrMisalignedIsRejectedBeforeAnyLaunch) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 128);
  const Problem p = make_problem(cfg, {2 * C + 3, 5}, 421);
  const Index slots = to_device(iota_u32(2));
  const auto S0 = make_state<float>(2, cfg, 422);
  auto S = clone(S0);
  const DeviceInputs d = upload(p);
  Strided2D out = make_out(p);
  Kokkos::deep_copy(out.buf, 0.0f);
  const std::size_t need = gdn::workspace_bytes(cfg, p.tokens(), 2);
  ASSERT_GT(need, 0u);
  const auto message = [&](const gdn::Workspace<Mem>& ws) -> std::string {
    try {
      gdn::recurrence_fwd(space, cfg, d.in, slots, S, out.view, ws);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  const std::string small = message(Bytes("gdn_test::small", need - 1));
  EXPECT_NE(small.find("workspace"), std::string::npos) << small;
  EXPECT_NE(small.find(std::to_string(need)), std::string::npos) << small;
  EXPECT_NE(small.find(std::to_string(need - 1)), std::string::npos) << small;
  EXPECT_NE(message(gdn::Workspace<Mem>()).find("workspace"), std::string::npos);
  const Bytes big("gdn_test::big", need + 16);
  const Bytes shifted = Kokkos::subview(big, std::make_pair(std::size_t(4), need + 4));
  const std::string misaligned = message(shifted);
  EXPECT_NE(misaligned.find("16-byte aligned"), std::string::npos) << misaligned;
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(S0), bytes_of(S))) << "state written despite the rejection";
  const auto o = read_2d(out);
  for (float v : o) ASSERT_EQ(v, 0.0f) << "output written despite the rejection";
  // No tokens: an empty workspace is enough.
  const Problem empty = make_problem(cfg, {0, 0}, 423);
  const gdn::Workspace<Mem> none;
  EXPECT_NO_THROW(forward(empty, slots, S0, &none));
}

// Kokkos Tools' allocation callback counts the allocations of a call.
int g_allocations = 0;
void count_allocation(Kokkos::Profiling::SpaceHandle, const char*, const void*, std::uint64_t) {
  ++g_allocations;
}

// With its workspace (and its other views made beforehand) a forward over
// long rows allocates nothing, so it can be captured in a CUDA graph; so does
// the call without one.
TEST(Workspace, ForwardAllocatesNothing) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 128);
  const Problem p = make_problem(cfg, {6 * C + 1, C, 3}, 431);
  const Index slots = to_device(iota_u32(3));
  auto S = make_state<float>(3, cfg, 432);
  const DeviceInputs d = upload(p);
  Strided2D out = make_out(p);
  const gdn::Workspace<Mem> ws("gdn_test::ws", cfg, p.tokens(), 3);
  space.fence();
  Kokkos::Tools::Experimental::set_allocate_data_callback(count_allocation);
  g_allocations = 0;
  gdn::recurrence_fwd(space, cfg, d.in, slots, S, out.view, ws);
  space.fence();
  const int with_ws = g_allocations;
  g_allocations = 0;
  gdn::recurrence_fwd(space, cfg, d.in, slots, S, out.view);
  space.fence();
  const int without = g_allocations;
  Bytes probe("gdn_test::probe", 16);  // the callback sees allocations at all
  const int probe_count = g_allocations - without;
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  EXPECT_EQ(probe_count, 1) << "the allocation callback is not called";
  EXPECT_EQ(with_ws, 0) << "allocations by the forward with a workspace";
  EXPECT_EQ(without, 0) << "allocations by the forward without one";
}

}  // namespace
}  // namespace gdn_test
