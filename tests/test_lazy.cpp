// Lazy commit (lazy_commit.hpp): a lazy flow (recurrence_verify_lazy, lazy_accept, and
// state_flush at random points) run beside the eager flow (recurrence_verify_ring, then
// state_fold, every step) on the same inputs gives the same bits: every output, every
// record, every state the lazy flow commits (a flush, or a verify whose window does not fit
// behind the pending records), and at the end every pool row. Several layers, ragged rows,
// empty rows, a padding row, float and bf16 states, float and bf16 rings; with the conv1d
// (conv1d_verify_lazy beside conv1d_verify_ring, its states flushed and folded with the
// recurrent ones), the same for its outputs, its recorded inputs and its states.

#include "conv_support.hpp"
#include "reject_harness.hpp"

#include <functional>

namespace {

using namespace gdn_test;

using LedgerView = Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, Mem>;

/// Sets the index checking mode for a scope.
class Checking {
 public:
  explicit Checking(bool on) : m_old(gdn::index_checking_enabled()) { gdn::set_index_checking(on); }
  ~Checking() { gdn::set_index_checking(m_old); }

 private:
  bool m_old;
};

template <class RingT>
gdn::LazyRing<Mem, RingT> make_lazy(int rows, const gdn::HeadConfig& cfg, int capacity,
                                    int stride) {
  gdn::LazyRing<Mem, RingT> lazy;
  lazy.history = make_ring<RingT>(rows, cfg, capacity, stride);
  lazy.ledger = LedgerView("gdn_test::ledger", rows, gdn::lazy_ledger_words(capacity));
  return lazy;
}

std::vector<std::uint32_t> ledger_of(const LedgerView& ledger) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ledger);
  std::vector<std::uint32_t> r(h.size());
  for (std::size_t i = 0; i < h.extent(0); ++i)
    for (std::size_t w = 0; w < h.extent(1); ++w) r[i * h.extent(1) + w] = h(i, w);
  return r;
}

// Bytes of pool row `row` (all of its [nv, Dk, Dv] or [nk, len, stride] values).
template <class T>
std::vector<unsigned char> row_bytes(const std::vector<unsigned char>& all, const Pool<T>& pool,
                                     std::uint32_t row) {
  const std::size_t n = all.size() / pool.extent(0);
  return std::vector<unsigned char>(all.begin() + row * n, all.begin() + (row + 1) * n);
}

struct LazySpec {
  gdn::HeadConfig cfg;
  int batch = 5;  // rows per step; the last is a padding row
  int layers = 2;
  int window = 4;     // longest drafted window: the eager ring's RING_LEN
  int capacity = 10;  // the history's records
  int steps = 500;
  double flush_prob = 0.05;  // a flush of a random subset of the entries after a step
  double long_prob = 0.0;    // a row longer than the capacity (both flows commit it)
  int conv_width = 0;        // > 0: the conv1d of this width runs in both flows
  std::uint64_t seed = 1;
};

