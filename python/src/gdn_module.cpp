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

#include <gdn/gdn.hpp>

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dlpack.hpp"

namespace py = pybind11;

namespace gdn_python {
namespace {

using HostExec = Kokkos::DefaultHostExecutionSpace;

// ---------------------------------------------------------------------------
// Kokkos lifetime and the per-stream CUDA instances.

struct Runtime {
  bool initialized_here = false;  // Kokkos::initialize was called by this module
  std::mutex launch_mutex;        // one gdn launch at a time (Kokkos host spaces are not reentrant)
#if defined(KOKKOS_ENABLE_CUDA)
  // One Kokkos::Cuda per stream handle, created on the stream's first use and
  // kept until exit: creating one synchronizes the device and allocates
  // (Kokkos 3.4), so it can be neither per call nor inside a graph capture.
  std::map<std::uintptr_t, Kokkos::Cuda> streams;
#endif
};

Runtime& runtime() {
  static Runtime* r = new Runtime;  // never destroyed: the atexit hook may run late
  return *r;
}

/// Initializes Kokkos once, unless the host program already has. `cuda_device`:
/// the device of the first call's CUDA tensors (-1: the calling thread's current device).
void ensure_kokkos(int cuda_device) {
  if (Kokkos::is_initialized()) return;
  std::vector<std::string> args{"gdn"};
#if defined(KOKKOS_ENABLE_CUDA)
  if (cuda_device < 0 && cudaGetDevice(&cuda_device) != cudaSuccess) {
    (void)cudaGetLastError();
    cuda_device = 0;
  }
  args.push_back("--kokkos-device-id=" + std::to_string(cuda_device));
#else
  (void)cuda_device;
#endif
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  Kokkos::initialize(argc, argv.data());
  runtime().initialized_here = true;
}

/// Registered with Python's atexit: drops the CUDA instances, then finalizes
/// Kokkos if this module initialized it.
void finalize_at_exit() {
  Runtime& r = runtime();
#if defined(KOKKOS_ENABLE_CUDA)
  r.streams.clear();
#endif
  if (r.initialized_here && Kokkos::is_initialized()) Kokkos::finalize();
  r.initialized_here = false;
}

// ---------------------------------------------------------------------------
// Borrowed DLPack tensors.

const char* device_name(std::int32_t type) {
  switch (type) {
    case kDLCPU:
      return "cpu";
    case kDLCUDA:
      return "cuda";
    case kDLCUDAHost:
      return "cuda host (pinned)";
    case kDLCUDAManaged:
      return "cuda managed";
    default:
      return "unsupported";
  }
}

std::string device_str(const DLDevice& d) {
  if (d.device_type == kDLCPU) return "cpu";
  if (d.device_type == kDLCUDA) return "cuda:" + std::to_string(d.device_id);
  return std::string(device_name(d.device_type)) + " (DLPack device type " +
         std::to_string(d.device_type) + ")";
}

std::string dtype_str(const DLDataType& t) {
  std::string base;
  switch (t.code) {
    case kDLInt:
      base = "int";
      break;
    case kDLUInt:
      base = "uint";
      break;
    case kDLFloat:
      base = "float";
      break;
    case kDLBfloat:
      base = "bfloat";
      break;
    default:
      base = "dtype code " + std::to_string(t.code) + " bits ";
  }
  std::string s = base + std::to_string(t.bits);
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

bool is_dtype(const DLDataType& t, std::uint8_t code, std::uint8_t bits) {
  return t.code == code && t.bits == bits && t.lanes == 1;
}

/// One argument of a call: the tensor's DLPack description, valid while `capsule` lives.
struct Arg {
  const char* name = nullptr;
  py::object capsule;
  const DLTensor* t = nullptr;

  int rank() const { return t->ndim; }
  std::int64_t extent(int d) const { return t->shape[d]; }
  /// The stride of dimension d in elements (compact row-major when DLPack gives none).
  std::int64_t stride(int d) const {
    if (t->strides != nullptr) return t->strides[d];
    std::int64_t s = 1;
    for (int e = t->ndim - 1; e > d; --e) s *= t->shape[e];
    return s;
  }
  void* data() const { return static_cast<char*>(t->data) + t->byte_offset; }
  /// No elements: its strides mean nothing and are not checked.
  bool empty() const {
    for (int d = 0; d < rank(); ++d) {
      if (extent(d) == 0) return true;
    }
    return false;
  }
  std::string shape_str() const {
    std::string s = "[";
    for (int d = 0; d < rank(); ++d) s += (d ? ", " : "") + std::to_string(extent(d));
    return s + "]";
  }
  std::string strides_str() const {
    std::string s = "(";
    for (int d = 0; d < rank(); ++d) s += (d ? ", " : "") + std::to_string(stride(d));
    return s + ")";
  }
};

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

// ---------------------------------------------------------------------------
// Kokkos views over borrowed tensors (unmanaged: constructed from the pointer).

/// [n0, n1] with the tensor's strides. `written`: the view is an output, so
/// its elements must not overlap.
template <class T, class M>
Kokkos::View<T**, Kokkos::LayoutStride, M> strided_2d(const Call& c, const Arg& a, bool written,
                                                      const char* shape) {
  c.expect_rank(a, 2, shape);
  const std::int64_t n0 = a.extent(0), n1 = a.extent(1), s0 = a.stride(0), s1 = a.stride(1);
  if (a.empty()) {
    return Kokkos::View<T**, Kokkos::LayoutStride, M>(
        static_cast<T*>(a.data()),
        Kokkos::LayoutStride(static_cast<std::size_t>(n0), 1, static_cast<std::size_t>(n1), 1));
  }
  if (s0 < 0 || s1 < 0) {
    throw py::value_error(c.prefix(a.name) + "expected non-negative strides, got " +
                          a.strides_str());
  }
  if (written && n0 > 1 && n1 > 1) {
    // Non-overlapping: the smaller stride's dimension fits inside one step of the larger.
    const bool d0_inner = s0 < s1;
    const std::int64_t s_in = d0_inner ? s0 : s1, n_in = d0_inner ? n0 : n1;
    const std::int64_t s_out = d0_inner ? s1 : s0;
    if (s_in == 0 || s_in * n_in > s_out) {
      throw py::value_error(c.prefix(a.name) +
                            "expected strides whose elements do not overlap (it is written), got " +
                            a.strides_str() + " for shape " + a.shape_str());
    }
  } else if (written && ((n0 > 1 && s0 == 0) || (n1 > 1 && s1 == 0))) {
    throw py::value_error(c.prefix(a.name) +
                          "expected strides whose elements do not overlap (it is written), got " +
                          a.strides_str() + " for shape " + a.shape_str());
  }
  return Kokkos::View<T**, Kokkos::LayoutStride, M>(
      static_cast<T*>(a.data()),
      Kokkos::LayoutStride(static_cast<std::size_t>(n0), static_cast<std::size_t>(s0),
                           static_cast<std::size_t>(n1), static_cast<std::size_t>(s1)));
}

/// [n] uint32 with the tensor's stride, no copy (int32 tensors are read as uint32).
template <class M>
Kokkos::View<const std::uint32_t*, Kokkos::LayoutStride, M> index_1d(const Call& c, const Arg& a,
                                                                     const char* shape) {
  c.expect_index(a);
  c.expect_rank(a, 1, shape);
  return Kokkos::View<const std::uint32_t*, Kokkos::LayoutStride, M>(
      static_cast<const std::uint32_t*>(a.data()),
      Kokkos::LayoutStride(static_cast<std::size_t>(a.extent(0)),
                           static_cast<std::size_t>(a.stride(0))));
}

/// [L, B] uint32 with the tensor's strides, no copy (the C++ API takes index
/// views in any layout).
template <class M>
Kokkos::View<const std::uint32_t**, Kokkos::LayoutStride, M> index_2d(const Call& c, const Arg& a) {
  c.expect_index(a);
  c.expect_rank(a, 2, "[L, B]");
  return Kokkos::View<const std::uint32_t**, Kokkos::LayoutStride, M>(
      static_cast<const std::uint32_t*>(a.data()),
      Kokkos::LayoutStride(
          static_cast<std::size_t>(a.extent(0)), static_cast<std::size_t>(a.stride(0)),
          static_cast<std::size_t>(a.extent(1)), static_cast<std::size_t>(a.stride(1))));
}

/// [n] float32 with the tensor's stride (A_log, dt_bias).
template <class M>
Kokkos::View<const float*, Kokkos::LayoutStride, M> param_1d(const Call& c, const Arg& a,
                                                             const char* shape) {
  c.expect_float32(a);
  c.expect_rank(a, 1, shape);
  return Kokkos::View<const float*, Kokkos::LayoutStride, M>(
      static_cast<const float*>(a.data()),
      Kokkos::LayoutStride(static_cast<std::size_t>(a.extent(0)),
                           static_cast<std::size_t>(a.stride(0))));
}

/// A pool of `rank` dimensions, row-major and dense (C-contiguous): LayoutRight in C++.
void expect_dense(const Call& c, const Arg& a, int rank, const char* shape) {
  c.expect_rank(a, rank, shape);
  std::int64_t want = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (!a.empty() && a.extent(d) > 1 && a.stride(d) != want) {
      throw py::value_error(c.prefix(a.name) +
                            "expected a contiguous (row-major, dense) pool, got strides " +
                            a.strides_str() + " for shape " + a.shape_str());
    }
    want *= a.extent(d);
  }
}

/// A dense pool [n0, n1, n2, n3] (row-major, C-contiguous).
template <class T, class M>
Kokkos::View<T****, Kokkos::LayoutRight, M> pool_4d(const Call& c, const Arg& a,
                                                    const char* shape) {
  expect_dense(c, a, 4, shape);
  return Kokkos::View<T****, Kokkos::LayoutRight, M>(
      static_cast<T*>(a.data()), static_cast<std::size_t>(a.extent(0)),
      static_cast<std::size_t>(a.extent(1)), static_cast<std::size_t>(a.extent(2)),
      static_cast<std::size_t>(a.extent(3)));
}

/// A dense conv pool [n0, n1, n2] (the conv state or the conv ring).
template <class T, class M>
Kokkos::View<T***, Kokkos::LayoutRight, M> pool_3d(const Call& c, const Arg& a, const char* shape) {
  expect_dense(c, a, 3, shape);
  return Kokkos::View<T***, Kokkos::LayoutRight, M>(
      static_cast<T*>(a.data()), static_cast<std::size_t>(a.extent(0)),
      static_cast<std::size_t>(a.extent(1)), static_cast<std::size_t>(a.extent(2)));
}

/// Calls f(pool view) with the pool's storage type (float or gdn::bf16).
template <class M, class F>
void with_pool(const Call& c, const Arg& a, const char* shape, F&& f) {
  if (c.storage_is_float(a)) {
    f(pool_4d<float, M>(c, a, shape));
  } else {
    f(pool_4d<gdn::bf16, M>(c, a, shape));
  }
}

// ---------------------------------------------------------------------------
// The launch: the GIL released, one launch at a time, on the call's space.

/// Held around a launch: releases the GIL (so other Python threads run during
/// a host computation) and serializes launches.
class Launching {
 public:
  Launching() : m_lock(runtime().launch_mutex) {}

