#ifndef GDN_IMPL_RUN_PLAN_HPP
#define GDN_IMPL_RUN_PLAN_HPP

/// \file run_plan.hpp
/// \brief Which work items each persistent team of a launch with runs takes.
///
/// The recurrence kernels with runs of work items that share their staged k
/// and q (RecurrenceKernel::kKqRuns) hand their items to a fixed number of
/// persistent teams in runs of 2^shift consecutive items. Runs are aligned
/// to their length, so a run never spans two key heads (the host picks
/// 2^shift dividing the items of one key head, launch.hpp).
///
/// The plan. Items [0, end) are whole rounds of runs (one run per team per
/// round): team `rank` of `teams` takes runs (rank + n * teams) * 2^shift,
/// n = 0, 1, ... The rest are single items, end + rank + n * teams, the
/// last round partial. So every team takes floor(items / teams) items or
/// one more, all but fewer than 2^shift of them in runs. Taking runs only
/// (up to `ea77997`: the last round of runs left partial) gave teams up to
/// a whole run more items than others: at B = 256 (16384 items, 528 teams,
/// runs of 4) 128 teams ran 28 items and 400 ran 32, so some SMs hosted 128
/// items and others 120 or 124, and the SMs with 128 set the kernel's end
/// (H200, per-team timers: docs/perf/history.md, eighteenth session). The
/// host takes this plan only from two whole rounds of runs on (the
/// mapping's kq_run_balance_rounds): with one, up to half the items would
/// run single, without the k and q their run shares. Otherwise `end` is
/// `items`: runs only, the last round partial.
///
/// Empty rows. A run lies in one row; a team skips the runs of empty rows
/// (`nonempty(item)`: the row of `item` has tokens), so it never reads their
/// slots.

#include <Kokkos_Core.hpp>

namespace gdn {
namespace Impl {

struct RunPlan {
  int shift = 0;  ///< runs of 2^shift items
  int end = 0;    ///< the runs cover items [0, end), whole rounds; single items from there on

  /// The first item of team `rank` of `teams` (`items` in all): -1 if none.
  template <class NonEmpty>
  KOKKOS_INLINE_FUNCTION int first(int rank, int teams, int items, const NonEmpty& nonempty) const {
    return settle(rank << shift, true, teams, items, nonempty);
  }
  /// The item a team (one of `teams`) takes after `item`: the rest of
  /// item's run, then the team's next non-empty run, then its single items;
  /// -1 if none.
  template <class NonEmpty>
  KOKKOS_INLINE_FUNCTION int after(int item, int teams, int items, const NonEmpty& nonempty) const {
    if (item >= end) return settle(item + teams, false, teams, items, nonempty);
    const int mask = (1 << shift) - 1;
    if (((item + 1) & mask) != 0) return item + 1;
    return settle((item & ~mask) + (teams << shift), true, teams, items, nonempty);
  }
  /// Whether `next`, taken right after `item`, is the next item of the same
  /// run (so of the same row and key head).
  KOKKOS_INLINE_FUNCTION bool same_run(int item, int next) const {
    return next == item + 1 && (next & ((1 << shift) - 1)) != 0;
  }

 private:
  /// The first non-empty run or item at or after `x`: a run of the team
  /// (`in_runs`: x = (rank + n * teams) * 2^shift, n >= 0) or one of its
  /// single items (x = end + rank + n * teams); -1 if none. The runs are
  /// whole rounds, so the first of the team's runs past `end` lies
  /// rank * 2^shift beyond it, and its first single item rank beyond it
  /// (with runs only, `end` == `items`, that is past the items too).
  template <class NonEmpty>
  KOKKOS_INLINE_FUNCTION int settle(int x, bool in_runs, int teams, int items,
                                    const NonEmpty& nonempty) const {
    if (in_runs) {
      for (; x < end; x += teams << shift) {
        if (nonempty(x)) return x;
      }
      x = end + ((x - end) >> shift);
    }
    for (; x < items; x += teams) {
      if (nonempty(x)) return x;
    }
    return -1;
  }
};

/// The plan of `items` items on `teams` teams with runs of 2^shift items:
/// as many whole rounds of runs as there are, then single items, when there
/// are at least `min_rounds` whole rounds (`min_rounds` >= 1); otherwise runs
/// only, the last round partial. With at most as many runs as teams (the
/// host then launches one team per run) the runs cover everything.
inline RunPlan make_run_plan(int items, int teams, int shift, int min_rounds = 1) {
  RunPlan p;
  p.shift = shift;
  p.end = items;
  const long long round = static_cast<long long>(teams) << shift;
  if (min_rounds >= 1 && round > 0 && items / round >= min_rounds) {
    p.end = static_cast<int>(items / round * round);
  }
  return p;
}

/// Items of the busiest team under plan `p` of `items` items (every row non-empty).
inline long long busiest_team_items(const RunPlan& p, int teams, int items) {
  if (teams <= 0) return items;
  const long long runs = p.end >> p.shift;
  return ((runs + teams - 1) / teams << p.shift) + (items - p.end + teams - 1) / teams;
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_RUN_PLAN_HPP
