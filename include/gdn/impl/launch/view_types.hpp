#ifndef GDN_IMPL_VIEW_TYPES_HPP
#define GDN_IMPL_VIEW_TYPES_HPP

/// \file view_types.hpp
/// \brief The canonical view types the public functions convert their
/// arguments to, shared by the recurrent and the conv kernels.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace gdn {
namespace Impl {

template <class M>
using IndexView = Kokkos::View<const std::uint32_t*, Kokkos::LayoutStride, M>;  // [B]
template <class M>
using IndexTable = Kokkos::View<const std::uint32_t**, Kokkos::LayoutStride, M>;  // [L, B]
template <class T, class M>
using PoolView = Kokkos::View<T****, Kokkos::LayoutRight, M>;  // state or ring pool
template <class ActT, class M>
using OutView = Kokkos::View<ActT**, Kokkos::LayoutStride, M>;  // [tokens, value_dim]
/// A lazy ring's ledger [ring_rows, words] (impl/kernels/lazy_kernel.hpp), and as the kernels read
/// it.
template <class M>
using Ledger = Kokkos::View<std::uint32_t**, Kokkos::LayoutRight, M>;
template <class M>
using LedgerView = Kokkos::View<const std::uint32_t**, Kokkos::LayoutRight, M>;

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_VIEW_TYPES_HPP
