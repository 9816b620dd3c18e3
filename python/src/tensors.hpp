// One call's arguments: borrowing them through DLPack (Call::borrow) and checking them
// (device, dtype, shape). Part of the module gdn._gdn (gdn_module.cpp includes it, once).

#ifndef GDN_PYTHON_TENSORS_HPP
#define GDN_PYTHON_TENSORS_HPP

#include <pybind11/pybind11.h>

#include <gdn/bf16.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "arg.hpp"
#include "dlpack.hpp"

namespace py = pybind11;

namespace gdn_python {
namespace {

/// One Python call: its name, stream and the device its tensors share.
class Call {
 public:
  Call(const char* function, const py::object& stream) : m_fn(function), m_stream(stream) {
    if (!stream.is_none()) {
      if (!py::isinstance<py::int_>(stream)) {
        throw py::type_error(prefix("stream") +
                             "expected None or an int (a cudaStream_t handle), got " +
                             std::string(py::str(py::type::of(stream).attr("__name__"))));
      }
      const long long v = stream.cast<long long>();
      if (v < 0)
        throw py::value_error(prefix("stream") + "expected a handle >= 0, got " +
                              std::to_string(v));
      m_handle = static_cast<std::uintptr_t>(v);
    }
  }

  std::string prefix(const char* arg) const {
    return std::string(m_fn) + ": argument '" + arg + "': ";
  }
  const char* function() const { return m_fn; }
  bool on_cuda() const { return m_device.device_type == kDLCUDA; }
  const DLDevice& device() const { return m_device; }
  std::uintptr_t stream_handle() const { return m_handle; }

  /// `obj.__dlpack__()`, with the call's stream when it has one.
  py::object dlpack_capsule(py::handle obj, const char* name) const {
    if (!py::hasattr(obj, "__dlpack__")) {
      throw py::type_error(prefix(name) +
                           "expected a tensor that supports DLPack (__dlpack__), got " +
                           std::string(py::str(py::type::of(obj).attr("__name__"))));
    }
    try {
      if (m_stream.is_none()) return obj.attr("__dlpack__")();
      // DLPack's stream numbering: 1 is CUDA's legacy default stream (0 is reserved).
      const std::uintptr_t s = m_handle == 0 ? 1 : m_handle;
      return obj.attr("__dlpack__")(py::arg("stream") = s);
    } catch (py::error_already_set& e) {
      const std::string what = e.what();
      // A host array asked for a stream refuses; say what is wrong with it.
      if (!m_stream.is_none() && py::hasattr(obj, "__dlpack_device__")) {
        try {
          py::tuple dev = obj.attr("__dlpack_device__")();
          const DLDevice d{dev[0].cast<std::int32_t>(), dev[1].cast<std::int32_t>()};
          if (d.device_type != kDLCUDA) {
            throw py::value_error(prefix(name) +
                                  "expected a CUDA tensor (a stream was given), got one on " +
                                  device_str(d));
          }
        } catch (py::error_already_set&) {
        }
      }
      throw py::type_error(prefix(name) + "__dlpack__ failed: " + what);
    }
  }

  /// Borrows `obj` through __dlpack__ (or takes a 'dltensor' capsule that
  /// the Python layer made with torch.utils.dlpack.to_dlpack for a call on
  /// torch's current stream) and checks that it lives on the call's device.
  Arg borrow(py::handle obj, const char* name) {
    Arg a;
    a.name = name;
    if (PyCapsule_CheckExact(obj.ptr())) {
      a.capsule = py::reinterpret_borrow<py::object>(obj);
    } else {
      a.capsule = dlpack_capsule(obj, name);
    }
    if (!PyCapsule_IsValid(a.capsule.ptr(), "dltensor")) {
      throw py::type_error(prefix(name) + "__dlpack__ did not return a 'dltensor' capsule");
    }
    auto* managed =
        static_cast<DLManagedTensor*>(PyCapsule_GetPointer(a.capsule.ptr(), "dltensor"));
    a.t = &managed->dl_tensor;
    const DLDevice& d = a.t->device;
    if (d.device_type != kDLCPU && d.device_type != kDLCUDA) {
      throw py::value_error(prefix(name) + "expected a CPU or CUDA device tensor, got one on " +
                            device_str(d));
    }
    if (m_first == nullptr) {
      m_first = name;
      m_device = d;
      if (d.device_type == kDLCUDA && m_stream.is_none()) {
        throw py::type_error(prefix("stream") +
                             "CUDA tensors need the stream to run on (an int cudaStream_t); "
                             "gdn's Python functions read torch.cuda.current_stream() for torch "
                             "tensors, other producers must pass stream=");
      }
    } else if (d.device_type != m_device.device_type ||
               (d.device_type == kDLCUDA && d.device_id != m_device.device_id)) {
      throw py::value_error(prefix(name) + "expected a tensor on " + device_str(m_device) +
                            " (the device of '" + m_first + "'), got one on " + device_str(d));
    }
    if (a.t->ndim > 0 && a.t->shape == nullptr) {
      throw py::type_error(prefix(name) + "the DLPack tensor has no shape");
    }
    return a;
  }