 private:
  py::gil_scoped_release m_nogil;  // declared first: released before the mutex is taken
  std::lock_guard<std::mutex> m_lock;
};

/// Host seconds of `iterations` back-to-back launches of one call from C++
/// (perf/python_overhead.py compares them with the same calls from Python).
struct Timing {
  int iterations = 0;
  double issue_s = 0;  ///< until the last launch returned
  double total_s = 0;  ///< until the space was fenced after it
};

/// Launches f() once, or, for a timing, `iterations` times between fences.
template <class Exec, class F>
void launch(const Exec& space, Timing* timing, F&& f) {
  Launching held;
  if (timing == nullptr) {
    f();
    return;
  }
  space.fence();
  Kokkos::Timer timer;
  for (int i = 0; i < timing->iterations; ++i) f();
  timing->issue_s = timer.seconds();
  space.fence();
  timing->total_s = timer.seconds();
}

#if defined(KOKKOS_ENABLE_CUDA)
/// The Kokkos::Cuda of stream `handle` (created on first use, outside a graph capture).
Kokkos::Cuda cuda_space(const char* fn, std::uintptr_t handle) {
  Runtime& r = runtime();
  auto it = r.streams.find(handle);
  if (it != r.streams.end()) return it->second;
  cudaStream_t s = reinterpret_cast<cudaStream_t>(handle);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t err = cudaStreamIsCapturing(s, &status);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    std::ostringstream msg;
    msg << fn << ": argument 'stream': cannot use CUDA stream 0x" << std::hex << handle
        << " (cudaStreamIsCapturing: " << cudaGetErrorString(err) << ")";
    throw py::value_error(msg.str());
  }
  if (status != cudaStreamCaptureStatusNone) {
    std::ostringstream msg;
    msg << fn << ": CUDA stream 0x" << std::hex << handle
        << " is used by gdn for the first time inside a CUDA graph capture; creating its "
           "Kokkos::Cuda instance synchronizes the device, which a capture forbids. Call "
           "gdn.prepare_stream(stream) (or any gdn call on that stream) before capturing.";
    throw std::runtime_error(msg.str());
  }
  return r.streams.emplace(handle, Kokkos::Cuda(s)).first->second;
}

/// Makes Kokkos's device current for the launch and restores the caller's afterwards.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    if (cudaGetDevice(&m_prev) != cudaSuccess) {
      (void)cudaGetLastError();
      m_prev = -1;
    }
    if (m_prev != device) cudaSetDevice(device);
  }
  ~DeviceGuard() {
    if (m_prev >= 0) cudaSetDevice(m_prev);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int m_prev = -1;
};
#endif