// One run of both flows; every comparison is an EXPECT (the first few failures are reported).
template <class StateT, class RingT, class ConvT = float>
void lazy_matches_eager(const LazySpec& ls) {
  const ExecSpace space;
  const gdn::HeadConfig& cfg = ls.cfg;
  const int B = ls.batch, Ly = ls.layers, H = ls.capacity, W = ls.window;
  const int slots_total = Ly * B + 2, rows_total = Ly * B + 1;
  std::vector<std::uint32_t> srow(Ly * B), rrow(Ly * B);
  for (int l = 0; l < Ly; ++l)
    for (int b = 0; b < B; ++b) {
      const bool pad = b == B - 1;
      srow[l * B + b] = pad ? gdn::pad_slot : std::uint32_t(l * B + (b * 3 + 1) % (B - 1));
      rrow[l * B + b] = pad ? gdn::pad_slot : std::uint32_t(rows_total - 1 - (l * B + b));
    }
  const Table d_srow = to_device(Ly, B, srow), d_rrow = to_device(Ly, B, rrow);
  std::vector<Index> layer_slots, layer_rows;
  for (int l = 0; l < Ly; ++l) {
    layer_slots.push_back(
        to_device(std::vector<std::uint32_t>(srow.begin() + l * B, srow.begin() + (l + 1) * B)));
    layer_rows.push_back(
        to_device(std::vector<std::uint32_t>(rrow.begin() + l * B, rrow.begin() + (l + 1) * B)));
  }
  const int stride =
      int(gdn::ring_record_elements(cfg.key_head_dim, cfg.value_head_dim, cfg.group_size())) + 2;
  const int rec =
      int(gdn::ring_record_elements(cfg.key_head_dim, cfg.value_head_dim, cfg.group_size()));
  auto Se = make_state<StateT>(slots_total, cfg, ls.seed + 3);
  auto Sl = clone(Se);
  const auto ring = make_ring<RingT>(rows_total, cfg, W, stride);
  const auto lazy = make_lazy<RingT>(rows_total, cfg, H, stride);
  // The conv pools (empty without the conv): conv states, the eager conv ring, the history.
  const bool conv = ls.conv_width > 0;
  const int C = int(cfg.conv_dim());
  auto CSe =
      make_conv_state<ConvT>(conv ? slots_total : 0, C, conv ? ls.conv_width : 2, ls.seed + 5);
  auto CSl = clone3(CSe);
  const auto conv_ring = make_conv_ring<ConvT>(conv ? rows_total : 0, W, C);
  const auto conv_hist = make_conv_ring<ConvT>(conv ? rows_total : 0, H, C);

  std::mt19937_64 rng(ls.seed);
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  int failures = 0, flushes = 0, overflows = 0, committed_rows = 0;
  const auto fail_once = [&](bool ok, const std::string& what) {
    if (!ok && failures++ < 5) ADD_FAILURE() << what;
  };
  for (int step = 0; step < ls.steps && failures == 0; ++step) {
    std::vector<int> lens(B);
    for (int b = 0; b < B; ++b) {
      const double r = coin(rng);
      lens[b] = r < 0.1                  ? 0
                : r < 0.1 + ls.long_prob ? H + 1 + int(rng() % 3)
                                         : 1 + int(rng() % std::uint64_t(W));
    }
    for (int l = 0; l < Ly; ++l) {
      const Problem p = make_problem(cfg, lens, ls.seed * 7919 + std::uint64_t(step * Ly + l));
      const DeviceInputs din = upload(p);
      Strided2D out_e = make_out(p), out_l = make_out(p);
      const std::vector<std::uint32_t> before = ledger_of(lazy.ledger);
      const std::string at = "step " + std::to_string(step) + ", layer " + std::to_string(l);
      if (conv) {  // the layer's conv first: the recurrent lazy verify clears committed rows
        const ConvCase cc = make_case<ConvT>(cfg, ls.conv_width, lens, ls.seed + 977 * step + l);
        const DevConv<ConvT> dc = upload_conv<ConvT>(cc);
        Arr2<float> co_e = make_arr<float>(cc.tokens(), C, Layout::Dense, nullptr);
        Arr2<float> co_l = make_arr<float>(cc.tokens(), C, Layout::Dense, nullptr);
        gdn::conv1d_verify_ring(space, cfg, dc.in, layer_slots[l], CSe, co_e.view, layer_rows[l],
                                conv_ring);
        gdn::conv1d_verify_lazy(space, cfg, dc.in, layer_slots[l], CSl, co_l.view, layer_rows[l],
                                conv_hist, lazy);
        space.fence();
        fail_once(same_bits(read_arr(co_e), read_arr(co_l)), at + ": conv outputs differ");
        const auto cre = bytes_of(conv_ring), crl = bytes_of(conv_hist);
        const auto cse = bytes_of(CSe), csl = bytes_of(CSl);
        const std::size_t words = lazy.ledger.extent(1);
        const std::size_t row_e = std::size_t(W) * C * sizeof(ConvT);
        const std::size_t row_l = std::size_t(H) * C * sizeof(ConvT);
        const std::size_t srow_bytes = cse.size() / std::size_t(slots_total);
        for (int b = 0; b < B - 1; ++b) {
          const int L = lens[b], c = int(before[rrow[l * B + b] * words]);
          if (L == 0) continue;
          const std::uint32_t r = rrow[l * B + b], sl = srow[l * B + b];
          if (L > H || c + L > H) {
            fail_once(std::memcmp(cse.data() + sl * srow_bytes, csl.data() + sl * srow_bytes,
                                  srow_bytes) == 0,
                      at + ", row " + std::to_string(b) + ": the conv state committed");
          }
          if (L > W) continue;
          const int base = c + L > H ? 0 : c;
          const bool same =
              std::memcmp(cre.data() + r * row_e,
                          crl.data() + r * row_l + std::size_t(base) * C * sizeof(ConvT),
                          std::size_t(L) * C * sizeof(ConvT)) == 0;
          fail_once(same, at + ", row " + std::to_string(b) + ": conv records differ");
        }
      }
      gdn::recurrence_verify_ring(space, cfg, din.in, layer_slots[l], Se, out_e.view, layer_rows[l],
                                  ring);
      gdn::recurrence_verify_lazy(space, cfg, din.in, layer_slots[l], Sl, out_l.view, layer_rows[l],
                                  lazy);
      space.fence();
      fail_once(same_bits(read_2d(out_e), read_2d(out_l)), at + ": outputs differ");
      const auto re = bytes_of(ring), rl = bytes_of(lazy.history);
      const auto se = bytes_of(Se), sl = bytes_of(Sl);
      const std::size_t words = lazy.ledger.extent(1);
      for (int b = 0; b < B - 1; ++b) {
        const int L = lens[b];
        if (L == 0) continue;
        const std::uint32_t r = rrow[l * B + b], s = srow[l * B + b];
        const int c = int(before[r * words]);
        const bool commits = L > H || c + L > H;
        if (commits) {
          fail_once(same_bytes(row_bytes(se, Se, s), row_bytes(sl, Sl, s)),
                    at + ", row " + std::to_string(b) + ": the state the verify committed");
          ++overflows;
        }
        if (L > W) continue;  // both flows commit it and record nothing
        const int base = c + L > H ? 0 : c;
        for (int kh = 0; kh < cfg.num_key_heads; ++kh)
          for (int pos = 0; pos < L; ++pos) {
            const std::size_t e0 = ((std::size_t(r) * cfg.num_key_heads + kh) * W + pos) * stride;
            const std::size_t l0 =
                ((std::size_t(r) * cfg.num_key_heads + kh) * H + base + pos) * stride;
            const bool same =
                std::memcmp(re.data() + e0 * sizeof(RingT), rl.data() + l0 * sizeof(RingT),
                            std::size_t(rec) * sizeof(RingT)) == 0;
            fail_once(same, at + ", row " + std::to_string(b) + ", key head " + std::to_string(kh) +
                                ", position " + std::to_string(pos) + ": records differ");
          }
      }
    }
    std::vector<std::uint32_t> n(B);
    for (int b = 0; b < B; ++b) {
      n[b] = lens[b] > W ? std::uint32_t(lens[b]) : std::uint32_t(rng() % (lens[b] + 1));
    }
    const Index d_n = to_device(n);
    if (conv) {
      gdn::state_fold(space, cfg, d_srow, Se, d_rrow, ring, d_n,
                      gdn::ConvFold<Mem, ConvT>{CSe, conv_ring});
    } else {
      gdn::state_fold(space, cfg, d_srow, Se, d_rrow, ring, d_n);
    }
    gdn::lazy_accept(space, d_rrow, lazy, d_n);
    if (coin(rng) < ls.flush_prob || step + 1 == ls.steps) {
      // Flush a random subset of the entries (all of them after the last step); the others
      // are padding entries of the tables.
      std::vector<std::uint32_t> fs(Ly * B, gdn::pad_slot), fr(Ly * B, gdn::pad_slot);
      for (int e = 0; e < Ly * B; ++e) {
        if (step + 1 == ls.steps || coin(rng) < 0.5) {
          fs[e] = srow[e];
          fr[e] = rrow[e];
        }
      }
      if (conv) {
        gdn::state_flush(space, cfg, to_device(Ly, B, fs), Sl, to_device(Ly, B, fr), lazy,
                         gdn::ConvFold<Mem, ConvT>{CSl, conv_hist});
      } else {
        gdn::state_flush(space, cfg, to_device(Ly, B, fs), Sl, to_device(Ly, B, fr), lazy);
      }
      space.fence();
      ++flushes;
      const auto se = bytes_of(Se), sl = bytes_of(Sl);
      const auto cse = bytes_of(CSe), csl = bytes_of(CSl);
      const std::size_t crow = conv ? cse.size() / std::size_t(slots_total) : 0;
      const auto led = ledger_of(lazy.ledger);
      for (int e = 0; e < Ly * B; ++e) {
        if (fs[e] == gdn::pad_slot) continue;
        ++committed_rows;
        fail_once(same_bytes(row_bytes(se, Se, fs[e]), row_bytes(sl, Sl, fs[e])),
                  "step " + std::to_string(step) + ": flushed pool row " + std::to_string(fs[e]) +
                      " differs from the eager state");
        fail_once(
            !conv || std::memcmp(cse.data() + fs[e] * crow, csl.data() + fs[e] * crow, crow) == 0,
            "step " + std::to_string(step) + ": flushed conv state row " + std::to_string(fs[e]) +
                " differs from the eager one");
        fail_once(led[fr[e] * lazy.ledger.extent(1)] == 0,
                  "a flushed ledger row still has pending records");
      }
    }
  }
  space.fence();
  EXPECT_TRUE(same_bytes(bytes_of(Se), bytes_of(Sl))) << "pools differ after the final flush";
  EXPECT_TRUE(same_bytes(bytes_of(CSe), bytes_of(CSl)))
      << "conv state pools differ after the final flush";
  EXPECT_GT(flushes, 1);
  EXPECT_GT(overflows, 0) << "no verify committed on overflow: the run misses that path";
  EXPECT_GT(committed_rows, 0);
}

