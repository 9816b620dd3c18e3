#ifndef GDN_IMPL_TUNING_HPP
#define GDN_IMPL_TUNING_HPP

/// \file tuning.hpp
/// \brief Process-wide overrides of launch choices, for tests (not API).
///
/// The recurrence kernels with runs of work items sharing k and q
/// (RecurrenceKernel::kKqRuns) choose the run length of a call from its
/// items and the resident teams (kq_run_shift, launch.hpp), so on a given
/// device small test batches never take runs. The tests force a length to
/// reach that path on any batch.

namespace gdn {
namespace Impl {

/// Force the run length of every later recurrence call whose kernel has runs:
/// `run` items (a power of two; it is used only where it divides the items of
/// one key head of a row), or 0 (the default) for the automatic choice.
void force_kq_run(int run);
/// The forced run length; 0: none.
int forced_kq_run();

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_TUNING_HPP