/// Runs f(space) on the call's device: the host space for CPU tensors, the
/// stream's Kokkos::Cuda for CUDA tensors.
template <class F>
void on_device(const Call& c, F&& f) {
  if (!c.on_cuda()) {
    ensure_kokkos(-1);
    f(HostExec());
    return;
  }
#if defined(KOKKOS_ENABLE_CUDA)
  ensure_kokkos(c.device().device_id);
  const int device = Kokkos::Cuda().cuda_device();
  if (device != c.device().device_id) {
    throw py::value_error(std::string(c.function()) +
                          ": the tensors are on cuda:" + std::to_string(c.device().device_id) +
                          " but gdn's Kokkos runs on cuda:" + std::to_string(device) +
                          " (one device per process)");
  }
  // Before the instance: making one (first use of a stream) sets the current device.
  DeviceGuard guard(device);
  Kokkos::Cuda space = cuda_space(c.function(), c.stream_handle());
  f(space);
#else
  throw py::value_error(std::string(c.function()) +
                        ": got CUDA tensors, but this gdn module was built against a Kokkos "
                        "without the Cuda backend");
#endif
}

// ---------------------------------------------------------------------------
// The entry points.

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
TokenArgs borrow_tokens(Call& c, py::handle qkv, py::handle row_offsets,
                        const std::vector<std::pair<py::handle, const char*>>& gates) {
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
void recurrence_fwd(const char* fn, const gdn::HeadConfig& cfg, py::handle qkv,
                    const std::vector<std::pair<py::handle, const char*>>& gates,
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

void recurrence_verify_ring(const char* fn, const gdn::HeadConfig& cfg, py::handle qkv,
                            const std::vector<std::pair<py::handle, const char*>>& gates,
                            py::handle row_offsets, py::handle state_slots, py::handle state,
                            py::handle out, py::handle ring_slots, py::handle ring,
                            const py::object& stream, Timing* timing = nullptr) {
  Call c(fn, stream);
  const TokenArgs t = borrow_tokens(c, qkv, row_offsets, gates);
  const Arg a_slots = c.borrow(state_slots, "state_slots"), a_state = c.borrow(state, "state"),
            a_out = c.borrow(out, "out"), a_rslots = c.borrow(ring_slots, "ring_slots"),
            a_ring = c.borrow(ring, "ring");
  (void)c.activation_is_float(t.qkv);  // a TypeError for any other dtype, before Kokkos starts
  on_device(c, [&](const auto& space) {
    using Exec = std::decay_t<decltype(space)>;
    using M = typename Exec::memory_space;
    with_inputs<Exec>(c, t, a_out, [&](const auto& in, const auto& o) {
      const auto slots = index_1d<M>(c, a_slots, "[B]");
      const auto rslots = index_1d<M>(c, a_rslots, "[B]");
      with_pool<M>(c, a_state, "[slots, nv, Dk, Dv]", [&](const auto& st) {
        with_pool<M>(c, a_ring, "[ring_rows, nk, RING_LEN, record_stride]", [&](const auto& rg) {
          launch(space, timing,
                 [&] { gdn::recurrence_verify_ring(space, cfg, in, slots, st, o, rslots, rg); });
        });
      });
    });
  });
}

/// The arguments of a conv call; `ring_slots` and `conv_ring` only for verify.
struct ConvArgs {
  Arg qkv, weight, bias, row_offsets, state_slots, conv_state, out, ring_slots, conv_ring;
  bool has_bias = false;  // bias None: the C++ call gets an empty bias view
  bool verify = false;
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

/// conv1d_fwd, or conv1d_verify_ring when `ring_slots` and `conv_ring` are given (non-null).
void conv1d(const char* fn, const gdn::HeadConfig& cfg, py::handle qkv, py::handle weight,
            py::handle bias, py::handle row_offsets, py::handle state_slots, py::handle conv_state,
            py::handle out, py::handle ring_slots, py::handle conv_ring, const py::object& stream,
            Timing* timing = nullptr) {
  Call c(fn, stream);
  ConvArgs a;
  a.verify = ring_slots.ptr() != nullptr;
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
    a.conv_ring = c.borrow(conv_ring, "conv_ring");
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
        launch(space, timing,
               [&] { gdn::conv1d_verify_ring(space, cfg, in, slots, st, o, rslots, rg); });
      });
    });
  });
}