gdn::HeadConfig grouped() { return heads(2, 4, 64); }

TEST(LazyCommit, FloatStateFloatRingMatchesEagerOver1000Steps) {
  LazySpec ls;
  ls.cfg = grouped();
  ls.steps = 1000;
  lazy_matches_eager<float, float>(ls);
}

TEST(LazyCommit, Bf16StateFloatRingMatchesEagerOver1000Steps) {
  LazySpec ls;
  ls.cfg = grouped();
  ls.steps = 1000;
  ls.seed = 2;
  lazy_matches_eager<gdn::bf16, float>(ls);
}

TEST(LazyCommit, Bf16HistoryMatchesTheBf16EagerRing) {
  LazySpec ls;
  ls.cfg = grouped();
  ls.steps = 200;
  ls.seed = 3;
  lazy_matches_eager<gdn::bf16, gdn::bf16>(ls);
  ls.seed = 4;
  lazy_matches_eager<float, gdn::bf16>(ls);
}

// Windows longer than the kernel's staging pass of 16 tokens (records written by two passes, the
// history advanced over more than one staging batch), head dim 128, G = 1, and rows longer than the
// capacity, which both flows commit (index checking off: with it they are an error of the lazy
// verify).
TEST(LazyCommit, LongWindowsAndCommittingRowsMatchEager) {
  const Checking off(false);
  LazySpec ls;
  ls.cfg = heads(2, 2, 128);
  ls.window = 20;
  ls.capacity = 45;
  ls.steps = 120;
  ls.long_prob = 0.05;
  ls.flush_prob = 0.1;
  ls.seed = 5;
  lazy_matches_eager<float, float>(ls);
  ls.seed = 6;
  lazy_matches_eager<gdn::bf16, float>(ls);
}

