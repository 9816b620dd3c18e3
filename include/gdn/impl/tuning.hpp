#ifndef GDN_IMPL_TUNING_HPP
#define GDN_IMPL_TUNING_HPP

/// \file tuning.hpp
/// \brief Process-wide overrides of launch choices, for tests (not API).
///
/// The recurrence kernels with runs of work items sharing k and q
/// (RecurrenceKernel::kKqRuns) choose the run length of a call from its
/// items and the resident teams (kq_run_shift, launch.hpp), so on a given
/// device small test batches never take runs. The tests force a length to
/// reach that path on any batch, and a smaller number of persistent teams to
/// give each team several runs.

namespace gdn {
namespace Impl {

/// Force the run length of every later recurrence call whose kernel has runs:
/// `run` items (a power of two; it is used only where it divides the items of
/// one key head of a row), or 0 (the default) for the automatic choice.
void force_kq_run(int run);
/// The forced run length; 0: none.
int forced_kq_run();
/// Launch at most `teams` persistent teams in every later recurrence call
/// whose kernel has them (CUDA), or 0 (the default) for as many as are
/// resident: small test batches then give each team several items, and with
/// runs, every level of the run plan (run_plan.hpp).
void force_persistent_teams(int teams);
/// The forced team count; 0: none.
int forced_persistent_teams();

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_TUNING_HPP
