// The state_fold entry point (with or without the conv pools) and its binding.
// Part of the module gdn._gdn (gdn_module.cpp includes it, once).

#ifndef GDN_PYTHON_FOLD_HPP
#define GDN_PYTHON_FOLD_HPP

#include <pybind11/pybind11.h>

#include <gdn/config.hpp>
#include <gdn/conv_inputs.hpp>
#include <gdn/lazy_commit.hpp>
#include <gdn/state_fold.hpp>

#include <string>
#include <type_traits>

#include "arg.hpp"
#include "launch.hpp"
#include "tensors.hpp"
#include "views.hpp"

namespace py = pybind11;

namespace gdn_python {
namespace {

/// state_fold, or with a `ledger` (not null; `num_accepted` then unused) state_flush, whose
/// history is `ring`; with `conv_state` and `conv_ring` (both not None) the ConvFold overload,
/// which commits the conv states in the same call (`conv_ring`: the conv history of a flush).
void state_fold(const gdn::HeadConfig& cfg, py::handle state_rows, py::handle state,
                py::handle ring_rows, py::handle ring, py::handle num_accepted,
                py::handle conv_state, py::handle conv_ring, const py::object& stream,
                Timing* timing = nullptr, py::handle ledger = py::handle()) {
  const bool lazy = ledger.ptr() != nullptr;
  Call c(lazy ? "gdn.state_flush" : "gdn.state_fold", stream);
  const char* ring_name = lazy ? "conv_history" : "conv_ring";
  const Arg a_srows = c.borrow(state_rows, "state_rows"), a_state = c.borrow(state, "state"),
            a_rrows = c.borrow(ring_rows, "ring_rows"),
            a_ring = c.borrow(ring, lazy ? "history" : "ring");
  const Arg a_acc = lazy ? Arg() : c.borrow(num_accepted, "num_accepted");
  const Arg a_ledger = lazy ? c.borrow(ledger, "ledger") : Arg();
  const bool with_conv = !conv_state.is_none() || !conv_ring.is_none();
  if (with_conv && (conv_state.is_none() || conv_ring.is_none())) {
    const bool no_state = conv_state.is_none();
    throw py::type_error(c.prefix(no_state ? "conv_state" : ring_name) +
                         "expected a tensor since " + (no_state ? ring_name : "conv_state") +
                         " is given (the conv pools are folded together: both or neither), "
                         "got None");
  }
  Arg a_cstate, a_cring;
  if (with_conv) {
    a_cstate = c.borrow(conv_state, "conv_state");
    a_cring = c.borrow(conv_ring, ring_name);
    (void)c.storage_is_float(a_cstate);  // a TypeError for any other dtype, before Kokkos starts
  }
  on_device(c, [&](const auto& space) {
    using Exec = std::decay_t<decltype(space)>;
    using M = typename Exec::memory_space;
    const auto srows = index_2d<M>(c, a_srows);
    const auto rrows = index_2d<M>(c, a_rrows);
    with_pool<M>(c, a_state, "[slots, nv, Dk, Dv]", [&](const auto& st) {
      with_pool<M>(c, a_ring, "[ring_rows, nk, RING_LEN, record_stride]", [&](const auto& rg) {
        using RingT = typename std::decay_t<decltype(rg)>::value_type;
        // The call with the conv pools `conv...` (none or one ConvFold).
        const auto run = [&](const auto&... conv) {
          if (lazy) {
            const gdn::LazyRing<M, RingT> lz{rg, ledger_2d<M>(c, a_ledger)};
            launch(space, timing,
                   [&] { gdn::state_flush(space, cfg, srows, st, rrows, lz, conv...); });
          } else {
            const auto acc = index_1d<M>(c, a_acc, "[B]");
            launch(space, timing,
                   [&] { gdn::state_fold(space, cfg, srows, st, rrows, rg, acc, conv...); });
          }
        };
        if (!with_conv) {
          run();
          return;
        }
        with_storage(c, a_cstate, [&](auto ct) {
          using T = decltype(ct);
          c.expect_storage(a_cring, std::is_same<T, float>::value, "the dtype of conv_state");
          gdn::ConvFold<M, T> conv;
          conv.conv_state = pool_3d<T, M>(c, a_cstate, "[slots, conv_dim, W-1]");
          conv.conv_ring = pool_3d<const T, M>(c, a_cring, "[ring_rows, RING_LEN, conv_dim]");
          run(conv);
        });
      });
    });
  });
}

void bind_fold(py::module_& m) {
  m.def(
      "state_fold",
      [](const gdn::HeadConfig& cfg, py::handle state_rows, py::handle state, py::handle ring_rows,
         py::handle ring, py::handle num_accepted, py::handle conv_state, py::handle conv_ring,
         const py::object& stream) {
        state_fold(cfg, state_rows, state, ring_rows, ring, num_accepted, conv_state, conv_ring,
                   stream);
      },
      py::arg("cfg"), py::arg("state_rows"), py::arg("state"), py::arg("ring_rows"),
      py::arg("ring"), py::arg("num_accepted"), py::arg("conv_state") = py::none(),
      py::arg("conv_ring") = py::none(), py::arg("stream") = py::none());
}

}  // namespace
}  // namespace gdn_python

#endif  // GDN_PYTHON_FOLD_HPP