// The conv1d in front (W = 4 with bf16 inputs, as Qwen3-Next; W = 2 and 3 with float inputs,
// including windows shorter than W-1).
TEST(LazyCommit, WithTheConvMatchesEager) {
  LazySpec ls;
  ls.cfg = grouped();
  ls.steps = 300;
  ls.conv_width = 4;
  ls.seed = 11;
  lazy_matches_eager<gdn::bf16, float, gdn::bf16>(ls);
  ls.conv_width = 3;
  ls.steps = 150;
  ls.seed = 12;
  lazy_matches_eager<float, float, float>(ls);
  ls.conv_width = 2;
  ls.seed = 13;
  lazy_matches_eager<float, float, float>(ls);
}

TEST(LazyCommit, WithTheConvLongWindowsAndCommittingRows) {
  const Checking off(false);
  LazySpec ls;
  ls.cfg = heads(2, 2, 64);
  ls.window = 20;
  ls.capacity = 45;
  ls.steps = 100;
  ls.long_prob = 0.05;
  ls.flush_prob = 0.1;
  ls.conv_width = 4;
  ls.seed = 14;
  lazy_matches_eager<float, float, gdn::bf16>(ls);
}

// A short flow that still takes every path (a verify behind pending records, a commit on
// overflow, flushes, the conv, a bf16 state): small enough to run under compute-sanitizer's
// racecheck and memcheck in seconds.
TEST(LazyCommit, ShortFlowTakesEveryPath) {
  LazySpec ls;
  ls.cfg = grouped();
  ls.layers = 1;
  ls.capacity = 6;
  ls.steps = 16;
  ls.flush_prob = 0.3;
  ls.conv_width = 4;
  ls.seed = 21;
  lazy_matches_eager<gdn::bf16, float, gdn::bf16>(ls);
}