  void expect_rank(const Arg& a, int rank, const char* shape) const {
    if (a.rank() != rank) {
      throw py::value_error(prefix(a.name) + "expected rank " + std::to_string(rank) + " " + shape +
                            ", got shape " + a.shape_str());
    }
  }
  void expect_float32(const Arg& a) const {
    if (!is_dtype(a.t->dtype, kDLFloat, 32)) {
      throw py::type_error(prefix(a.name) + "expected dtype float32, got " + dtype_str(a.t->dtype));
    }
  }
  /// float32 (true) or bfloat16 (false): the storage types of the state and ring pools.
  bool storage_is_float(const Arg& a) const {
    if (is_dtype(a.t->dtype, kDLFloat, 32)) return true;
    if (is_dtype(a.t->dtype, kDLBfloat, 16)) return false;
    throw py::type_error(prefix(a.name) + "expected dtype float32 or bfloat16, got " +
                         dtype_str(a.t->dtype));
  }
  /// The activation dtype of a call (float32 or bfloat16), read from `qkv`:
  /// qkv, the gates and out share it.
  bool activation_is_float(const Arg& qkv) const { return storage_is_float(qkv); }
  /// `a` has the activation dtype of `qkv`.
  template <class ActT>
  void expect_activation(const Arg& a) const {
    const bool f = std::is_same<ActT, float>::value;
    if (!is_dtype(a.t->dtype, f ? kDLFloat : kDLBfloat, f ? 32 : 16)) {
      throw py::type_error(prefix(a.name) + "expected dtype " + (f ? "float32" : "bfloat16") +
                           " (the dtype of qkv: qkv, the gates and out share one dtype), got " +
                           dtype_str(a.t->dtype));
    }
  }
  /// `a` has dtype float32 (`is_float`) or bfloat16, the dtype it must share (`why`).
  void expect_storage(const Arg& a, bool is_float, const char* why) const {
    if (!is_dtype(a.t->dtype, is_float ? kDLFloat : kDLBfloat, is_float ? 32 : 16)) {
      throw py::type_error(prefix(a.name) + "expected dtype " +
                           (is_float ? "float32" : "bfloat16") + " (" + why + "), got " +
                           dtype_str(a.t->dtype));
    }
  }
  void expect_index(const Arg& a) const {
    if (!is_dtype(a.t->dtype, kDLUInt, 32) && !is_dtype(a.t->dtype, kDLInt, 32)) {
      throw py::type_error(prefix(a.name) +
                           "expected dtype int32 or uint32 (read as uint32), got " +
                           dtype_str(a.t->dtype));
    }
  }

 private:
  const char* m_fn;
  py::object m_stream;
  std::uintptr_t m_handle = 0;
  const char* m_first = nullptr;
  DLDevice m_device{0, 0};
};

/// Calls f(float()) or f(gdn::bf16()).
template <class F>
void with_float_or_bf16(bool is_float, F&& f) {
  if (is_float) {
    f(float());
  } else {
    f(gdn::bf16());
  }
}

/// Calls f(ActT()) with the call's activation type (float or gdn::bf16), the dtype of qkv.
template <class F>
void with_activation(const Call& c, const Arg& qkv, F&& f) {
  with_float_or_bf16(c.activation_is_float(qkv), std::forward<F>(f));
}

/// Calls f(T()) with the storage type of `a` (float32: float, bfloat16: gdn::bf16).
template <class F>
void with_storage(const Call& c, const Arg& a, F&& f) {
  with_float_or_bf16(c.storage_is_float(a), std::forward<F>(f));
}

}  // namespace
}  // namespace gdn_python

#endif  // GDN_PYTHON_TENSORS_HPP