/// state_fold; with `conv_state` and `conv_ring` (both not None) the ConvFold overload,
/// which commits the conv states in the same call.
void state_fold(const gdn::HeadConfig& cfg, py::handle state_rows, py::handle state,
                py::handle ring_rows, py::handle ring, py::handle num_accepted,
                py::handle conv_state, py::handle conv_ring, const py::object& stream,
                Timing* timing = nullptr) {
  Call c("gdn.state_fold", stream);
  const Arg a_srows = c.borrow(state_rows, "state_rows"), a_state = c.borrow(state, "state"),
            a_rrows = c.borrow(ring_rows, "ring_rows"), a_ring = c.borrow(ring, "ring"),
            a_acc = c.borrow(num_accepted, "num_accepted");
  const bool with_conv = !conv_state.is_none() || !conv_ring.is_none();
  if (with_conv && (conv_state.is_none() || conv_ring.is_none())) {
    const bool no_state = conv_state.is_none();
    throw py::type_error(c.prefix(no_state ? "conv_state" : "conv_ring") +
                         "expected a tensor since " + (no_state ? "conv_ring" : "conv_state") +
                         " is given (the conv pools are folded together: both or neither), "
                         "got None");
  }
  Arg a_cstate, a_cring;
  if (with_conv) {
    a_cstate = c.borrow(conv_state, "conv_state");
    a_cring = c.borrow(conv_ring, "conv_ring");
    (void)c.storage_is_float(a_cstate);  // a TypeError for any other dtype, before Kokkos starts
  }
  on_device(c, [&](const auto& space) {
    using Exec = std::decay_t<decltype(space)>;
    using M = typename Exec::memory_space;
    const auto srows = index_2d<M>(c, a_srows);
    const auto rrows = index_2d<M>(c, a_rrows);
    const auto acc = index_1d<M>(c, a_acc, "[B]");
    with_pool<M>(c, a_state, "[slots, nv, Dk, Dv]", [&](const auto& st) {
      with_pool<M>(c, a_ring, "[ring_rows, nk, RING_LEN, record_stride]", [&](const auto& rg) {
        if (!with_conv) {
          launch(space, timing, [&] { gdn::state_fold(space, cfg, srows, st, rrows, rg, acc); });
          return;
        }
        with_storage(c, a_cstate, [&](auto ct) {
          using T = decltype(ct);
          c.expect_storage(a_cring, std::is_same<T, float>::value, "the dtype of conv_state");
          gdn::ConvFold<M, T> conv;
          conv.conv_state = pool_3d<T, M>(c, a_cstate, "[slots, conv_dim, W-1]");
          conv.conv_ring = pool_3d<const T, M>(c, a_cring, "[ring_rows, RING_LEN, conv_dim]");
          launch(space, timing,
                 [&] { gdn::state_fold(space, cfg, srows, st, rrows, rg, acc, conv); });
        });
      });
    });
  });
}

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

  using Gates = std::vector<std::pair<py::handle, const char*>>;
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
  m.def("prepare_stream", &prepare_stream, py::arg("stream"));
  m.def(
      "kokkos_initialized_here", [] { return runtime().initialized_here; },
      "Whether this module initialized Kokkos (and so finalizes it at exit).");

  py::module_::import("atexit").attr("register")(py::cpp_function(&finalize_at_exit));
}
