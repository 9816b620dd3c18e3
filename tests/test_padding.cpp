// Padding rows (gdn::pad_slot, docs/design.md section 3): a row whose state slot, ring slot or fold
// table entry is gdn::pad_slot is skipped. Each test runs a batch with padding rows interleaved
// (first, in the middle, last; empty and with tokens, shorter and longer than a staging pass of 16
// tokens and than RING_LEN) and the same call without them, and compares byte for byte: every pool
// (state, ring, conv state, conv ring) equal to the call without the padding rows, the real rows'
// `out` equal, the padding rows' `out` still the poison it was filled with. The padding rows' other
// index points at a row that would change if the row were not skipped. Each padded call runs
// with the index checking mode off and on (it accepts the sentinel).
#include "test_support.hpp"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace gdn_test {
namespace {

constexpr std::uint32_t kPad = gdn::pad_slot;

template <class T>
using Pool3 = Kokkos::View<T***, Kokkos::LayoutRight, Mem>;  // conv state or conv ring

// One row of a batch: its length, state slot and ring slot (either may be kPad).
struct Row {
  int len;
  std::uint32_t slot;
  std::uint32_t ring_row;
};

bool is_padding(const Row& r, bool with_ring) {
  return r.slot == kPad || (with_ring && r.ring_row == kPad);
}

std::vector<int> lengths(const std::vector<Row>& rows) {
  std::vector<int> l;
  for (const Row& r : rows) l.push_back(r.len);
  return l;
}

// Turns the index checking mode on for one scope.
struct Checking {
  explicit Checking(bool on) { gdn::set_index_checking(on); }
  ~Checking() { gdn::set_index_checking(false); }
};

// The real rows of a batch: the sub-problem without the padding rows, and their indices.
struct Unpadded {
  Problem p;
  std::vector<std::uint32_t> slots, ring_rows;
  std::vector<int> row;  // the padded batch's row of each real row
};

Unpadded unpadded(const Problem& p, const std::vector<Row>& rows, bool with_ring) {
  Unpadded u;
  // sub_problem takes a (first, count) per row of p: the padding rows get none of their tokens.
  std::vector<std::uint32_t> first(p.batch(), 0), count(p.batch(), 0);
  for (int b = 0; b < int(rows.size()); ++b) {
    if (is_padding(rows[b], with_ring)) continue;
    first[b] = p.offsets[b];
    count[b] = std::uint32_t(rows[b].len);
    u.slots.push_back(rows[b].slot);
    u.ring_rows.push_back(rows[b].ring_row);
    u.row.push_back(b);
  }
  u.p = sub_problem(p, first, count);
  // ... then the padding rows (now empty) are dropped from the offsets.
  u.p.offsets.assign(1, 0);
  for (int b : u.row) u.p.offsets.push_back(u.p.offsets.back() + count[b]);
  return u;
}

// `out` of the padded call against the call without the padding rows: the real rows' rows
// bit for bit, every value of a padding row's tokens still the poison fill.
::testing::AssertionResult outputs_match(const std::vector<float>& padded,
                                         const std::vector<float>& plain,
                                         const std::vector<std::uint32_t>& offsets,
                                         const std::vector<Row>& rows, bool with_ring,
                                         std::size_t width) {
  std::size_t next = 0;  // the next real token in `plain`
  for (int b = 0; b < int(rows.size()); ++b) {
    for (std::uint32_t t = offsets[b]; t < offsets[b + 1]; ++t) {
      for (std::size_t c = 0; c < width; ++c) {
        std::uint32_t got = 0;
        std::memcpy(&got, &padded[t * width + c], 4);
        if (is_padding(rows[b], with_ring)) {
          if (got != kPoisonF32)
            return ::testing::AssertionFailure()
                   << "padding row " << b << ": out(" << t << ", " << c << ") was written";
        } else {
          std::uint32_t want = 0;
          std::memcpy(&want, &plain[next * width + c], 4);
          if (got != want)
            return ::testing::AssertionFailure()
                   << "row " << b << ": out(" << t << ", " << c << ") differs from the call "
                   << "without the padding rows";
        }
      }
      if (!is_padding(rows[b], with_ring)) ++next;
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<std::uint32_t> slots_of(const std::vector<Row>& rows) {
  std::vector<std::uint32_t> s;
  for (const Row& r : rows) s.push_back(r.slot);
  return s;
}
std::vector<std::uint32_t> ring_rows_of(const std::vector<Row>& rows) {
  std::vector<std::uint32_t> s;
  for (const Row& r : rows) s.push_back(r.ring_row);
  return s;
}

// ---------------------------------------------------------------------------
// Forward and verify.

// The indices of `rows` with every padding entry replaced by `bad` (kPad: as they are).
std::vector<std::uint32_t> with_bad(std::vector<std::uint32_t> v, std::uint32_t bad) {
  for (std::uint32_t& x : v) x = x == kPad ? bad : x;
  return v;
}

// A forward or (`verify`) a verify over `rows` against the same call over the real rows.
// `bad` != kPad: the padding entries are that index instead, out of range of their pool
// (docs/design.md, "Bad input": no index reaches outside its pool): with the checking mode off the
// rows are skipped as padding rows are, and gdn::skipped_rows counts each once.
template <class StateT>
void recurrence_skips_padding(const gdn::HeadConfig& cfg, const std::vector<Row>& rows, bool verify,
                              int ring_len, std::uint64_t seed, std::uint32_t bad = kPad) {
  const ExecSpace space;
  const int pool_rows = 8, ring_pool = 6;
  const int rec =
      int(gdn::ring_record_elements(cfg.key_head_dim, cfg.value_head_dim, cfg.group_size()));
  const Problem p = make_problem(cfg, lengths(rows), seed);
  const Unpadded u = unpadded(p, rows, verify);
  const auto S0 = make_state<StateT>(pool_rows, cfg, seed + 1);
  const auto R0 = make_ring<float>(ring_pool, cfg, verify ? ring_len : 1, rec + 2);  // poison

  // Without the padding rows.
  auto Sb = clone(S0);
  auto Rb = clone(R0);
  const DeviceInputs db = upload(u.p);
  const Strided2D ob = make_out(u.p);
  if (verify) {
    gdn::recurrence_verify_ring(space, cfg, db.in, to_device(u.slots), Sb, ob.view,
                                to_device(u.ring_rows), Rb);
  } else {
    gdn::recurrence_fwd(space, cfg, db.in, to_device(u.slots), Sb, ob.view);
  }
  space.fence();
  const auto plain_out = read_2d(ob);
  EXPECT_FALSE(verify ? same_bytes(bytes_of(Rb), bytes_of(R0))
                      : same_bytes(bytes_of(Sb), bytes_of(S0)))
      << "the call without padding rows changed nothing: the test would prove nothing";

  const DeviceInputs da = upload(p);
  const Index slots = to_device(with_bad(slots_of(rows), bad)),
              ring_rows = to_device(with_bad(ring_rows_of(rows), bad));
  int skipped_rows = 0;
  for (const Row& r : rows) skipped_rows += is_padding(r, verify);
  for (bool checking : {false, true}) {
    if (bad != kPad && checking) continue;  // the checking mode rejects it (test_validation.cpp)
    SCOPED_TRACE(checking ? "index checking on" : "index checking off");
    gdn::reset_skipped_rows(space);
    auto Sa = clone(S0);
    auto Ra = clone(R0);
    const Strided2D oa = make_out(p);  // poison-filled
    {
      const Checking guard(checking);
      if (verify) {
        gdn::recurrence_verify_ring(space, cfg, da.in, slots, Sa, oa.view, ring_rows, Ra);
      } else {
        gdn::recurrence_fwd(space, cfg, da.in, slots, Sa, oa.view);
      }
    }
    space.fence();
    EXPECT_TRUE(same_bytes(bytes_of(Sa), bytes_of(Sb))) << "state pool";
    EXPECT_TRUE(same_bytes(bytes_of(Ra), bytes_of(Rb))) << "ring pool";
    EXPECT_TRUE(outputs_match(read_2d(oa), plain_out, p.offsets, rows, verify,
                              std::size_t(cfg.value_dim())));
    EXPECT_EQ(gdn::skipped_rows(space), bad == kPad ? 0u : unsigned(skipped_rows))
        << "rows counted by gdn::skipped_rows";
  }
}

// Padding rows first, in the middle and last; empty, one token, longer than 16 tokens. Real
// rows: a decode step, a window, a row of several staging passes, an empty row.
const std::vector<Row> kForwardRows = {
    {3, kPad, 0}, {5, 6, 0}, {17, kPad, 0}, {20, 1, 0}, {0, 3, 0},
    {0, kPad, 0}, {1, 4, 0}, {40, kPad, 0}, {2, 5, 0},  {2, kPad, 0},
};

TEST(Padding, ForwardSkipsPaddingRows) {
  recurrence_skips_padding<float>(heads(2, 4, 64), kForwardRows, false, 0, 1100);
}
TEST(Padding, ForwardSkipsPaddingRowsD128Bf16State) {
  recurrence_skips_padding<gdn::bf16>(heads(1, 2, 128), kForwardRows, false, 0, 1110);
}

// Verify, RING_LEN 4. Real rows: recording (length <= 4) and committing (20 > 4). Padding rows
// by the state slot, by the ring slot, or both; the other index of a padding row names a row
// that the row would change if it ran: ring row 5 (unused), state row 2 with 19 tokens (it
// would commit), state row 7 (unused), and ring row 0 of a real row.
const std::vector<Row> kVerifyRows = {
    {2, kPad, kPad}, {3, 6, 0},    {4, kPad, 5}, {20, 1, 1}, {19, 2, kPad},
    {4, 4, 2},       {3, 7, kPad}, {0, 0, 4},    {1, 3, 3},  {1, kPad, 0},
};

TEST(Padding, VerifySkipsPaddingRows) {
  recurrence_skips_padding<float>(heads(2, 4, 64), kVerifyRows, true, 4, 1120);
}
TEST(Padding, VerifySkipsPaddingRowsD128Bf16State) {
  recurrence_skips_padding<gdn::bf16>(heads(1, 2, 128), kVerifyRows, true, 4, 1130);
}

// Indices out of range where the padding entries were (the state pool has 8 rows, the ring 6).
TEST(OutOfRange, ForwardSkipsAndCountsRowsOutsideThePool) {
  recurrence_skips_padding<float>(heads(2, 4, 64), kForwardRows, false, 0, 1150, 8);
  recurrence_skips_padding<gdn::bf16>(heads(1, 2, 128), kForwardRows, false, 0, 1151, 0x7fffffffu);
}
TEST(OutOfRange, VerifySkipsAndCountsRowsOutsideThePools) {
  recurrence_skips_padding<float>(heads(2, 4, 64), kVerifyRows, true, 4, 1160, 9);
  recurrence_skips_padding<gdn::bf16>(heads(1, 2, 128), kVerifyRows, true, 4, 1161, 100);
}

// A row whose end lies past qkv's rows (offsets not checked with the checking mode off) is
// skipped and counted; the rows before it run as without it.
TEST(OutOfRange, RowEndingPastTheInputsIsSkippedAndCounted) {
  const ExecSpace space;
  const auto cfg = heads(1, 2, 64);
  const Problem p = make_problem(cfg, {3, 2}, 1170);
  const DeviceInputs d = upload(p);
  const auto S0 = make_state<float>(2, cfg, 1171);
  auto S_one = clone(S0), S_bad = clone(S0);
  gdn::TokenInputs<Mem> first = d.in;
  first.row_offsets = to_device({0u, 3u});
  const Strided2D o1 = make_out(p), o2 = make_out(p);
  gdn::recurrence_fwd(space, cfg, first, to_device({0u}), S_one, o1.view);
  gdn::TokenInputs<Mem> bad = d.in;
  bad.row_offsets = to_device({0u, 3u, 9u});  // 9 > 5 tokens
  gdn::reset_skipped_rows(space);
  gdn::recurrence_fwd(space, cfg, bad, to_device({0u, 1u}), S_bad, o2.view);
  EXPECT_EQ(gdn::skipped_rows(space), 1u);
  EXPECT_TRUE(same_bytes(bytes_of(S_bad), bytes_of(S_one))) << "state pool";
  EXPECT_TRUE(same_bits(read_2d(o2), read_2d(o1))) << "outputs";
}

// A batch of nothing but padding rows touches nothing.
TEST(Padding, AllRowsPaddingTouchNothing) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const Problem p = make_problem(cfg, {4, 0, 18}, 1140);
  const DeviceInputs d = upload(p);
  const auto S0 = make_state<float>(3, cfg, 1141);
  const auto R0 = make_ring<float>(3, cfg, 4, int(gdn::ring_record_elements(64, 64, 2)));
  auto S = clone(S0);
  auto R = clone(R0);
  const Strided2D out = make_out(p);
  const auto out0 = bytes_of(out.buf);
  const Index pads = to_device({kPad, kPad, kPad});
  for (bool checking : {false, true}) {
    const Checking guard(checking);
    gdn::recurrence_fwd(space, cfg, d.in, pads, S, out.view);
    gdn::recurrence_verify_ring(space, cfg, d.in, pads, S, out.view, pads, R);
    gdn::state_fold(space, cfg, to_device(2, 3, std::vector<std::uint32_t>(6, kPad)), S,
                    to_device(2, 3, std::vector<std::uint32_t>(6, kPad)), R, to_device({1, 2, 3}));
  }
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(S), bytes_of(S0)));
  EXPECT_TRUE(same_bytes(bytes_of(R), bytes_of(R0)));
  EXPECT_TRUE(same_bytes(bytes_of(out.buf), out0));
}

// ---------------------------------------------------------------------------
// The fold, with and without the conv pools.

template <class V>
void fill_random(const V& v, std::uint64_t seed, float lo, float hi) {
  auto h = Kokkos::create_mirror(v);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> x(lo, hi);
  using T = typename V::non_const_value_type;
  for (std::size_t i = 0; i < h.size(); ++i) h.data()[i] = storage_from_float<T>(x(rng));
  Kokkos::deep_copy(v, h);
}

template <class T>
Pool3<T> clone3(const Pool3<T>& a) {
  Pool3<T> b(Kokkos::view_alloc("gdn_test::clone", Kokkos::WithoutInitializing), a.extent(0),
             a.extent(1), a.extent(2));
  Kokkos::deep_copy(b, a);
  return b;
}

// Fold tables [2, 5] with padding entries in either table or both; every other index of a
// padding entry names a row the entry would read or change (state rows 5 and 4 are used by no
// real entry). The call without them: one call per layer over its real entries (each entry's
// bits do not depend on the others).
// `bad` != kPad: the padding entries are that index instead (out of range), run with the
// checking mode off only, and counted by gdn::skipped_rows.
template <class StateT, bool WithConv>
void fold_skips_padding(std::uint64_t seed, std::uint32_t bad = kPad) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const int L = 2, B = 5, ring_len = 4, pool_rows = 9, ring_pool = 6, C = int(cfg.conv_dim());
  const int rec = int(gdn::ring_record_elements(64, 64, 2));
  const std::vector<std::uint32_t> srows = {kPad, 3,    5, 7, kPad,  //
                                            2,    kPad, 6, 4, kPad};
  const std::vector<std::uint32_t> rrows = {0, 1, kPad, 2,    kPad,  //
                                            3, 4, 5,    kPad, kPad};
  const std::vector<std::uint32_t> accepted = {2, 4, 1, 3, 2};
  const auto S0 = make_state<StateT>(pool_rows, cfg, seed);
  Pool<float> ring(Kokkos::view_alloc("gdn_test::ring", Kokkos::WithoutInitializing), ring_pool,
                   cfg.num_key_heads, ring_len, rec);
  fill_random(ring, seed + 1, 0.5f, 1.0f);  // keys, delta factors and decays alike
  Pool3<float> C0(Kokkos::view_alloc("gdn_test::conv_state", Kokkos::WithoutInitializing),
                  pool_rows, C, 3);
  Pool3<float> conv_ring(Kokkos::view_alloc("gdn_test::conv_ring", Kokkos::WithoutInitializing),
                         ring_pool, ring_len, C);
  fill_random(C0, seed + 2, -1.0f, 1.0f);
  fill_random(conv_ring, seed + 3, -1.0f, 1.0f);

