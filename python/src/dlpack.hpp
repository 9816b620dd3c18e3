#ifndef GDN_PYTHON_DLPACK_HPP
#define GDN_PYTHON_DLPACK_HPP

/// \file dlpack.hpp
/// \brief The DLPack structures the module reads (the unversioned ABI of
/// dlpack.h, v0.x, which `__dlpack__()` returns when no `max_version` is asked
/// for). Only the fields are declared; the layout is DLPack's, which is stable.

#include <cstdint>

namespace gdn_python {

/// DLDeviceType values the module tells apart.
enum DLDeviceTypeCode : std::int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLCUDAManaged = 13,
};

/// DLDataTypeCode values the module tells apart.
enum DLDataTypeCode : std::uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
};

struct DLDevice {
  std::int32_t device_type;
  std::int32_t device_id;
};

struct DLDataType {
  std::uint8_t code;
  std::uint8_t bits;
  std::uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;  ///< in elements; null means compact row-major
  std::uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

}  // namespace gdn_python

#endif  // GDN_PYTHON_DLPACK_HPP
