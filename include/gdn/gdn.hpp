#ifndef GDN_GDN_HPP
#define GDN_GDN_HPP

/// \file gdn.hpp
/// \brief Umbrella header of gdn: Gated DeltaNet recurrence, verify-with-ring and fold on Kokkos,
/// and the causal conv1d in front of it.

#include <gdn/bf16.hpp>
#include <gdn/checking.hpp>
#include <gdn/config.hpp>
#include <gdn/conv1d.hpp>
#include <gdn/conv_inputs.hpp>
#include <gdn/error.hpp>
#include <gdn/lazy_commit.hpp>
#include <gdn/recurrence_fwd.hpp>
#include <gdn/recurrence_prefill.hpp>
#include <gdn/ring.hpp>
#include <gdn/state_fold.hpp>
#include <gdn/verify_ring.hpp>
#include <gdn/version.hpp>

#endif  // GDN_GDN_HPP
