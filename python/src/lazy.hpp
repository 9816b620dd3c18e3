// The lazy-commit entry points (recurrence_verify_lazy, conv1d_verify_lazy, lazy_accept,
// state_flush, lazy_drop) and their bindings. The verifies and the flush are the eager calls'
// functions with a ledger (recurrence.hpp, conv.hpp, fold.hpp).
// Part of the module gdn._gdn (gdn_module.cpp includes it, once).

#ifndef GDN_PYTHON_LAZY_HPP
#define GDN_PYTHON_LAZY_HPP

#include <pybind11/pybind11.h>

#include <gdn/config.hpp>
#include <gdn/lazy_commit.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

#include "arg.hpp"
#include "conv.hpp"
#include "fold.hpp"
#include "launch.hpp"
#include "recurrence.hpp"
#include "tensors.hpp"
#include "views.hpp"

namespace py = pybind11;

namespace gdn_python {
namespace {

/// lazy_accept (`num_accepted` not null) or lazy_drop: only the ledger is written; the
/// history gives the capacity and its type.
void lazy_ledger_call(const char* fn, py::handle ring_rows, py::handle history, py::handle ledger,
                      py::handle num_accepted, const py::object& stream) {
  Call c(fn, stream);
  const bool accept = num_accepted.ptr() != nullptr;
  const Arg a_rrows = c.borrow(ring_rows, "ring_rows"), a_hist = c.borrow(history, "history"),
            a_ledger = c.borrow(ledger, "ledger");
  const Arg a_acc = accept ? c.borrow(num_accepted, "num_accepted") : Arg();
  on_device(c, [&](const auto& space) {
    using Exec = std::decay_t<decltype(space)>;
    using M = typename Exec::memory_space;
    const auto rrows = index_2d<M>(c, a_rrows);
    with_pool<M>(c, a_hist, "[ring_rows, nk, capacity, record_stride]", [&](const auto& hist) {
      using RingT = typename std::decay_t<decltype(hist)>::value_type;
      const gdn::LazyRing<M, RingT> lz{hist, ledger_2d<M>(c, a_ledger)};
      if (accept) {
        const auto acc = index_1d<M>(c, a_acc, "[B]");
        launch(space, nullptr, [&] { gdn::lazy_accept(space, rrows, lz, acc); });
      } else {
        launch(space, nullptr, [&] { gdn::lazy_drop(space, rrows, lz); });
      }
    });
  });
}

void bind_lazy(py::module_& m) {
  m.def(
      "recurrence_verify_lazy",
      [](const gdn::HeadConfig& cfg, py::handle qkv, py::handle decay, py::handle beta,
         py::handle row_offsets, py::handle state_slots, py::handle state, py::handle out,
         py::handle ring_slots, py::handle history, py::handle ledger, const py::object& stream) {
        recurrence_verify_ring("gdn.recurrence_verify_lazy", cfg, qkv,
                               Gates{{decay, "decay"}, {beta, "beta"}}, row_offsets, state_slots,
                               state, out, ring_slots, history, stream, nullptr, ledger);
      },
      py::arg("cfg"), py::arg("qkv"), py::arg("decay"), py::arg("beta"), py::arg("row_offsets"),
      py::arg("state_slots"), py::arg("state"), py::arg("out"), py::arg("ring_slots"),
      py::arg("history"), py::arg("ledger"), py::arg("stream") = py::none());
  m.def(
      "recurrence_verify_lazy_gates",
      [](const gdn::HeadConfig& cfg, py::handle qkv, py::handle a, py::handle b, py::handle A_log,
         py::handle dt_bias, py::handle row_offsets, py::handle state_slots, py::handle state,
         py::handle out, py::handle ring_slots, py::handle history, py::handle ledger,
         const py::object& stream) {
        recurrence_verify_ring("gdn.recurrence_verify_lazy_gates", cfg, qkv,
                               Gates{{a, "a"}, {b, "b"}, {A_log, "A_log"}, {dt_bias, "dt_bias"}},
                               row_offsets, state_slots, state, out, ring_slots, history, stream,
                               nullptr, ledger);
      },
      py::arg("cfg"), py::arg("qkv"), py::arg("a"), py::arg("b"), py::arg("A_log"),
      py::arg("dt_bias"), py::arg("row_offsets"), py::arg("state_slots"), py::arg("state"),
      py::arg("out"), py::arg("ring_slots"), py::arg("history"), py::arg("ledger"),
      py::arg("stream") = py::none());
  m.def(
      "conv1d_verify_lazy",
      [](const gdn::HeadConfig& cfg, py::handle qkv, py::handle weight, py::handle bias,
         py::handle row_offsets, py::handle state_slots, py::handle conv_state, py::handle out,
         py::handle ring_slots, py::handle conv_history, py::handle history, py::handle ledger,
         const py::object& stream) {
        conv1d("gdn.conv1d_verify_lazy", cfg, qkv, weight, bias, row_offsets, state_slots,
               conv_state, out, ring_slots, conv_history, stream, nullptr, history, ledger);
      },
      py::arg("cfg"), py::arg("qkv"), py::arg("weight"), py::arg("bias").none(true),
      py::arg("row_offsets"), py::arg("state_slots"), py::arg("conv_state"), py::arg("out"),
      py::arg("ring_slots"), py::arg("conv_history"), py::arg("history"), py::arg("ledger"),
      py::arg("stream") = py::none());
  m.def(
      "state_flush",
      [](const gdn::HeadConfig& cfg, py::handle state_rows, py::handle state, py::handle ring_rows,
         py::handle history, py::handle ledger, py::handle conv_state, py::handle conv_history,
         const py::object& stream) {
        state_fold(cfg, state_rows, state, ring_rows, history, py::handle(), conv_state,
                   conv_history, stream, nullptr, ledger);
      },
      py::arg("cfg"), py::arg("state_rows"), py::arg("state"), py::arg("ring_rows"),
      py::arg("history"), py::arg("ledger"), py::arg("conv_state") = py::none(),
      py::arg("conv_history") = py::none(), py::arg("stream") = py::none());
  m.def(
      "lazy_accept",
      [](py::handle ring_rows, py::handle history, py::handle ledger, py::handle num_accepted,
         const py::object& stream) {
        lazy_ledger_call("gdn.lazy_accept", ring_rows, history, ledger, num_accepted, stream);
      },
      py::arg("ring_rows"), py::arg("history"), py::arg("ledger"), py::arg("num_accepted"),
      py::arg("stream") = py::none());
  m.def(
      "lazy_drop",
      [](py::handle ring_rows, py::handle history, py::handle ledger, const py::object& stream) {
        lazy_ledger_call("gdn.lazy_drop", ring_rows, history, ledger, py::handle(), stream);
      },
      py::arg("ring_rows"), py::arg("history"), py::arg("ledger"), py::arg("stream") = py::none());
  m.def(
      "lazy_ledger_words",
      [](long long capacity) {
        if (capacity < 1) {
          throw py::value_error("gdn.lazy_ledger_words: expected capacity >= 1, got " +
                                std::to_string(capacity));
        }
        return gdn::lazy_ledger_words(static_cast<std::size_t>(capacity));
      },
      py::arg("capacity"), "Words of one ledger row for a history of `capacity` records.");
}

}  // namespace
}  // namespace gdn_python

#endif  // GDN_PYTHON_LAZY_HPP
