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

namespace gdn {

/// \brief Turn the index checking mode on or off (process-wide, thread-safe).
void set_index_checking(bool enabled);
/// \brief Whether the index checking mode is on (initially: `GDN_CHECK_INDICES` is set and not
/// "0").
bool index_checking_enabled();

}  // namespace gdn

#endif  // GDN_CHECKING_HPP
