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
/// (H200, per-team timers: docs/performance.md, eighteenth session). The
/// host takes this plan only from two whole rounds of runs on (the
/// mapping's kq_run_balance_rounds): with one, up to half the items would
/// run single, without the k and q their run shares. Otherwise `end` is
/// `items`: runs only, the last round partial.
///
/// The lead (off by default; the mapping's kq_run_lead_pct). On an H200 a
/// team's time per item depends on the order in which the GPU placed it on
/// its SM: at B = 512 the first team placed on each SM ran an item in 3.34
/// us, the fourth in 3.85 us (per-team timers, eighteenth session), so with
/// equal loads the SM waits for its last team. Teams are placed a wave at a
/// time (team rank / wave, wave = the SMs), so the plan can give later
/// waves fewer runs: the runs then come in phases, phase p whole rounds of
/// the teams of the first waves - p waves (bound[p], width[p]).
///
/// Empty rows. A run lies in one row; a team skips the runs of empty rows
/// (`nonempty(item)`: the row of `item` has tokens), so it never reads their
/// slots.

#include <Kokkos_Core.hpp>

namespace gdn {
namespace Impl {

struct RunPlan {
  static constexpr int kMaxPhases = 4;  ///< phases of runs at most (waves of teams led)
  int shift = 0;                        ///< runs of 2^shift items
  int phases = 1;                       ///< phases of runs, 1 to kMaxPhases
  /// Phase p's runs are items [bound[p - 1], bound[p]) (bound[-1] = 0),
  /// whole rounds of its width[p] teams, ranks 0 to width[p] - 1 (width[0]:
  /// all teams); single items from end() on, over all teams.
  int bound[kMaxPhases] = {};
  int width[kMaxPhases] = {};

  /// Where the runs end and the single items begin.
  KOKKOS_INLINE_FUNCTION int end() const { return bound[phases - 1]; }

  /// The first item of team `rank` of `teams` (`items` in all): -1 if none.
  template <class NonEmpty>
  KOKKOS_INLINE_FUNCTION int first(int rank, int teams, int items, const NonEmpty& nonempty) const {
    return settle(rank << shift, 0, teams, items, nonempty);
  }
  /// The item a team (one of `teams`) takes after `item`: the rest of
  /// item's run, then the team's next non-empty run, then its single items;
  /// -1 if none.
  template <class NonEmpty>
  KOKKOS_INLINE_FUNCTION int after(int item, int teams, int items, const NonEmpty& nonempty) const {
    if (item >= end()) return settle(item + teams, phases, teams, items, nonempty);
    const int mask = (1 << shift) - 1;
    if (((item + 1) & mask) != 0) return item + 1;
    int p = 0;
    while (item >= bound[p]) ++p;  // item < end(), so p < phases
    return settle((item & ~mask) + (width[p] << shift), p, teams, items, nonempty);
  }
  /// Whether `next`, taken right after `item`, is the next item of the same
  /// run (so of the same row and key head).
  KOKKOS_INLINE_FUNCTION bool same_run(int item, int next) const {
    return next == item + 1 && (next & ((1 << shift) - 1)) != 0;
  }