  const auto fold = [&](const Table& s, auto& state, const Table& r, const Index& n,
                        const Pool3<float>& conv_state) {
    if constexpr (WithConv) {
      gdn::state_fold(space, cfg, s, state, r, ring, n,
                      gdn::ConvFold<Mem, float>{conv_state, conv_ring});
    } else {
      (void)conv_state;
      gdn::state_fold(space, cfg, s, state, r, ring, n);
    }
  };

  auto Sb = clone(S0);
  auto Cb = clone3(C0);
  for (int l = 0; l < L; ++l) {
    std::vector<std::uint32_t> s, r, n;
    for (int b = 0; b < B; ++b) {
      if (srows[l * B + b] == kPad || rrows[l * B + b] == kPad) continue;
      s.push_back(srows[l * B + b]);
      r.push_back(rrows[l * B + b]);
      n.push_back(accepted[b]);
    }
    fold(to_device(1, s.size(), s), Sb, to_device(1, r.size(), r), to_device(n), Cb);
  }
  space.fence();
  EXPECT_FALSE(same_bytes(bytes_of(Sb), bytes_of(S0))) << "the fold without padding did nothing";

  unsigned entries = 0;
  for (std::size_t e = 0; e < srows.size(); ++e) entries += srows[e] == kPad || rrows[e] == kPad;
  for (bool checking : {false, true}) {
    if (bad != kPad && checking) continue;  // the checking mode rejects it
    SCOPED_TRACE(checking ? "index checking on" : "index checking off");
    auto Sa = clone(S0);
    auto Ca = clone3(C0);
    gdn::reset_skipped_rows(space);
    {
      const Checking guard(checking);
      fold(to_device(L, B, with_bad(srows, bad)), Sa, to_device(L, B, with_bad(rrows, bad)),
           to_device(accepted), Ca);
    }
    space.fence();
    EXPECT_TRUE(same_bytes(bytes_of(Sa), bytes_of(Sb))) << "state pool";
    EXPECT_TRUE(same_bytes(bytes_of(Ca), bytes_of(Cb))) << "conv state pool";
    EXPECT_EQ(gdn::skipped_rows(space), bad == kPad ? 0u : entries) << "gdn::skipped_rows";
  }
}

