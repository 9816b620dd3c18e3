// The Python extension gdn._gdn: gdn's entry points on any tensor that speaks
// DLPack (__dlpack__), CPU tensors on Kokkos's host space (OpenMP), CUDA
// tensors on a Kokkos::Cuda instance built on the caller's stream.
//
// Every tensor is borrowed for the duration of one call: its capsule is kept
// until the call returns and then released, which lets the producer free its
// DLManagedTensor (the producer keeps ownership; the memory stays the
// caller's). The launch itself is asynchronous on CUDA, so the caller must
// keep the tensors alive until the stream has run the work, as for any
// operation on a CUDA stream.
//
// The thin Python layer (gdn/__init__.py) supplies the stream of torch
// tensors (torch.cuda.current_stream()) and the argument defaults.

// Python.h (through pybind11) comes first, as Python asks.
#include <pybind11/pybind11.h>

#include <gdn/checking.hpp>
#include <gdn/config.hpp>
#include <gdn/error.hpp>
#include <gdn/ring.hpp>
#include <gdn/version.hpp>

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

// The module's parts, each including what it uses: runtime.hpp (Kokkos, streams), dlpack.hpp
// and arg.hpp (a borrowed tensor), tensors.hpp (a call's arguments), views.hpp (Kokkos views
// over them), launch.hpp (the launch), and the entry points with their bindings:
// recurrence.hpp, conv.hpp, fold.hpp, lazy.hpp.
#include "conv.hpp"
#include "fold.hpp"
#include "launch.hpp"
#include "lazy.hpp"
#include "recurrence.hpp"
#include "runtime.hpp"
#include "tensors.hpp"

namespace py = pybind11;

namespace gdn_python {
namespace {

py::exception<gdn::InvalidArgument>* g_invalid_argument = nullptr;  // gdn.InvalidArgument

/// Creates (outside any capture) the Kokkos::Cuda instance of a stream.
void prepare_stream(const py::object& stream) {
#if defined(KOKKOS_ENABLE_CUDA)
  Call c("gdn.prepare_stream", stream);
  if (stream.is_none()) throw py::type_error(c.prefix("stream") + "expected an int, got None");
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    device = -1;
  }
  ensure_kokkos(device);
  (void)cuda_space(c.function(), c.stream_handle());
#else
  (void)stream;
  throw std::runtime_error(
      "gdn.prepare_stream: this gdn module was built against a Kokkos without the Cuda backend");
#endif
}

}  // namespace
}  // namespace gdn_python