TEST(LazyCommit, CheckingModeAcceptsAValidFlow) {
  const Checking on(true);
  LazySpec ls;
  ls.cfg = grouped();
  ls.steps = 60;
  ls.seed = 7;
  ls.conv_width = 4;
  lazy_matches_eager<gdn::bf16, float, gdn::bf16>(ls);
}

// A request that ends: lazy_drop clears its ledger row and leaves its state row as it
// was committed; the next verify from that row starts from the committed state (the
// dropped records are not applied).
TEST(LazyCommit, DropDiscardsPendingRecords) {
  const ExecSpace space;
  const gdn::HeadConfig cfg = grouped();
  const int stride = int(gdn::ring_record_elements(64, 64, 2));
  auto S = make_state<float>(2, cfg, 41);
  const auto lazy = make_lazy<float>(2, cfg, 8, stride);
  const Index slots = to_device({1}), rows = to_device({0});
  const Table rows_t = to_device(1, 1, {0});
  const Problem p = make_problem(cfg, {3}, 42);
  const DeviceInputs din = upload(p);
  Strided2D out = make_out(p);
  gdn::recurrence_verify_lazy(space, cfg, din.in, slots, S, out.view, rows, lazy);
  gdn::lazy_accept(space, rows_t, lazy, to_device({2}));
  space.fence();
  EXPECT_EQ(ledger_of(lazy.ledger)[0], 2u);
  const auto committed = bytes_of(S);
  gdn::lazy_drop(space, rows_t, lazy);
  space.fence();
  for (std::uint32_t w : ledger_of(lazy.ledger)) EXPECT_EQ(w, 0u);
  EXPECT_TRUE(same_bytes(bytes_of(S), committed)) << "lazy_drop wrote the state";
  // The next window: the lazy verify and an eager verify from the committed state agree.
  const Problem q = make_problem(cfg, {4}, 43);
  const DeviceInputs dq = upload(q);
  Strided2D out_l = make_out(q), out_e = make_out(q);
  auto Se = clone(S);
  const auto ring = make_ring<float>(1, cfg, 4, stride);
  gdn::recurrence_verify_lazy(space, cfg, dq.in, slots, S, out_l.view, rows, lazy);
  gdn::recurrence_verify_ring(space, cfg, dq.in, slots, Se, out_e.view, rows, ring);
  space.fence();
  EXPECT_TRUE(same_bits(read_2d(out_l), read_2d(out_e)));
}

// ---------------------------------------------------------------------------
// Bad input (reject_harness.hpp): thrown before any launch, naming function and argument;
// nothing changes.

// A valid lazy flow of two rows (2 and 1 tokens) over a history of capacity 4, recurrent
// and conv, that each case breaks in one place.
struct LazySetup {
  ExecSpace space;
  gdn::HeadConfig cfg = grouped();
  int stride = int(gdn::ring_record_elements(64, 64, 2));
  int conv_dim = int(cfg.conv_dim());
  Pool<float> state = make_state<float>(3, cfg, 1);
  gdn::LazyRing<Mem, float> lazy = make_lazy<float>(3, cfg, 4, stride);
  Problem p = make_problem(cfg, {2, 1}, 2);
  DeviceInputs d = upload(p);
  Strided2D out = make_out(p);
  ConvCase cc = make_case<float>(cfg, 4, {2, 1}, 3);
  DevConv<float> dc = upload_conv<float>(cc);
  ConvPool<float> cstate = make_conv_state<float>(3, conv_dim, 4, 4);
  ConvPool<float> chist = make_conv_ring<float>(3, 4, conv_dim);
  Arr2<float> cout = make_arr<float>(cc.tokens(), conv_dim, Layout::Dense, nullptr);
  Index slots = to_device({0, 1});
  Index rslots = to_device({1, 2});

