// Lazy commit (lazy_commit.hpp): a lazy flow (recurrence_verify_lazy, lazy_accept, and
// state_flush at random points) run beside the eager flow (recurrence_verify_ring, then
// state_fold, every step) on the same inputs gives the same bits: every output, every
// record, every state the lazy flow commits (a flush, or a verify whose window does not fit
// behind the pending records), and at the end every pool row. Several layers, ragged rows,
// empty rows, a padding row, float and bf16 states, float and bf16 rings; with the conv1d
// (conv1d_verify_lazy beside conv1d_verify_ring, its states flushed and folded with the
// recurrent ones), the same for its outputs, its recorded inputs and its states.

#include "conv_support.hpp"

namespace {

using namespace gdn_test;

using LedgerView = Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, Mem>;

/// Sets the index checking mode for a scope.
class Checking {
 public:
  explicit Checking(bool on) : m_old(gdn::index_checking_enabled()) {
    gdn::set_index_checking(on);
  }
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
  int batch = 5;      // rows per step; the last is a padding row
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
    layer_slots.push_back(to_device(
        std::vector<std::uint32_t>(srow.begin() + l * B, srow.begin() + (l + 1) * B)));
    layer_rows.push_back(to_device(
        std::vector<std::uint32_t>(rrow.begin() + l * B, rrow.begin() + (l + 1) * B)));
  }
  const int stride = int(gdn::ring_record_elements(cfg.key_head_dim, cfg.value_head_dim,
                                                   cfg.group_size())) +
                     2;
  const int rec = int(gdn::ring_record_elements(cfg.key_head_dim, cfg.value_head_dim,
                                                cfg.group_size()));
  auto Se = make_state<StateT>(slots_total, cfg, ls.seed + 3);
  auto Sl = clone(Se);
  const auto ring = make_ring<RingT>(rows_total, cfg, W, stride);
  const auto lazy = make_lazy<RingT>(rows_total, cfg, H, stride);
  // The conv pools (empty without the conv): conv states, the eager conv ring, the history.
  const bool conv = ls.conv_width > 0;
  const int C = int(cfg.conv_dim());
  auto CSe = make_conv_state<ConvT>(conv ? slots_total : 0, C, conv ? ls.conv_width : 2,
                                    ls.seed + 5);
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
      lens[b] = r < 0.1 ? 0
                : r < 0.1 + ls.long_prob
                    ? H + 1 + int(rng() % 3)
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
        gdn::conv1d_verify_ring(space, cfg, dc.in, layer_slots[l], CSe, co_e.view,
                                layer_rows[l], conv_ring);
        gdn::conv1d_verify_lazy(space, cfg, dc.in, layer_slots[l], CSl, co_l.view,
                                layer_rows[l], conv_hist, lazy);
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
          const bool same = std::memcmp(cre.data() + r * row_e,
                                        crl.data() + r * row_l + std::size_t(base) * C *
                                                                   sizeof(ConvT),
                                        std::size_t(L) * C * sizeof(ConvT)) == 0;
          fail_once(same, at + ", row " + std::to_string(b) + ": conv records differ");
        }
      }
      gdn::recurrence_verify_ring(space, cfg, din.in, layer_slots[l], Se, out_e.view,
                                  layer_rows[l], ring);
      gdn::recurrence_verify_lazy(space, cfg, din.in, layer_slots[l], Sl, out_l.view,
                                  layer_rows[l], lazy);
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
            const bool same = std::memcmp(re.data() + e0 * sizeof(RingT),
                                          rl.data() + l0 * sizeof(RingT),
                                          std::size_t(rec) * sizeof(RingT)) == 0;
            fail_once(same, at + ", row " + std::to_string(b) + ", key head " +
                                std::to_string(kh) + ", position " + std::to_string(pos) +
                                ": records differ");
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
                  "step " + std::to_string(step) + ": flushed pool row " +
                      std::to_string(fs[e]) + " differs from the eager state");
        fail_once(!conv || std::memcmp(cse.data() + fs[e] * crow, csl.data() + fs[e] * crow,
                                       crow) == 0,
                  "step " + std::to_string(step) + ": flushed conv state row " +
                      std::to_string(fs[e]) + " differs from the eager one");
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