 private:
  /// The first non-empty run or item at or after `x` of the team: x is one
  /// of its runs of phase p < phases, or (p == phases) one of its single
  /// items, end() + rank + n * teams; -1 if none. A phase is whole rounds of
  /// its teams, so a team's first run past phase p lies rank * 2^shift beyond
  /// bound[p]; that is where its runs of phase p + 1 begin, if it takes part
  /// in that phase, and otherwise it goes on with its single items. (With
  /// runs only, end() == `items`, the last round partial: that is past the
  /// items too.)
  template <class NonEmpty>
  KOKKOS_INLINE_FUNCTION int settle(int x, int p, int teams, int items,
                                    const NonEmpty& nonempty) const {
    for (; p < phases; ++p) {
      for (; x < bound[p]; x += width[p] << shift) {
        if (nonempty(x)) return x;
      }
      const int rank = (x - bound[p]) >> shift;
      if (p + 1 < phases && rank < width[p + 1]) {
        x = bound[p] + (rank << shift);
      } else {
        x = end() + rank;
        break;
      }
    }
    for (; x < items; x += teams) {
      if (nonempty(x)) return x;
    }
    return -1;
  }
};

/// The plan of `items` items on `teams` teams with runs of 2^shift items.
/// With at least `min_rounds` whole rounds of runs (`min_rounds` >= 1): whole
/// rounds of runs, then single items; otherwise runs only, the last round
/// partial. With at most as many runs as teams (the host then launches one
/// team per run) the runs cover everything.
/// The lead (`lead_pct` > 0, `wave` teams per wave, 0 < wave < teams):
/// teams of a later wave (rank / wave: the order in which the GPU places
/// teams on its SMs, so the later ones share an SM with earlier ones) take
/// fewer runs, about lead_pct per cent fewer per wave than the first. Up to
/// kMaxPhases waves; any teams beyond them count in the last. The runs
/// then come in phases, each whole rounds of the teams of the first waves,
/// one wave fewer per phase; the single items stay spread over all teams.
inline RunPlan make_run_plan(int items, int teams, int shift, int min_rounds = 1, int wave = 0,
                             int lead_pct = 0) {
  RunPlan p;
  p.shift = shift;
  p.bound[0] = items;
  p.width[0] = teams;
  const long long round = static_cast<long long>(teams) << shift;
  if (min_rounds < 1 || round <= 0 || items / round < min_rounds) return p;
  p.bound[0] = static_cast<int>(items / round * round);
  if (lead_pct <= 0 || wave <= 0 || wave >= teams) return p;
  int waves = (teams + wave - 1) / wave;
  if (waves > RunPlan::kMaxPhases) waves = RunPlan::kMaxPhases;
  if (lead_pct * (waves - 1) >= 100) return p;
  // Runs per team of wave s, in proportion to 100 - s * lead_pct, rounded
  // to the nearest (whole runs: the lead moves items a run at a time), and
  // no more than the items hold: phase ph gives each team of the first
  // waves - ph waves its runs beyond the later waves' runs. The last wave
  // takes the teams beyond the others.
  long long weight = 0;
  for (int s = 0; s < waves; ++s) {
    const long long members = s + 1 < waves ? wave : teams - (waves - 1) * wave;
    weight += members * (100 - s * lead_pct);
  }
  const long long runs = items >> shift;
  long long done = 0, bound = 0, left = runs;  // runs given to every team so far; runs left
  for (int ph = 0; ph < waves; ++ph) {
    const int s = waves - 1 - ph;  // the last wave that takes part
    const long long width = ph == 0 ? teams : static_cast<long long>(s + 1) * wave;
    long long want = (2 * runs * (100 - s * lead_pct) + weight) / (2 * weight);
    if (want < done) want = done;
    if (want > done + left / width) want = done + left / width;
    left -= (want - done) * width;
    bound += ((want - done) * width) << shift;
    done = want;
    p.bound[ph] = static_cast<int>(bound);
    p.width[ph] = static_cast<int>(width);
  }
  p.phases = waves;
  return p;
}

/// Items of the busiest team under plan `p` of `items` items (every row
/// non-empty): a team of the first wave.
inline long long busiest_team_items(const RunPlan& p, int teams, int items) {
  if (teams <= 0) return items;
  const long long singles = (items - p.end() + teams - 1) / teams;
  if (p.phases == 1) {
    const long long runs = p.bound[0] >> p.shift;
    return ((runs + teams - 1) / teams << p.shift) + singles;
  }
  long long runs = 0, from = 0;
  for (int ph = 0; ph < p.phases; ++ph) {
    runs += (p.bound[ph] - from) / (static_cast<long long>(p.width[ph]) << p.shift);
    from = p.bound[ph];
  }
  return (runs << p.shift) + singles;
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_RUN_PLAN_HPP