  void verify() const {
    gdn::recurrence_verify_lazy(space, cfg, d.in, slots, state, out.view, rslots, lazy);
  }
  void conv_verify() const {
    gdn::conv1d_verify_lazy(space, cfg, dc.in, slots, cstate, cout.view, rslots, chist, lazy);
  }
  void accept() const { gdn::lazy_accept(space, to_device(1, 2, {1, 2}), lazy, to_device({2, 1})); }
  void flush() const {
    gdn::state_flush(space, cfg, to_device(1, 2, {0, 1}), state, to_device(1, 2, {1, 2}), lazy,
                     gdn::ConvFold<Mem, float>{cstate, chist});
  }
  std::vector<std::function<void()>> valid_calls() const {
    return {[this] { conv_verify(); }, [this] { verify(); }, [this] { accept(); },
            [this] { flush(); }};
  }
  std::vector<std::pair<std::string, std::vector<unsigned char>>> buffers() const {
    return {{"state", bytes_of(state)},        {"history", bytes_of(lazy.history)},
            {"ledger", bytes_of(lazy.ledger)}, {"out", bytes_of(out.buf)},
            {"conv state", bytes_of(cstate)},  {"conv history", bytes_of(chist)},
            {"conv out", bytes_of(cout.buf)}};
  }
  /// The setup's history with a ledger of its own whose row 1 holds `pending` records.
  gdn::LazyRing<Mem, float> with_pending(std::uint32_t pending) const {
    gdn::LazyRing<Mem, float> r{lazy.history, LedgerView("bad", 3, lazy.ledger.extent(1))};
    Kokkos::deep_copy(Kokkos::subview(r.ledger, 1, 0), pending);
    return r;
  }
};

using LazyBadCase = BadCase<LazySetup>;

const char* kVerifyLazy = "gdn::recurrence_verify_lazy";
const char* kConvVerifyLazy = "gdn::conv1d_verify_lazy";
const char* kAccept = "gdn::lazy_accept";
const char* kFlush = "gdn::state_flush";

