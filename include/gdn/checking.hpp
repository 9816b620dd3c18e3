#ifndef GDN_CHECKING_HPP
#define GDN_CHECKING_HPP

/// \file checking.hpp
/// \brief The opt-in index checking mode.
///
/// Shapes, extents and head geometry are always checked on the host. Index
/// *contents* (slots, offsets, row tables) live on the device; reading them
/// costs a device-to-host copy and a fence, so they are only validated when
/// index checking is on. Turn it on with `gdn::set_index_checking(true)` or by
/// setting the environment variable `GDN_CHECK_INDICES=1` before the first call.
/// While it is on, every entry point copies its index views to the host,
/// validates them (bounds, monotone offsets, rows that two requests would
/// write concurrently; for raw gates, gdn::GateInputs, also that A_log and
/// dt_bias are finite, since they too live on the device) and throws
/// `gdn::InvalidArgument` naming the first bad position; it also fences the
/// given execution space instance (the call is then no longer asynchronous).
/// When it is off, no extra work is done.
///
/// With the checking mode off, no index is trusted either: every kernel
/// compares each slot, ring row, fold table entry and row end with its
/// extent, and skips an entry out of range as it skips a padding row (none of
/// its rows is read or written, the other rows get their bits), counting it
/// in a device-side word per memory space that `gdn::skipped_rows` reads.

#include <gdn/impl/launch/skip_counter.hpp>

#include <Kokkos_Core.hpp>

namespace gdn {

/// \brief Turn the index checking mode on or off (process-wide, thread-safe).
void set_index_checking(bool enabled);
/// \brief Whether the index checking mode is on (initially: `GDN_CHECK_INDICES` is set and not
/// "0").
bool index_checking_enabled();

/// \brief The rows (sequences of a call; layer entries of a fold) that calls
/// on `space`'s memory space skipped because an index was out of range, since
/// the first call or the last `reset_skipped_rows`. Padding rows
/// (gdn::pad_slot) are not counted. Fences `space` (the count includes every
/// call enqueued on it before); the calls themselves never synchronise.
template <class ExecSpace>
unsigned long long skipped_rows(const ExecSpace& space) {
  const auto counter = Impl::skip_counter<typename ExecSpace::memory_space>();
  unsigned long long n = 0;
  Kokkos::deep_copy(
      space,
      Kokkos::View<unsigned long long, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
          &n),
      counter);
  space.fence();
  return n;
}

/// \brief Sets the count of `skipped_rows` to 0 (enqueued on `space`).
template <class ExecSpace>
void reset_skipped_rows(const ExecSpace& space) {
  Kokkos::deep_copy(space, Impl::skip_counter<typename ExecSpace::memory_space>(), 0ull);
}

}  // namespace gdn

#endif  // GDN_CHECKING_HPP
