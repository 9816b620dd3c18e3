// Kokkos views over borrowed tensors (unmanaged: constructed from the pointer), with the layout
// checks they need.
// Part of the module gdn._gdn (gdn_module.cpp includes it, once).

#ifndef GDN_PYTHON_VIEWS_HPP
#define GDN_PYTHON_VIEWS_HPP

#include <pybind11/pybind11.h>

#include <gdn/bf16.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "arg.hpp"
#include "tensors.hpp"

namespace py = pybind11;

namespace gdn_python {
namespace {

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

/// A lazy ring's ledger [ring_rows, words]: dense, uint32 (an int32 tensor is
/// read as uint32), written by the library.
template <class M>
Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, M> ledger_2d(const Call& c, const Arg& a);

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

template <class M>
Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, M> ledger_2d(const Call& c, const Arg& a) {
  c.expect_index(a);
  expect_dense(c, a, 2, "[ring_rows, lazy_ledger_words(capacity)]");
  return Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, M>(
      static_cast<std::uint32_t*>(a.data()), static_cast<std::size_t>(a.extent(0)),
      static_cast<std::size_t>(a.extent(1)));
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

}  // namespace
}  // namespace gdn_python

#endif  // GDN_PYTHON_VIEWS_HPP
