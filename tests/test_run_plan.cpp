// gdn::Impl::RunPlan (run_plan.hpp: which work items each persistent team
// takes when items run in runs that share k and q), on the host: every item
// of a non-empty row is taken exactly once, runs stay aligned and in one
// row, the teams' loads differ by at most one item, and the host's busiest
// count is the largest load. The kernels' results under the plan are tested
// by the Exactness.KqRunsOf*Forced* tests (forced run lengths and team counts).
#include "test_support.hpp"

#include <gdn/impl/run_plan.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace gdn_test {
namespace {

using gdn::Impl::RunPlan;

struct Walk {
  std::vector<int> taken;             // per item: how many teams took it
  std::vector<std::vector<int>> seq;  // per team: its items in order
};

// The kernels' predicate (the row of item i has tokens), callable from the
// plan's host-and-device functions without a host-only call.
struct RowsNonEmpty {
  const char* empty;  // per row
  int per_row;
  KOKKOS_INLINE_FUNCTION bool operator()(int i) const { return empty[i / per_row] == 0; }
};

// Every team's sequence under plan `p`, rows of `per_row` items, `empty` rows skipped.
Walk walk(const RunPlan& p, int p_items, int teams, int per_row, const std::vector<bool>& empty) {
  const std::vector<char> flags(empty.begin(), empty.end());
  const RowsNonEmpty nonempty{flags.data(), per_row};
  Walk w;
  w.taken.assign(static_cast<std::size_t>(p_items), 0);
  w.seq.resize(static_cast<std::size_t>(teams));
  for (int r = 0; r < teams; ++r) {
    for (int i = p.first(r, teams, p_items, nonempty); i >= 0;
         i = p.after(i, teams, p_items, nonempty)) {
      w.taken[static_cast<std::size_t>(i)]++;
      w.seq[static_cast<std::size_t>(r)].push_back(i);
      if (w.seq[static_cast<std::size_t>(r)].size() > static_cast<std::size_t>(p_items)) break;
    }
  }
  return w;
}

void check(int items, int teams, int shift, int per_row, const std::vector<bool>& empty) {
  SCOPED_TRACE("items " + std::to_string(items) + " teams " + std::to_string(teams) + " shift " +
               std::to_string(shift) + " per_row " + std::to_string(per_row));
  const RunPlan p = gdn::Impl::make_run_plan(items, teams, shift);
  const Walk w = walk(p, items, teams, per_row, empty);
  for (int i = 0; i < items; ++i) {
    const bool skip = empty[static_cast<std::size_t>(i / per_row)];
    ASSERT_EQ(w.taken[static_cast<std::size_t>(i)], skip ? 0 : 1) << "item " << i;
  }
  bool any_empty = false;
  for (bool e : empty) any_empty = any_empty || e;
  std::size_t lo = static_cast<std::size_t>(items), hi = 0;
  for (const auto& s : w.seq) {
    lo = std::min(lo, s.size());
    hi = std::max(hi, s.size());
    // A run: consecutive items of one row, begun at a multiple of its length,
    // and same_run holds exactly between the items of one aligned block of 2^shift.
    for (std::size_t j = 1; j < s.size(); ++j) {
      const bool next_in_block = s[j] == s[j - 1] + 1 && (s[j] >> shift) == (s[j - 1] >> shift);
      EXPECT_EQ(p.same_run(s[j - 1], s[j]), next_in_block) << s[j - 1] << " -> " << s[j];
      if (p.same_run(s[j - 1], s[j])) {  // the kernel then reuses the k and q of the row
        EXPECT_EQ(s[j] / per_row, s[j - 1] / per_row) << "a run spans two rows at " << s[j];
      }
    }
  }
  if (!any_empty) {
    EXPECT_EQ(static_cast<long long>(hi), gdn::Impl::busiest_team_items(p, teams, items));
    if ((items >> shift) > teams) {
      EXPECT_LE(hi - lo, 1u) << "loads " << lo << " to " << hi;
    } else {  // one run per team, or fewer runs than teams (the host launches a team per run)
      EXPECT_LE(hi, static_cast<std::size_t>(1) << shift);
    }
  }
}

TEST(RunPlan, EveryItemOnceAndBalanced) {
  // Qwen3-Next at B = 256 on an H200 (528 and 396 persistent teams), smaller
  // cases that reach every level, and a run per team (as many teams as runs).
  for (int shift : {0, 1, 2, 3}) {
    for (int teams : {1, 2, 3, 7, 16, 33, 396, 528}) {
      for (int rows : {1, 5, 24, 256}) {
        const int per_row = 64;  // 32 value heads x 2 tiles
        const int items = rows * per_row;
        check(items, teams, shift, per_row, std::vector<bool>(static_cast<std::size_t>(rows)));
      }
    }
    const int runs_teams = (256 * 64) >> shift;  // the host's one run per team
    check(256 * 64, runs_teams, shift, 64, std::vector<bool>(256));
  }
}

TEST(RunPlan, EmptyRowsAreSkipped) {
  for (int shift : {1, 2}) {
    for (int teams : {1, 3, 7, 40}) {
      std::vector<bool> empty(37);
      for (std::size_t r = 0; r < empty.size(); ++r) empty[r] = r % 3 == 1 || r == 36;
      check(37 * 8, teams, shift, 8, empty);
      check(37 * 4, teams, shift, 4, empty);
      check(37 * 8, teams, shift, 8, std::vector<bool>(37, true));  // nothing to take
    }
  }
}

TEST(RunPlan, NoItemsOrNoTeams) {
  // B == 0 launches nothing; the plan must still be made without a division by zero.
  const RunPlan p = gdn::Impl::make_run_plan(0, 0, 2);
  EXPECT_EQ(p.end, 0);
  EXPECT_EQ(gdn::Impl::busiest_team_items(p, 0, 0), 0);
  const RunPlan q = gdn::Impl::make_run_plan(0, 5, 1);
  const Walk w = walk(q, 0, 5, 8, {});
  for (const auto& s : w.seq) EXPECT_TRUE(s.empty());
}

TEST(RunPlan, RunsOnlyAsBefore) {
  // GDN_CUDA_KQ_RUN_BALANCE=0 (or fewer whole rounds than it asks for): runs
  // only, team rank taking runs rank, rank + teams, ...
  for (int teams : {1, 7, 528}) {
    const RunPlan p = gdn::Impl::make_run_plan(16384, teams, 2, 0);
    const Walk w = walk(p, 16384, teams, 64, std::vector<bool>(256));
    std::size_t hi = 0;
    for (int r = 0; r < teams; ++r) {
      const auto& s = w.seq[static_cast<std::size_t>(r)];
      hi = std::max(hi, s.size());
      for (std::size_t j = 0; j < s.size(); ++j) {
        const int run = r + static_cast<int>(j / 4) * teams;
        ASSERT_EQ(s[j], run * 4 + static_cast<int>(j % 4)) << "team " << r;
      }
    }
    EXPECT_EQ(static_cast<long long>(hi), gdn::Impl::busiest_team_items(p, teams, 16384));
  }
}

TEST(RunPlan, SingleItemsFromTheRoundsAskedFor) {
  // 4096 items (Dk = 64, B = 128) on 1056 teams in runs of 2: one whole round
  // (2112 items), so with the default of two rounds, runs only; 8192 items:
  // three whole rounds, then single items.
  const RunPlan one = gdn::Impl::make_run_plan(4096, 1056, 1, 2);
  EXPECT_EQ(one.end, 4096);
  EXPECT_EQ(gdn::Impl::busiest_team_items(one, 1056, 4096), 4);
  EXPECT_EQ(gdn::Impl::make_run_plan(4096, 1056, 1, 1).end, 2112);
  const RunPlan three = gdn::Impl::make_run_plan(8192, 1056, 1, 2);
  EXPECT_EQ(three.end, 3 * 2112);
  EXPECT_EQ(gdn::Impl::busiest_team_items(three, 1056, 8192), 8);  // 6 in runs, 1 or 2 single
  check(8192, 1056, 1, 32, std::vector<bool>(256));
}

TEST(RunPlan, B256OnAnH200) {
  // 16384 items, 528 teams, runs of 4: 7 whole rounds of runs (14784 items),
  // then 1600 single items, 3 rounds and 16 more: 16 teams take 32 items, 512
  // take 31 (runs alone: 400 took 32, 128 took 28).
  const RunPlan p = gdn::Impl::make_run_plan(16384, 528, 2);
  EXPECT_EQ(p.end, 7 * 528 * 4);
  EXPECT_EQ(gdn::Impl::busiest_team_items(p, 528, 16384), 32);
  const Walk w = walk(p, 16384, 528, 64, std::vector<bool>(256));
  int n32 = 0, n31 = 0;
  for (const auto& s : w.seq) {
    n32 += s.size() == 32;
    n31 += s.size() == 31;
  }
  EXPECT_EQ(n32, 16);
  EXPECT_EQ(n31, 512);
}

}  // namespace
}  // namespace gdn_test