// clang-format off
std::vector<LazyBadCase> lazy_cases() {
  std::vector<LazyBadCase> v;
  v.push_back({"LedgerWithoutPendingWord", kVerifyLazy, "lazy.ledger", false, [](LazySetup& s) {
    const gdn::LazyRing<Mem, float> r{s.lazy.history, LedgerView("short", 3, 0)};
    gdn::recurrence_verify_lazy(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, s.rslots, r); }});
  v.push_back({"AcceptLedgerWithoutPendingWord", kAccept, "lazy.ledger", false, [](LazySetup& s) {
    const gdn::LazyRing<Mem, float> r{s.lazy.history, LedgerView("short", 3, 0)};
    gdn::lazy_accept(s.space, to_device(1, 2, {1, 2}), r, to_device({2, 1})); }});
  v.push_back({"HistoryRecordTooNarrow", kVerifyLazy, "lazy.history", false, [](LazySetup& s) {
    const auto narrow = make_lazy<float>(3, s.cfg, 4, s.stride - 1);
    gdn::recurrence_verify_lazy(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, s.rslots, narrow); }});
  v.push_back({"AcceptTableWiderThanAccepted", kAccept, "ring_rows", false, [](LazySetup& s) {
    gdn::lazy_accept(s.space, to_device(1, 2, {1, 2}), s.lazy, to_device({1})); }});
  v.push_back({"ConvHistoryOtherCapacity", kConvVerifyLazy, "conv_history", false, [](LazySetup& s) {
    const ConvPool<float> h = make_conv_ring<float>(3, 5, s.conv_dim);
    gdn::conv1d_verify_lazy(s.space, s.cfg, s.dc.in, s.slots, s.cstate, s.cout.view, s.rslots, h, s.lazy); }});
  v.push_back({"ConvHistoryOtherRows", kConvVerifyLazy, "conv_history", false, [](LazySetup& s) {
    const ConvPool<float> h = make_conv_ring<float>(2, 4, s.conv_dim);
    gdn::conv1d_verify_lazy(s.space, s.cfg, s.dc.in, s.slots, s.cstate, s.cout.view, s.rslots, h, s.lazy); }});
  // The checking mode: a window longer than the capacity.
  v.push_back({"WindowLongerThanCapacity", kVerifyLazy, "lazy.history", true, [](LazySetup& s) {
    const Problem p = make_problem(s.cfg, {5}, 5);
    const DeviceInputs d = upload(p);
    Strided2D o = make_out(p);
    gdn::recurrence_verify_lazy(s.space, s.cfg, d.in, to_device({0}), s.state, o.view, to_device({1}), s.lazy); }});
  // A pending count past the capacity, seen by every call that reads the ledger.
  v.push_back({"VerifyPendingPastCapacity", kVerifyLazy, "lazy.ledger", true, [](LazySetup& s) {
    gdn::recurrence_verify_lazy(s.space, s.cfg, s.d.in, to_device({0, 2}), s.state, s.out.view, to_device({1, 0}), s.with_pending(5)); }});
  v.push_back({"ConvVerifyPendingPastCapacity", kConvVerifyLazy, "lazy.ledger", true, [](LazySetup& s) {
    gdn::conv1d_verify_lazy(s.space, s.cfg, s.dc.in, s.slots, s.cstate, s.cout.view, s.rslots, s.chist, s.with_pending(5)); }});
  v.push_back({"AcceptPendingPastCapacity", kAccept, "lazy.ledger", true, [](LazySetup& s) {
    gdn::lazy_accept(s.space, to_device(1, 1, {1}), s.with_pending(5), to_device({1})); }});
  v.push_back({"FlushPendingPastCapacity", kFlush, "lazy.ledger", true, [](LazySetup& s) {
    gdn::state_flush(s.space, s.cfg, to_device(1, 1, {0}), s.state, to_device(1, 1, {1}), s.with_pending(5)); }});
  // Two rows of one call on one state slot, on one history row, or a history row out of range.
  v.push_back({"TwoRowsOneStateSlot", kVerifyLazy, "state_slots", true, [](LazySetup& s) {
    gdn::recurrence_verify_lazy(s.space, s.cfg, s.d.in, to_device({0, 0}), s.state, s.out.view, s.rslots, s.lazy); }});
  v.push_back({"TwoRowsOneHistoryRow", kVerifyLazy, "ring_slots", true, [](LazySetup& s) {
    gdn::recurrence_verify_lazy(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, to_device({2, 2}), s.lazy); }});
  v.push_back({"HistoryRowOutOfRange", kVerifyLazy, "ring_slots", true, [](LazySetup& s) {
    gdn::recurrence_verify_lazy(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, to_device({2, 3}), s.lazy); }});
  v.push_back({"ConvTwoRowsOneStateSlot", kConvVerifyLazy, "state_slots", true, [](LazySetup& s) {
    gdn::conv1d_verify_lazy(s.space, s.cfg, s.dc.in, to_device({1, 1}), s.cstate, s.cout.view, s.rslots, s.chist, s.lazy); }});
  v.push_back({"ConvHistoryRowOutOfRange", kConvVerifyLazy, "ring_slots", true, [](LazySetup& s) {
    gdn::conv1d_verify_lazy(s.space, s.cfg, s.dc.in, s.slots, s.cstate, s.cout.view, to_device({3, 2}), s.chist, s.lazy); }});
  v.push_back({"AcceptTwoEntriesOneRow", kAccept, "ring_rows", true, [](LazySetup& s) {
    gdn::lazy_accept(s.space, to_device(2, 1, {2, 2}), s.lazy, to_device({1})); }});
  return v;
}
// clang-format on

class LazyRejects : public ::testing::TestWithParam<LazyBadCase> {};

TEST_P(LazyRejects, ThrowsNamesArgumentAndChangesNothing) { expect_rejected(GetParam()); }

INSTANTIATE_TEST_SUITE_P(BadInput, LazyRejects, ::testing::ValuesIn(lazy_cases()), BadCaseName());

// The valid setup passes with and without checking (so the cases above fail for their reason).
TEST(LazyChecking, ValidCallsPass) { expect_valid_calls_pass<LazySetup>(); }

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const gdn::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

