// The recurrence's entry points (recurrence_fwd, recurrence_verify_ring, with given or raw gates)
// and their bindings.
// Part of the module gdn._gdn (gdn_module.cpp includes it, once).

#ifndef GDN_PYTHON_RECURRENCE_HPP
#define GDN_PYTHON_RECURRENCE_HPP

#include <pybind11/pybind11.h>

#include <gdn/config.hpp>
#include <gdn/lazy_commit.hpp>
#include <gdn/recurrence_fwd.hpp>
#include <gdn/recurrence_prefill.hpp>
#include <gdn/verify_ring.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "arg.hpp"
#include "dlpack.hpp"
#include "launch.hpp"
#include "tensors.hpp"
#include "views.hpp"

namespace py = pybind11;

namespace gdn_python {
namespace {

/// The gate arguments of a call with their names: {decay, beta} or {a, b, A_log, dt_bias}.
using Gates = std::vector<std::pair<py::handle, const char*>>;

/// The per-token inputs of a call: decay and beta given (`gates` empty) or the
/// raw gates a, b with A_log and dt_bias (`gates` holds those four).
struct TokenArgs {
  Arg qkv, decay, beta, row_offsets;
  std::vector<Arg> gates;  // a, b, A_log, dt_bias
};

template <class Exec, class ActT>
gdn::TokenInputs<typename Exec::memory_space, ActT> token_inputs(const Call& c,
                                                                 const TokenArgs& t) {
  using M = typename Exec::memory_space;
  c.expect_activation<ActT>(t.decay);
  c.expect_activation<ActT>(t.beta);
  gdn::TokenInputs<M, ActT> in;
  in.qkv = strided_2d<const ActT, M>(c, t.qkv, false, "[tokens, conv_dim]");
  in.decay = strided_2d<const ActT, M>(c, t.decay, false, "[tokens, nv]");
  in.beta = strided_2d<const ActT, M>(c, t.beta, false, "[tokens, nv]");
  in.row_offsets = index_1d<M>(c, t.row_offsets, "[B + 1]");
  return in;
}

template <class Exec, class ActT>
gdn::GateInputs<typename Exec::memory_space, ActT> gate_inputs(const Call& c, const TokenArgs& t) {
  using M = typename Exec::memory_space;
  const Arg &a = t.gates[0], &b = t.gates[1];
  c.expect_activation<ActT>(a);
  c.expect_activation<ActT>(b);
  gdn::GateInputs<M, ActT> in;
  in.qkv = strided_2d<const ActT, M>(c, t.qkv, false, "[tokens, conv_dim]");
  in.a = strided_2d<const ActT, M>(c, a, false, "[tokens, nv]");
  in.b = strided_2d<const ActT, M>(c, b, false, "[tokens, nv]");
  in.A_log = param_1d<M>(c, t.gates[2], "[nv]");
  in.dt_bias = param_1d<M>(c, t.gates[3], "[nv]");
  in.row_offsets = index_1d<M>(c, t.row_offsets, "[B + 1]");
  return in;
}

/// Calls f(inputs, out view) on `space` with the call's input form and activation type.
template <class Exec, class F>
void with_inputs(const Call& c, const TokenArgs& t, const Arg& out, F&& f) {
  using M = typename Exec::memory_space;
  with_activation(c, t.qkv, [&](auto act) {
    using ActT = decltype(act);
    c.expect_activation<ActT>(out);
    const auto o = strided_2d<ActT, M>(c, out, true, "[tokens, value_dim]");
    if (t.gates.empty()) {
      f(token_inputs<Exec, ActT>(c, t), o);
    } else {
      f(gate_inputs<Exec, ActT>(c, t), o);
    }
  });
}

/// Borrows the per-token arguments: (decay, beta) or (a, b, A_log, dt_bias).
TokenArgs borrow_tokens(Call& c, py::handle qkv, py::handle row_offsets, const Gates& gates) {
  TokenArgs t;
  t.qkv = c.borrow(qkv, "qkv");
  if (gates.size() == 2) {
    t.decay = c.borrow(gates[0].first, gates[0].second);
    t.beta = c.borrow(gates[1].first, gates[1].second);
  } else {
    for (const auto& g : gates) t.gates.push_back(c.borrow(g.first, g.second));
  }
  t.row_offsets = c.borrow(row_offsets, "row_offsets");
  return t;
}

/// recurrence_fwd; `gates`: {decay, beta} or {a, b, A_log, dt_bias} with their names.
void recurrence_fwd(const char* fn, const gdn::HeadConfig& cfg, py::handle qkv, const Gates& gates,
                    py::handle row_offsets, py::handle state_slots, py::handle state,
                    py::handle out, const py::object& stream, Timing* timing = nullptr) {
  Call c(fn, stream);
  const TokenArgs t = borrow_tokens(c, qkv, row_offsets, gates);
  const Arg a_slots = c.borrow(state_slots, "state_slots"), a_state = c.borrow(state, "state"),
            a_out = c.borrow(out, "out");
  (void)c.activation_is_float(t.qkv);  // a TypeError for any other dtype, before Kokkos starts
  on_device(c, [&](const auto& space) {
    using Exec = std::decay_t<decltype(space)>;
    using M = typename Exec::memory_space;
    with_inputs<Exec>(c, t, a_out, [&](const auto& in, const auto& o) {
      const auto slots = index_1d<M>(c, a_slots, "[B]");
      with_pool<M>(c, a_state, "[slots, nv, Dk, Dv]", [&](const auto& st) {
        launch(space, timing, [&] { gdn::recurrence_fwd(space, cfg, in, slots, st, o); });
      });
    });
  });
}

/// recurrence_verify_ring, or with a `ledger` (not null) recurrence_verify_lazy, whose
/// history is `ring`.
void recurrence_verify_ring(const char* fn, const gdn::HeadConfig& cfg, py::handle qkv,
                            const Gates& gates, py::handle row_offsets, py::handle state_slots,
                            py::handle state, py::handle out, py::handle ring_slots,
                            py::handle ring, const py::object& stream, Timing* timing = nullptr,
                            py::handle ledger = py::handle()) {
  Call c(fn, stream);
  const bool lazy = ledger.ptr() != nullptr;
  const TokenArgs t = borrow_tokens(c, qkv, row_offsets, gates);
  const Arg a_slots = c.borrow(state_slots, "state_slots"), a_state = c.borrow(state, "state"),
            a_out = c.borrow(out, "out"), a_rslots = c.borrow(ring_slots, "ring_slots"),
            a_ring = c.borrow(ring, lazy ? "history" : "ring");
  const Arg a_ledger = lazy ? c.borrow(ledger, "ledger") : Arg();
  (void)c.activation_is_float(t.qkv);  // a TypeError for any other dtype, before Kokkos starts
  on_device(c, [&](const auto& space) {
    using Exec = std::decay_t<decltype(space)>;
    using M = typename Exec::memory_space;
    with_inputs<Exec>(c, t, a_out, [&](const auto& in, const auto& o) {
      const auto slots = index_1d<M>(c, a_slots, "[B]");
      const auto rslots = index_1d<M>(c, a_rslots, "[B]");
      with_pool<M>(c, a_state, "[slots, nv, Dk, Dv]", [&](const auto& st) {
        with_pool<M>(c, a_ring, "[ring_rows, nk, RING_LEN, record_stride]", [&](const auto& rg) {
          if (!lazy) {
            launch(space, timing,
                   [&] { gdn::recurrence_verify_ring(space, cfg, in, slots, st, o, rslots, rg); });
            return;
          }
          using RingT = typename std::decay_t<decltype(rg)>::value_type;
          const gdn::LazyRing<M, RingT> lz{rg, ledger_2d<M>(c, a_ledger)};
          launch(space, timing,
                 [&] { gdn::recurrence_verify_lazy(space, cfg, in, slots, st, o, rslots, lz); });
        });
      });
    });
  });
}

/// The precision argument of recurrence_prefill: "bf16" or "tf32x3".
gdn::PrefillPrecision prefill_precision(const Call& c, const std::string& precision) {
  if (precision == "bf16") return gdn::PrefillPrecision::bf16;
  if (precision == "tf32x3") return gdn::PrefillPrecision::tf32x3;
  throw py::value_error(c.prefix("precision") + "expected 'bf16' or 'tf32x3', got '" + precision +
                        "'");
}

/// recurrence_prefill with a workspace (a contiguous rank-1 tensor of any dtype, its bytes) or
/// without one (`workspace` None: the allocating overload).
void recurrence_prefill(const char* fn, const gdn::HeadConfig& cfg, py::handle qkv,
                        const Gates& gates, py::handle row_offsets, py::handle state_slots,
                        py::handle state, py::handle out, py::handle workspace,
                        const std::string& precision, const py::object& stream) {
  Call c(fn, stream);
  const gdn::PrefillPrecision prec = prefill_precision(c, precision);
  const TokenArgs t = borrow_tokens(c, qkv, row_offsets, gates);
  const Arg a_slots = c.borrow(state_slots, "state_slots"), a_state = c.borrow(state, "state"),
            a_out = c.borrow(out, "out");
  const bool with_ws = !workspace.is_none();
  const Arg a_ws = with_ws ? c.borrow(workspace, "workspace") : Arg();
  (void)c.activation_is_float(t.qkv);  // a TypeError for any other dtype, before Kokkos starts
  on_device(c, [&](const auto& space) {
    using Exec = std::decay_t<decltype(space)>;
    using M = typename Exec::memory_space;
    std::size_t ws_bytes = 0;
    if (with_ws) {
      expect_dense(c, a_ws, 1, "[bytes]");
      ws_bytes = static_cast<std::size_t>(a_ws.extent(0)) * ((a_ws.t->dtype.bits + 7) / 8);
    }
    const gdn::PrefillWorkspace<M> ws(with_ws ? static_cast<unsigned char*>(a_ws.data()) : nullptr,
                                      ws_bytes);
    with_inputs<Exec>(c, t, a_out, [&](const auto& in, const auto& o) {
      const auto slots = index_1d<M>(c, a_slots, "[B]");
      with_pool<M>(c, a_state, "[slots, nv, Dk, Dv]", [&](const auto& st) {
        launch(space, nullptr, [&] {
          if (with_ws) {
            gdn::recurrence_prefill(space, cfg, in, slots, st, o, ws, prec);
          } else {
            gdn::recurrence_prefill(space, cfg, in, slots, st, o, prec);
          }
        });
      });
    });
  });
}

void bind_recurrence(py::module_& m) {
  m.def("prefill_workspace_bytes", &gdn::prefill_workspace_bytes, py::arg("cfg"),
        py::arg("max_tokens"), py::arg("max_rows"));
  m.def(
      "recurrence_prefill",
      [](const gdn::HeadConfig& cfg, py::handle qkv, py::handle decay, py::handle beta,
         py::handle row_offsets, py::handle state_slots, py::handle state, py::handle out,
         py::handle workspace, const std::string& precision, const py::object& stream) {
        recurrence_prefill("gdn.recurrence_prefill", cfg, qkv,
                           Gates{{decay, "decay"}, {beta, "beta"}}, row_offsets, state_slots, state,
                           out, workspace, precision, stream);
      },
      py::arg("cfg"), py::arg("qkv"), py::arg("decay"), py::arg("beta"), py::arg("row_offsets"),
      py::arg("state_slots"), py::arg("state"), py::arg("out"), py::arg("workspace"),
      py::arg("precision"), py::arg("stream") = py::none());
  m.def(
      "recurrence_prefill_gates",
      [](const gdn::HeadConfig& cfg, py::handle qkv, py::handle a, py::handle b, py::handle A_log,
         py::handle dt_bias, py::handle row_offsets, py::handle state_slots, py::handle state,
         py::handle out, py::handle workspace, const std::string& precision,
         const py::object& stream) {
        recurrence_prefill("gdn.recurrence_prefill_gates", cfg, qkv,
                           Gates{{a, "a"}, {b, "b"}, {A_log, "A_log"}, {dt_bias, "dt_bias"}},
                           row_offsets, state_slots, state, out, workspace, precision, stream);
      },
      py::arg("cfg"), py::arg("qkv"), py::arg("a"), py::arg("b"), py::arg("A_log"),
      py::arg("dt_bias"), py::arg("row_offsets"), py::arg("state_slots"), py::arg("state"),
      py::arg("out"), py::arg("workspace"), py::arg("precision"), py::arg("stream") = py::none());
  m.def(
      "recurrence_fwd",
      [](const gdn::HeadConfig& cfg, py::handle qkv, py::handle decay, py::handle beta,
         py::handle row_offsets, py::handle state_slots, py::handle state, py::handle out,
         const py::object& stream) {
        recurrence_fwd("gdn.recurrence_fwd", cfg, qkv, Gates{{decay, "decay"}, {beta, "beta"}},
                       row_offsets, state_slots, state, out, stream);
      },
      py::arg("cfg"), py::arg("qkv"), py::arg("decay"), py::arg("beta"), py::arg("row_offsets"),
      py::arg("state_slots"), py::arg("state"), py::arg("out"), py::arg("stream") = py::none());
  m.def(
      "recurrence_fwd_gates",
      [](const gdn::HeadConfig& cfg, py::handle qkv, py::handle a, py::handle b, py::handle A_log,
         py::handle dt_bias, py::handle row_offsets, py::handle state_slots, py::handle state,
         py::handle out, const py::object& stream) {
        recurrence_fwd("gdn.recurrence_fwd_gates", cfg, qkv,
                       Gates{{a, "a"}, {b, "b"}, {A_log, "A_log"}, {dt_bias, "dt_bias"}},
                       row_offsets, state_slots, state, out, stream);
      },
      py::arg("cfg"), py::arg("qkv"), py::arg("a"), py::arg("b"), py::arg("A_log"),
      py::arg("dt_bias"), py::arg("row_offsets"), py::arg("state_slots"), py::arg("state"),
      py::arg("out"), py::arg("stream") = py::none());
  m.def(
      "recurrence_verify_ring",
      [](const gdn::HeadConfig& cfg, py::handle qkv, py::handle decay, py::handle beta,
         py::handle row_offsets, py::handle state_slots, py::handle state, py::handle out,
         py::handle ring_slots, py::handle ring, const py::object& stream) {
        recurrence_verify_ring("gdn.recurrence_verify_ring", cfg, qkv,
                               Gates{{decay, "decay"}, {beta, "beta"}}, row_offsets, state_slots,
                               state, out, ring_slots, ring, stream);
      },
      py::arg("cfg"), py::arg("qkv"), py::arg("decay"), py::arg("beta"), py::arg("row_offsets"),
      py::arg("state_slots"), py::arg("state"), py::arg("out"), py::arg("ring_slots"),
      py::arg("ring"), py::arg("stream") = py::none());
  m.def(
      "recurrence_verify_ring_gates",
      [](const gdn::HeadConfig& cfg, py::handle qkv, py::handle a, py::handle b, py::handle A_log,
         py::handle dt_bias, py::handle row_offsets, py::handle state_slots, py::handle state,
         py::handle out, py::handle ring_slots, py::handle ring, const py::object& stream) {
        recurrence_verify_ring("gdn.recurrence_verify_ring_gates", cfg, qkv,
                               Gates{{a, "a"}, {b, "b"}, {A_log, "A_log"}, {dt_bias, "dt_bias"}},
                               row_offsets, state_slots, state, out, ring_slots, ring, stream);
      },
      py::arg("cfg"), py::arg("qkv"), py::arg("a"), py::arg("b"), py::arg("A_log"),
      py::arg("dt_bias"), py::arg("row_offsets"), py::arg("state_slots"), py::arg("state"),
      py::arg("out"), py::arg("ring_slots"), py::arg("ring"), py::arg("stream") = py::none());
}

}  // namespace
}  // namespace gdn_python

#endif  // GDN_PYTHON_RECURRENCE_HPP