PYBIND11_MODULE(_gdn, m) {
  using namespace gdn_python;
  m.doc() = "gdn's compiled entry points (use the gdn package, which supplies the CUDA stream)";
  m.attr("__version__") = GDN_VERSION_STRING;
#if defined(KOKKOS_ENABLE_CUDA)
  m.attr("has_cuda") = true;
#else
  m.attr("has_cuda") = false;
#endif
  // gdn::pad_slot as the int32 index tensors hold it (-1); a uint32 tensor holds 0xFFFFFFFF.
  m.attr("pad_slot") = static_cast<std::int32_t>(gdn::pad_slot);

  // gdn::InvalidArgument (a std::invalid_argument) -> gdn.InvalidArgument, a ValueError.
  // Never destroyed: a static py::object would be released after the interpreter.
  g_invalid_argument =
      new py::exception<gdn::InvalidArgument>(m, "InvalidArgument", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gdn::InvalidArgument& e) {
      (*g_invalid_argument)(e.what());
    }
  });

  py::class_<gdn::HeadConfig>(m, "HeadConfig",
                              "Head geometry of one layer (docs/design.md section 1).")
      .def(py::init([](int nk, int nv, int dk, int dv) {
             return gdn::HeadConfig{nk, nv, dk, dv};
           }),
           py::arg("num_key_heads"), py::arg("num_value_heads"), py::arg("key_head_dim"),
           py::arg("value_head_dim"))
      .def_readwrite("num_key_heads", &gdn::HeadConfig::num_key_heads)
      .def_readwrite("num_value_heads", &gdn::HeadConfig::num_value_heads)
      .def_readwrite("key_head_dim", &gdn::HeadConfig::key_head_dim)
      .def_readwrite("value_head_dim", &gdn::HeadConfig::value_head_dim)
      .def_property_readonly("group_size", &gdn::HeadConfig::group_size)
      .def_property_readonly("key_dim", &gdn::HeadConfig::key_dim)
      .def_property_readonly("value_dim", &gdn::HeadConfig::value_dim)
      .def_property_readonly("conv_dim", &gdn::HeadConfig::conv_dim)
      .def("__repr__", [](const gdn::HeadConfig& c) {
        return "HeadConfig(num_key_heads=" + std::to_string(c.num_key_heads) +
               ", num_value_heads=" + std::to_string(c.num_value_heads) +
               ", key_head_dim=" + std::to_string(c.key_head_dim) +
               ", value_head_dim=" + std::to_string(c.value_head_dim) + ")";
      });

  bind_recurrence(m);
  bind_conv(m);
  bind_fold(m);
  bind_lazy(m);
  // Benchmark helpers: (issue seconds, total seconds) of `iterations` calls from C++.
  m.def("_time_cpp", [](const std::string& call, int iterations, const py::args& a) {
    Timing t;
    t.iterations = iterations;
    auto arg = [&](std::size_t i) { return py::handle(a[i]); };
    const py::object stream = py::reinterpret_borrow<py::object>(a[a.size() - 1]);
    const gdn::HeadConfig cfg = a[0].cast<gdn::HeadConfig>();
    if (call == "fwd" && a.size() == 9) {
      recurrence_fwd("gdn.recurrence_fwd", cfg, arg(1), Gates{{arg(2), "decay"}, {arg(3), "beta"}},
                     arg(4), arg(5), arg(6), arg(7), stream, &t);
    } else if (call == "verify" && a.size() == 11) {
      recurrence_verify_ring("gdn.recurrence_verify_ring", cfg, arg(1),
                             Gates{{arg(2), "decay"}, {arg(3), "beta"}}, arg(4), arg(5), arg(6),
                             arg(7), arg(8), arg(9), stream, &t);
    } else if (call == "fold" && a.size() == 7) {
      state_fold(cfg, arg(1), arg(2), arg(3), arg(4), arg(5), py::none(), py::none(), stream, &t);
    } else {
      throw py::value_error("gdn._time_cpp: unknown call or wrong argument count");
    }
    return py::make_tuple(t.issue_s, t.total_s);
  });
  m.def(
      "ring_record_elements",
      [](int dk, int dv, int g) {
        if (dk < 0 || dv < 0 || g < 0) {
          throw py::value_error("gdn.ring_record_elements: expected non-negative arguments, got (" +
                                std::to_string(dk) + ", " + std::to_string(dv) + ", " +
                                std::to_string(g) + ")");
        }
        return gdn::ring_record_elements(dk, dv, g);
      },
      py::arg("key_head_dim"), py::arg("value_head_dim"), py::arg("group_size"),
      "Elements of one ring record: Dk + G*(Dv + 1).");
  m.def("set_index_checking", &gdn::set_index_checking, py::arg("enabled"),
        "Turn gdn's index checking mode on or off (validates slots, offsets and tables; fences).");
  m.def("index_checking_enabled", &gdn::index_checking_enabled);
  m.def(
      "skipped_rows",
      [](const std::string& device, bool reset) {
        // The count of the memory space of `device`'s tensors ("cpu" or "cuda"); waits for
        // the calls enqueued before (the host space, or the whole CUDA device).
        const auto run = [&](const auto& space) {
          const unsigned long long n = gdn::skipped_rows(space);
          if (reset) gdn::reset_skipped_rows(space);
          space.fence();
          return n;
        };
        if (device == "cpu") {
          ensure_kokkos(-1);
          return run(HostExec());
        }
#if defined(KOKKOS_ENABLE_CUDA)
        if (device == "cuda") {
          ensure_kokkos(0);
          return run(Kokkos::Cuda());
        }
#endif
#if defined(KOKKOS_ENABLE_CUDA)
        const std::string devices = "'cpu' or 'cuda'";
#else
        const std::string devices = "'cpu' (a build without CUDA)";
#endif
        throw py::value_error("gdn.skipped_rows: device must be " + devices + ", got '" + device +
                              "'");
      },
      py::arg("device") = "cpu", py::arg("reset") = false,
      "Rows that gdn's calls on tensors of `device` skipped because an index lay outside its "
      "pool (or a row outside qkv), since the first call or the last reset; padding rows are "
      "not counted. reset=True also sets the count to 0.");
  m.def("prepare_stream", &prepare_stream, py::arg("stream"));
  m.def(
      "kokkos_initialized_here", [] { return runtime().initialized_here; },
      "Whether this module initialized Kokkos (and so finalizes it at exit).");

  py::module_::import("atexit").attr("register")(py::cpp_function(&finalize_at_exit));
}