// The messages say what was expected: the ledger's words and the pending count.
TEST(LazyChecking, MessagesGiveTheNumbers) {
  const Checking on(true);
  const LazySetup s;
  std::string e = error_of([&] {
    const gdn::LazyRing<Mem, float> r{s.lazy.history, LedgerView("short", 3, 0)};
    gdn::recurrence_verify_lazy(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view, s.rslots, r);
  });
  EXPECT_NE(e.find(">= 2"), std::string::npos) << e;
  e = error_of(
      [&] { gdn::lazy_accept(s.space, to_device(1, 1, {1}), s.with_pending(5), to_device({1})); });
  EXPECT_NE(e.find("lazy.ledger(1, 0) = 5"), std::string::npos) << e;
  e = error_of([&] {
    gdn::recurrence_verify_lazy(s.space, s.cfg, s.d.in, s.slots, s.state, s.out.view,
                                to_device({2, 3}), s.lazy);
  });
  EXPECT_NE(e.find("history row"), std::string::npos) << e;
}

}  // namespace

// With the checking mode off, indices out of range in the lazy flow are skipped like padding
// rows: a verify row whose history row or state slot is out of range reads and writes
// nothing (outputs, state, history and ledger as the call without it, counted once);
// lazy_accept and state_flush leave such entries alone (a flush entry whose state row is
// out of range keeps its records pending).
TEST(LazyCommit, OutOfRangeRowsAreSkippedAndCounted) {
  const ExecSpace space;
  const auto cfg = heads(2, 4, 64);
  const int stride = int(gdn::ring_record_elements(64, 64, 2));
  const Problem p = make_problem(cfg, {3, 2, 4}, 7300);
  const Problem good = sub_problem(p, {0u, 0u, p.offsets[2]}, {3u, 0u, 4u});  // row 1 dropped
  const auto S0 = make_state<float>(4, cfg, 7301);
  auto S_bad = clone(S0), S_good = clone(S0);
  const auto lazy_bad = make_lazy<float>(3, cfg, 8, stride);
  const auto lazy_good = make_lazy<float>(3, cfg, 8, stride);
  const DeviceInputs d = upload(p), dg = upload(good);
  const Strided2D o_bad = make_out(p), o_good = make_out(good);
  gdn::reset_skipped_rows(space);
  // Row 1's history row (3) is outside the 3-row history.
  gdn::recurrence_verify_lazy(space, cfg, d.in, to_device({0u, 1u, 2u}), S_bad, o_bad.view,
                              to_device({0u, 3u, 2u}), lazy_bad);
  gdn::recurrence_verify_lazy(space, cfg, dg.in, to_device({0u, 1u, 2u}), S_good, o_good.view,
                              to_device({0u, 1u, 2u}), lazy_good);
  EXPECT_EQ(gdn::skipped_rows(space), 1u) << "the verify counts the row once";
  const std::vector<float> ob = read_2d(o_bad), og = read_2d(o_good);
  const int VD = cfg.value_dim();
  EXPECT_TRUE(same_bits(std::vector<float>(ob.begin(), ob.begin() + 3 * VD),
                        std::vector<float>(og.begin(), og.begin() + 3 * VD)));
  EXPECT_TRUE(same_bits(std::vector<float>(ob.begin() + 5 * VD, ob.end()),
                        std::vector<float>(og.begin() + 3 * VD, og.end())));
  EXPECT_TRUE(same_bytes(bytes_of(S_bad), bytes_of(S_good)));
  // lazy_accept with the bad row; then a flush whose row 2 names state row 9 (of 4).
  gdn::lazy_accept(space, to_device(1, 3, {0u, 3u, 2u}), lazy_bad, to_device({2u, 1u, 3u}));
  gdn::lazy_accept(space, to_device(1, 3, {0u, 1u, 2u}), lazy_good, to_device({2u, 0u, 3u}));
  EXPECT_EQ(ledger_of(lazy_bad.ledger), ledger_of(lazy_good.ledger));
  gdn::reset_skipped_rows(space);
  gdn::state_flush(space, cfg, to_device(1, 3, {0u, 1u, 9u}), S_bad, to_device(1, 3, {0u, 3u, 2u}),
                   lazy_bad);
  EXPECT_EQ(gdn::skipped_rows(space), 2u) << "the flush's two bad entries";
  const std::vector<std::uint32_t> led = ledger_of(lazy_bad.ledger);
  const std::size_t words = lazy_bad.ledger.extent(1);
  EXPECT_EQ(led[0], 0u) << "row 0 was flushed";
  EXPECT_EQ(led[2 * words], 3u) << "row 2's records stay pending: its state row is out of range";
}