TEST(Padding, FoldSkipsPaddingEntries) { fold_skips_padding<float, false>(1150); }
TEST(Padding, FoldSkipsPaddingEntriesBf16State) { fold_skips_padding<gdn::bf16, false>(1160); }
TEST(Padding, FoldWithConvSkipsPaddingEntries) { fold_skips_padding<float, true>(1170); }
TEST(OutOfRange, FoldSkipsAndCountsEntriesOutsideThePools) {
  fold_skips_padding<float, false>(1180, 9);  // the state pool has 9 rows, the ring 6
  fold_skips_padding<gdn::bf16, true>(1181, 1000);
}

// ---------------------------------------------------------------------------
// conv1d_fwd and conv1d_verify_ring.

// The [tokens, C] host rows of the real rows' tokens.
std::vector<float> real_tokens(const std::vector<float>& x, const std::vector<std::uint32_t>& off,
                               const std::vector<Row>& rows, bool with_ring, std::size_t C) {
  std::vector<float> r;
  for (int b = 0; b < int(rows.size()); ++b) {
    if (is_padding(rows[b], with_ring)) continue;
    r.insert(r.end(), x.begin() + off[b] * C, x.begin() + off[b + 1] * C);
  }
  return r;
}

std::vector<std::uint32_t> offsets_of(const std::vector<int>& lens) {
  std::vector<std::uint32_t> off(1, 0);
  for (int l : lens) off.push_back(off.back() + std::uint32_t(l));
  return off;
}

