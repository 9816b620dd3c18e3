// The conv1d entry points (conv1d_fwd, conv1d_verify_ring) and their bindings.
// Part of the module gdn._gdn (gdn_module.cpp includes it, once).

#ifndef GDN_PYTHON_CONV_HPP
#define GDN_PYTHON_CONV_HPP

#include <pybind11/pybind11.h>

#include <gdn/config.hpp>
#include <gdn/conv1d.hpp>
#include <gdn/conv_inputs.hpp>
#include <gdn/lazy_commit.hpp>

#include <type_traits>

#include "arg.hpp"
#include "launch.hpp"
#include "tensors.hpp"
#include "views.hpp"

namespace py = pybind11;

namespace gdn_python {
namespace {

/// The arguments of a conv call; `ring_slots` and `conv_ring` only for verify; `history` and
/// `ledger` only for the lazy verify (whose conv history is `conv_ring`).
struct ConvArgs {
  Arg qkv, weight, bias, row_offsets, state_slots, conv_state, out, ring_slots, conv_ring;
  Arg history, ledger;
  bool has_bias = false;  // bias None: the C++ call gets an empty bias view
  bool verify = false;
  bool lazy = false;
};

/// The conv's inputs with activation type T (the dtype of qkv).
template <class M, class T>
gdn::ConvInputs<M, T> conv_inputs(const Call& c, const ConvArgs& a) {
  c.expect_float32(a.weight);
  gdn::ConvInputs<M, T> in;
  in.qkv = strided_2d<const T, M>(c, a.qkv, false, "[tokens, conv_dim]");
  in.weight = strided_2d<const float, M>(c, a.weight, false, "[conv_dim, W]");
  if (a.has_bias) in.bias = param_1d<M>(c, a.bias, "[conv_dim]");
  in.row_offsets = index_1d<M>(c, a.row_offsets, "[B + 1]");
  return in;
}

/// conv1d_fwd, or conv1d_verify_ring when `ring_slots` and `conv_ring` are given (non-null),
/// or conv1d_verify_lazy when also the lazy ring's `history` and `ledger` are.
void conv1d(const char* fn, const gdn::HeadConfig& cfg, py::handle qkv, py::handle weight,
            py::handle bias, py::handle row_offsets, py::handle state_slots, py::handle conv_state,
            py::handle out, py::handle ring_slots, py::handle conv_ring, const py::object& stream,
            Timing* timing = nullptr, py::handle history = py::handle(),
            py::handle ledger = py::handle()) {
  Call c(fn, stream);
  ConvArgs a;
  a.verify = ring_slots.ptr() != nullptr;
  a.lazy = ledger.ptr() != nullptr;
  if (a.lazy) {
    a.history = c.borrow(history, "history");
    a.ledger = c.borrow(ledger, "ledger");
  }
  a.qkv = c.borrow(qkv, "qkv");
  a.weight = c.borrow(weight, "weight");
  a.has_bias = !bias.is_none();
  if (a.has_bias) a.bias = c.borrow(bias, "bias");
  a.row_offsets = c.borrow(row_offsets, "row_offsets");
  a.state_slots = c.borrow(state_slots, "state_slots");
  a.conv_state = c.borrow(conv_state, "conv_state");
  a.out = c.borrow(out, "out");
  if (a.verify) {
    a.ring_slots = c.borrow(ring_slots, "ring_slots");
    a.conv_ring = c.borrow(conv_ring, a.lazy ? "conv_history" : "conv_ring");
  }
  (void)c.activation_is_float(a.qkv);  // a TypeError for any other dtype, before Kokkos starts
  on_device(c, [&](const auto& space) {
    using Exec = std::decay_t<decltype(space)>;
    using M = typename Exec::memory_space;
    with_activation(c, a.qkv, [&](auto act) {
      using T = decltype(act);
      // The conv pools keep exact copies of pre-conv inputs: the C++ API gives them qkv's type.
      const bool is_float = std::is_same<T, float>::value;
      const char* why = "the dtype of qkv: the conv pools hold copies of its rows";
      c.expect_storage(a.conv_state, is_float, why);
      if (a.verify) c.expect_storage(a.conv_ring, is_float, why);
      const auto in = conv_inputs<M, T>(c, a);
      const auto slots = index_1d<M>(c, a.state_slots, "[B]");
      const auto st = pool_3d<T, M>(c, a.conv_state, "[slots, conv_dim, W-1]");
      with_storage(c, a.out, [&](auto y) {
        using Y = decltype(y);
        const auto o = strided_2d<Y, M>(c, a.out, true, "[tokens, conv_dim]");
        if (!a.verify) {
          launch(space, timing, [&] { gdn::conv1d_fwd(space, cfg, in, slots, st, o); });
          return;
        }
        const auto rslots = index_1d<M>(c, a.ring_slots, "[B]");
        const auto rg = pool_3d<T, M>(c, a.conv_ring, "[ring_rows, RING_LEN, conv_dim]");
        if (!a.lazy) {
          launch(space, timing,
                 [&] { gdn::conv1d_verify_ring(space, cfg, in, slots, st, o, rslots, rg); });
          return;
        }
        with_pool<M>(c, a.history, "[ring_rows, nk, capacity, record_stride]",
                     [&](const auto& hist) {
                       using RingT = typename std::decay_t<decltype(hist)>::value_type;
                       const gdn::LazyRing<M, RingT> lz{hist, ledger_2d<M>(c, a.ledger)};
                       launch(space, timing, [&] {
                         gdn::conv1d_verify_lazy(space, cfg, in, slots, st, o, rslots, rg, lz);
                       });
                     });
      });
    });
  });
}

void bind_conv(py::module_& m) {
  m.def(
      "conv1d_fwd",
      [](const gdn::HeadConfig& cfg, py::handle qkv, py::handle weight, py::handle bias,
         py::handle row_offsets, py::handle state_slots, py::handle conv_state, py::handle out,
         const py::object& stream) {
        conv1d("gdn.conv1d_fwd", cfg, qkv, weight, bias, row_offsets, state_slots, conv_state, out,
               py::handle(), py::handle(), stream);
      },
      py::arg("cfg"), py::arg("qkv"), py::arg("weight"), py::arg("bias").none(true),
      py::arg("row_offsets"), py::arg("state_slots"), py::arg("conv_state"), py::arg("out"),
      py::arg("stream") = py::none());
  m.def(
      "conv1d_verify_ring",
      [](const gdn::HeadConfig& cfg, py::handle qkv, py::handle weight, py::handle bias,
         py::handle row_offsets, py::handle state_slots, py::handle conv_state, py::handle out,
         py::handle ring_slots, py::handle conv_ring, const py::object& stream) {
        conv1d("gdn.conv1d_verify_ring", cfg, qkv, weight, bias, row_offsets, state_slots,
               conv_state, out, ring_slots, conv_ring, stream);
      },
      py::arg("cfg"), py::arg("qkv"), py::arg("weight"), py::arg("bias").none(true),
      py::arg("row_offsets"), py::arg("state_slots"), py::arg("conv_state"), py::arg("out"),
      py::arg("ring_slots"), py::arg("conv_ring"), py::arg("stream") = py::none());
}

}  // namespace
}  // namespace gdn_python

#endif  // GDN_PYTHON_CONV_HPP
