#ifndef GDN_IMPL_ETI_HPP
#define GDN_IMPL_ETI_HPP

/// \file eti.hpp
/// \brief Explicit template instantiation: the supported set, compiled once in src/.
///
/// For each enabled execution space among Serial, OpenMP and Cuda: the
/// forward and verify for activation type float and bf16 (each launcher
/// serves both input forms, TokenInputs and GateInputs), state type float
/// and bf16, ring type float and bf16; the fold for every state and ring
/// type; the same sets for the lazy verify and the flush, and the ledger
/// launchers (lazy_commit.hpp). Callers see these declarations and link against the library instead
/// of compiling the kernels. src/ compiles each activation type in a file of
/// its own, so that a parallel build compiles them side by side.

#include <gdn/bf16.hpp>
#include <gdn/impl/launch/launch.hpp>

#include <Kokkos_Core.hpp>

/// Forward and verify launchers of one activation type ACT.
#define GDN_ETI_ACTIVATION(PREFIX, SPACE, ACT)                                        \
  PREFIX template struct ::gdn::Impl::FwdLauncher<SPACE, ACT, float>;                 \
  PREFIX template struct ::gdn::Impl::FwdLauncher<SPACE, ACT, ::gdn::bf16>;           \
  PREFIX template struct ::gdn::Impl::VerifyLauncher<SPACE, ACT, float, float>;       \
  PREFIX template struct ::gdn::Impl::VerifyLauncher<SPACE, ACT, float, ::gdn::bf16>; \
  PREFIX template struct ::gdn::Impl::VerifyLauncher<SPACE, ACT, ::gdn::bf16, float>; \
  PREFIX template struct ::gdn::Impl::VerifyLauncher<SPACE, ACT, ::gdn::bf16, ::gdn::bf16>;

/// Fold launchers (they do not read activations).
#define GDN_ETI_FOLD(PREFIX, SPACE)                                            \
  PREFIX template struct ::gdn::Impl::FoldLauncher<SPACE, float, float>;       \
  PREFIX template struct ::gdn::Impl::FoldLauncher<SPACE, float, ::gdn::bf16>; \
  PREFIX template struct ::gdn::Impl::FoldLauncher<SPACE, ::gdn::bf16, float>; \
  PREFIX template struct ::gdn::Impl::FoldLauncher<SPACE, ::gdn::bf16, ::gdn::bf16>;

/// Lazy verify launchers of one activation type ACT (lazy_commit.hpp).
#define GDN_ETI_LAZY_ACTIVATION(PREFIX, SPACE, ACT)                                       \
  PREFIX template struct ::gdn::Impl::LazyVerifyLauncher<SPACE, ACT, float, float>;       \
  PREFIX template struct ::gdn::Impl::LazyVerifyLauncher<SPACE, ACT, float, ::gdn::bf16>; \
  PREFIX template struct ::gdn::Impl::LazyVerifyLauncher<SPACE, ACT, ::gdn::bf16, float>; \
  PREFIX template struct ::gdn::Impl::LazyVerifyLauncher<SPACE, ACT, ::gdn::bf16, ::gdn::bf16>;

/// The lazy flush and ledger launchers.
#define GDN_ETI_LAZY_COMMIT(PREFIX, SPACE)                                            \
  PREFIX template struct ::gdn::Impl::FlushLauncher<SPACE, float, float>;             \
  PREFIX template struct ::gdn::Impl::FlushLauncher<SPACE, float, ::gdn::bf16>;       \
  PREFIX template struct ::gdn::Impl::FlushLauncher<SPACE, ::gdn::bf16, float>;       \
  PREFIX template struct ::gdn::Impl::FlushLauncher<SPACE, ::gdn::bf16, ::gdn::bf16>; \
  PREFIX template struct ::gdn::Impl::LedgerLauncher<SPACE>;

#define GDN_ETI_SPACE(PREFIX, SPACE)                  \
  GDN_ETI_ACTIVATION(PREFIX, SPACE, float)            \
  GDN_ETI_ACTIVATION(PREFIX, SPACE, ::gdn::bf16)      \
  GDN_ETI_FOLD(PREFIX, SPACE)                         \
  GDN_ETI_LAZY_ACTIVATION(PREFIX, SPACE, float)       \
  GDN_ETI_LAZY_ACTIVATION(PREFIX, SPACE, ::gdn::bf16) \
  GDN_ETI_LAZY_COMMIT(PREFIX, SPACE)

#if defined(KOKKOS_ENABLE_SERIAL)
GDN_ETI_SPACE(extern, Kokkos::Serial)
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
GDN_ETI_SPACE(extern, Kokkos::OpenMP)
#endif
#if defined(KOKKOS_ENABLE_CUDA)
GDN_ETI_SPACE(extern, Kokkos::Cuda)
#endif

#endif  // GDN_IMPL_ETI_HPP