// `bad` != kPad: the padding entries are that index instead (out of range), run with the
// checking mode off only, and counted by gdn::skipped_rows.
void conv_skips_padding(const std::vector<Row>& rows, bool verify, std::uint64_t seed,
                        std::uint32_t bad = kPad) {
  const ExecSpace space;
  const auto cfg = heads(1, 2, 64);
  const int C = int(cfg.conv_dim()), W = 4, ring_len = 4, pool_rows = 8, ring_pool = 6;
  const std::vector<std::uint32_t> off = offsets_of(lengths(rows));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(std::size_t(off.back()) * C);
  for (float& v : x) v = u(rng);
  Kokkos::View<float**, Kokkos::LayoutRight, Mem> weight("gdn_test::weight", C, W);
  Kokkos::View<float*, Mem> bias("gdn_test::bias", C);
  fill_random(weight, seed + 1, -0.6f, 0.6f);
  fill_random(bias, seed + 2, -0.3f, 0.3f);
  Pool3<float> C0(Kokkos::view_alloc("gdn_test::conv_state", Kokkos::WithoutInitializing),
                  pool_rows, C, W - 1);
  fill_random(C0, seed + 3, -1.0f, 1.0f);
  Pool3<float> R0(Kokkos::view_alloc("gdn_test::conv_ring", Kokkos::WithoutInitializing), ring_pool,
                  ring_len, C);
  {
    float poison;
    std::memcpy(&poison, &kPoisonF32, 4);
    Kokkos::deep_copy(R0, poison);
  }
  // One call over a batch: tokens `xs`, offsets, slots.
  const auto call = [&](const std::vector<float>& xs, const std::vector<std::uint32_t>& offsets,
                        const std::vector<std::uint32_t>& slots,
                        const std::vector<std::uint32_t>& ring_rows, const Pool3<float>& state,
                        const Pool3<float>& conv_ring) {
    const std::size_t T = offsets.back();
    const Strided2D q = make_2d(T, C, Layout::Dense, xs.data());
    const Strided2D out = make_2d(T, C, Layout::Dense, nullptr);  // poison
    gdn::ConvInputs<Mem, float> in;
    in.qkv = q.view;
    in.weight = weight;
    in.bias = bias;
    in.row_offsets = to_device(offsets);
    if (verify) {
      gdn::conv1d_verify_ring(space, cfg, in, to_device(slots), state, out.view,
                              to_device(ring_rows), conv_ring);
    } else {
      gdn::conv1d_fwd(space, cfg, in, to_device(slots), state, out.view);
    }
    space.fence();
    return read_2d(out);
  };

  std::vector<int> real_lens;
  std::vector<std::uint32_t> real_slots, real_rings;
  for (const Row& r : rows) {
    if (is_padding(r, verify)) continue;
    real_lens.push_back(r.len);
    real_slots.push_back(r.slot);
    real_rings.push_back(r.ring_row);
  }
  auto Cb = clone3(C0);
  auto Rb = clone3(R0);
  const auto plain = call(real_tokens(x, off, rows, verify, C), offsets_of(real_lens), real_slots,
                          real_rings, Cb, Rb);
  EXPECT_FALSE(same_bytes(bytes_of(verify ? Rb : Cb), bytes_of(verify ? R0 : C0)))
      << "the call without padding rows changed nothing";
  unsigned skipped = 0;
  for (const Row& r : rows) skipped += is_padding(r, verify);
  for (bool checking : {false, true}) {
    if (bad != kPad && checking) continue;  // the checking mode rejects it
    SCOPED_TRACE(checking ? "index checking on" : "index checking off");
    auto Ca = clone3(C0);
    auto Ra = clone3(R0);
    std::vector<float> padded;
    gdn::reset_skipped_rows(space);
    {
      const Checking guard(checking);
      padded =
          call(x, off, with_bad(slots_of(rows), bad), with_bad(ring_rows_of(rows), bad), Ca, Ra);
    }
    EXPECT_EQ(gdn::skipped_rows(space), bad == kPad ? 0u : skipped) << "gdn::skipped_rows";
    EXPECT_TRUE(same_bytes(bytes_of(Ca), bytes_of(Cb))) << "conv state pool";
    EXPECT_TRUE(same_bytes(bytes_of(Ra), bytes_of(Rb))) << "conv ring pool";
    EXPECT_TRUE(outputs_match(padded, plain, off, rows, verify, std::size_t(C)));
  }
}

