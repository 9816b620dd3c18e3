// A borrowed tensor as the module reads it: its DLPack description (Arg) and the names of
// DLPack devices and dtypes in messages. Part of the module gdn._gdn (gdn_module.cpp includes
// it, once).

#ifndef GDN_PYTHON_ARG_HPP
#define GDN_PYTHON_ARG_HPP

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "dlpack.hpp"

namespace py = pybind11;

namespace gdn_python {
namespace {

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

}  // namespace
}  // namespace gdn_python

#endif  // GDN_PYTHON_ARG_HPP