// Windows longer than a chunk (records written by two chunks, the history
// advanced over more than one staging batch), head dim 128, G = 1, and rows longer
// than the capacity, which both flows commit (index checking off: with it they are an
// error of the lazy verify).
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
// Bad input.

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const gdn::InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(LazyCommit, BadShapesAreNamed) {
  const ExecSpace space;
  const gdn::HeadConfig cfg = grouped();
  const int stride = int(gdn::ring_record_elements(64, 64, 2));
  auto S = make_state<float>(2, cfg, 1);
  const Problem p = make_problem(cfg, {2}, 2);
  const DeviceInputs din = upload(p);
  Strided2D out = make_out(p);
  const Index slots = to_device({0}), rows = to_device({0});
  auto lazy = make_lazy<float>(2, cfg, 8, stride);
  lazy.ledger = LedgerView("short", 2, 0);  // no pending word
  std::string e = error_of(
      [&] { gdn::recurrence_verify_lazy(space, cfg, din.in, slots, S, out.view, rows, lazy); });
  EXPECT_NE(e.find("lazy.ledger"), std::string::npos) << e;
  EXPECT_NE(e.find(">= 2"), std::string::npos) << e;
  e = error_of([&] { gdn::lazy_accept(space, to_device(1, 1, {0}), lazy, to_device({1})); });
  EXPECT_NE(e.find("lazy.ledger"), std::string::npos) << e;
  auto narrow = make_lazy<float>(2, cfg, 8, stride - 1);
  e = error_of(
      [&] { gdn::recurrence_verify_lazy(space, cfg, din.in, slots, S, out.view, rows, narrow); });
  EXPECT_NE(e.find("lazy.history"), std::string::npos) << e;
  EXPECT_NE(e.find("record_stride"), std::string::npos) << e;
  const auto ok = make_lazy<float>(2, cfg, 8, stride);
  e = error_of([&] { gdn::lazy_accept(space, to_device(1, 2, {0, 1}), ok, to_device({1})); });
  EXPECT_NE(e.find("ring_rows"), std::string::npos) << e;
}

TEST(LazyCommit, CheckingModeRejectsBadLedgersAndRows) {
  const Checking on(true);
  const ExecSpace space;
  const gdn::HeadConfig cfg = grouped();
  const int stride = int(gdn::ring_record_elements(64, 64, 2));
  auto S = make_state<float>(3, cfg, 1);
  const auto lazy = make_lazy<float>(3, cfg, 4, stride);
  // A window longer than the capacity.
  {
    const Problem p = make_problem(cfg, {5}, 2);
    const DeviceInputs din = upload(p);
    Strided2D out = make_out(p);
    const std::string e = error_of([&] {
      gdn::recurrence_verify_lazy(space, cfg, din.in, to_device({0}), S, out.view,
                                  to_device({0}), lazy);
    });
    EXPECT_NE(e.find("lazy.history"), std::string::npos) << e;
    EXPECT_NE(e.find("capacity 4"), std::string::npos) << e;
  }
  // A pending count past the capacity.
  const auto before = bytes_of(S);
  Kokkos::deep_copy(Kokkos::subview(lazy.ledger, 1, 0), 5u);
  {
    const Problem p = make_problem(cfg, {2}, 3);
    const DeviceInputs din = upload(p);
    Strided2D out = make_out(p);
    std::string e = error_of([&] {
      gdn::recurrence_verify_lazy(space, cfg, din.in, to_device({0}), S, out.view,
                                  to_device({1}), lazy);
    });
    EXPECT_NE(e.find("lazy.ledger(1, 0) = 5"), std::string::npos) << e;
    e = error_of([&] { gdn::lazy_accept(space, to_device(1, 1, {1}), lazy, to_device({1})); });
    EXPECT_NE(e.find("lazy.ledger(1, 0) = 5"), std::string::npos) << e;
    e = error_of([&] {
      gdn::state_flush(space, cfg, to_device(1, 1, {0}), S, to_device(1, 1, {1}), lazy);
    });
    EXPECT_NE(e.find("lazy.ledger(1, 0) = 5"), std::string::npos) << e;
  }
  Kokkos::deep_copy(lazy.ledger, 0u);
  // Two rows of one call on one state slot, or one history row.
  {
    const Problem p = make_problem(cfg, {2, 1}, 4);
    const DeviceInputs din = upload(p);
    Strided2D out = make_out(p);
    std::string e = error_of([&] {
      gdn::recurrence_verify_lazy(space, cfg, din.in, to_device({0, 0}), S, out.view,
                                  to_device({0, 1}), lazy);
    });
    EXPECT_NE(e.find("state_slots"), std::string::npos) << e;
    e = error_of([&] {
      gdn::recurrence_verify_lazy(space, cfg, din.in, to_device({0, 1}), S, out.view,
                                  to_device({2, 2}), lazy);
    });
    EXPECT_NE(e.find("ring_slots"), std::string::npos) << e;
    e = error_of([&] {
      gdn::recurrence_verify_lazy(space, cfg, din.in, to_device({0, 1}), S, out.view,
                                  to_device({2, 3}), lazy);
    });
    EXPECT_NE(e.find("ring_slots"), std::string::npos) << e;
    EXPECT_NE(e.find("history row"), std::string::npos) << e;
    e = error_of(
        [&] { gdn::lazy_accept(space, to_device(2, 1, {2, 2}), lazy, to_device({1})); });
    EXPECT_NE(e.find("ring_rows"), std::string::npos) << e;
  }
  EXPECT_TRUE(same_bytes(bytes_of(S), before)) << "a rejected call wrote the state";
}

}  // namespace