TEST(Padding, ConvForwardSkipsPaddingRows) { conv_skips_padding(kForwardRows, false, 1180); }
TEST(Padding, ConvVerifySkipsPaddingRows) { conv_skips_padding(kVerifyRows, true, 1190); }
TEST(OutOfRange, ConvSkipsAndCountsRowsOutsideThePools) {
  conv_skips_padding(kForwardRows, false, 1200, 8);  // conv state pool: 8 rows, conv ring: 6
  conv_skips_padding(kVerifyRows, true, 1210, 8);
}

// ---------------------------------------------------------------------------
// The checking mode accepts the sentinel and nothing else out of range.

TEST(Padding, SentinelIsInt32MinusOne) {
  static_assert(gdn::pad_slot == 0xFFFFFFFFu, "docs/design.md: pad_slot = 0xFFFFFFFF");
  EXPECT_EQ(gdn::pad_slot, static_cast<std::uint32_t>(std::int32_t(-1)));
}

TEST(Padding, CheckingRejectsEveryOtherOutOfRangeIndex) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const Problem p = make_problem(cfg, {3, 2, 4}, 1200);
  const DeviceInputs d = upload(p);
  auto S = make_state<float>(4, cfg, 1201);
  auto R = make_ring<float>(3, cfg, 4, int(gdn::ring_record_elements(64, 64, 2)));
  const Strided2D out = make_out(p);
  const Checking guard(true);
  const auto expect_rejected = [](const char* argument, const std::string& value, auto&& call) {
    try {
      call();
      ADD_FAILURE() << argument << " = " << value << " was accepted";
    } catch (const gdn::InvalidArgument& e) {
      EXPECT_EQ(e.argument(), std::string(argument)) << e.what();
      const std::string msg = e.what();
      EXPECT_NE(msg.find(value), std::string::npos) << msg;
      EXPECT_NE(msg.find("pad_slot"), std::string::npos) << msg;
    }
  };
  for (std::uint32_t bad : {4u, kPad - 1}) {
    const std::string v = std::to_string(bad);
    expect_rejected("state_slots", v, [&] {
      gdn::recurrence_fwd(space, cfg, d.in, to_device({kPad, bad, 1}), S, out.view);
    });
    expect_rejected("state_slots", v, [&] {
      gdn::recurrence_verify_ring(space, cfg, d.in, to_device({kPad, bad, 1}), S, out.view,
                                  to_device({0, 1, 2}), R);
    });
  }
  for (std::uint32_t bad : {3u, kPad - 1}) {
    const std::string v = std::to_string(bad);
    expect_rejected("ring_slots", v, [&] {
      gdn::recurrence_verify_ring(space, cfg, d.in, to_device({0, 1, 2}), S, out.view,
                                  to_device({kPad, 1, bad}), R);
    });
    expect_rejected("ring_rows", v, [&] {
      gdn::state_fold(space, cfg, to_device(1, 3, {kPad, 1, 2}), S, to_device(1, 3, {0, bad, 2}), R,
                      to_device({1, 1, 1}));
    });
  }
  expect_rejected("state_rows", std::to_string(kPad - 1), [&] {
    gdn::state_fold(space, cfg, to_device(1, 3, {0, kPad - 1, 2}), S, to_device(1, 3, {kPad, 1, 2}),
                    R, to_device({1, 1, 1}));
  });
}

}  // namespace
}  // namespace gdn_test
