#ifndef GDN_IMPL_HOST_DENSE_HPP
#define GDN_IMPL_HOST_DENSE_HPP

/// \file host_dense.hpp
/// \brief The host's step 3 of a chunk (TeamShape with one thread holding a
/// whole 64-column tile) as dense algebra of Kokkos Kernels' batched serial
/// routines: a unit lower triangular solve (KokkosBatched::SerialTrsm) for
/// the delta factors and a product per token (KokkosBatched::SerialGemm) for
/// the readout, on unmanaged Views over the team scratch.
///
/// Steps 1 and 2 on the host stay the hand-written `project` and
/// `chunk_coefficients` of chunk_algebra.hpp, which hold their partial sums
/// in vector registers and run faster there than the batched GEMM, whose
/// unblocked form loads and stores its output once per term and whose
/// blocked form does not vectorise (docs/performance.md, "The host's dense
/// routines").
///
/// The order of every sum is the routine's (Algo::Trsm::Unblocked,
/// Algo::Gemm::Unblocked): the forward substitution subtracts the earlier
/// rows' terms from row j in index order, and the readout's product adds its
/// terms in index order onto its addend, one multiply-add per term. The
/// compiler contracts these multiply-adds the same way wherever they are
/// inlined (FMA where the target has it), so the forward, verify and the
/// split-at-chunk forward, which all run the same chunks through this code,
/// agree bit for bit. Row j of the solve and of the readout reads only rows
/// 0..j, so token j's results depend only on `S0` and tokens 0..j, whatever
/// the chunk's length.

#include <gdn/impl/chunk_algebra.hpp>

#include <KokkosBatched_Gemm_Decl.hpp>
#include <KokkosBatched_Gemm_Serial_Impl.hpp>
#include <KokkosBatched_Trsm_Decl.hpp>
#include <KokkosBatched_Trsm_Serial_Impl.hpp>
#include <Kokkos_Core.hpp>

#include <cstddef>

namespace gdn {
namespace Impl {

/// `n` rows of `Cols` floats (row-major, contiguous) in host scratch.
template <int Cols>
using HostRows =
    Kokkos::View<float* [Cols], Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
template <int Cols>
using HostConstRows = Kokkos::View<const float* [Cols], Kokkos::LayoutRight, Kokkos::HostSpace,
                                   Kokkos::MemoryUnmanaged>;
/// A block of a row-major matrix with row stride `ld`.
using HostBlock =
    Kokkos::View<float**, Kokkos::LayoutStride, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;

KOKKOS_INLINE_FUNCTION HostBlock host_block(float* p, int rows, int cols, int ld) {
  return HostBlock(
      p, Kokkos::LayoutStride(std::size_t(rows), std::size_t(ld), std::size_t(cols), 1));
}

/// Step 3 of a chunk of `n` tokens on the host, every tile column at once:
/// the delta factors into u of scratch, then each token's row of outputs
/// handed to `emit(j, o)` (o: kTileCols floats). Overwrites akk and r.
///
/// Delta factors: with `c_j = beta_j * kinv_j`,
/// `u_j = c_j * (v_j - kinv_j * Gam_j * P_j) - sum_{i<j} (c_j * kinv_j * akk(j, i)) * u_i`,
/// i.e. the unit lower triangular system `(I + L) U = W` with
/// `L(j, i) = (c_j * kinv_j) * akk(j, i)` (written over akk) and
/// `W_j = c_j * fma(-(Gam_j * P_j), kinv_j, v_j)` (written to u, then solved
/// in place by forward substitution).
/// Readout of token j: `qf_j * (Gam_j * R_j + sum_{i<=j} akq(j, i) * u_i)`,
/// the sum the product of row j of akq (columns 0..j) and rows 0..j of u
/// added onto `Gam_j * R_j` (in r).
template <int Dk, int C, class Emit>
KOKKOS_INLINE_FUNCTION void host_delta_readout(const ChunkScratch<Dk, C>& s, int n,
                                               const Emit& emit) {
  namespace KB = KokkosBatched;
  for (int j = 0; j < n; ++j) {
    const float gam = s.gam[j], kinv = s.kinv[j], c = s.beta[j] * kinv;
    const float l = c * kinv;
    for (int i = 0; i < j; ++i) s.akk[j * C + i] = l * s.akk[j * C + i];
    const float* pj = s.p + j * kTileCols;
    const float* vj = s.v + j * kTileCols;
    float* uj = s.u + j * kTileCols;
    float* rj = s.r + j * kTileCols;
    GDN_SIMD
    for (int e = 0; e < kTileCols; ++e) {
      uj[e] = c * fmaf(-(gam * pj[e]), kinv, vj[e]);
      rj[e] = gam * rj[e];
    }
  }
  KB::SerialTrsm<KB::Side::Left, KB::Uplo::Lower, KB::Trans::NoTranspose, KB::Diag::Unit,
                 KB::Algo::Trsm::Unblocked>::invoke(1.0f, host_block(s.akk, n, n, C),
                                                    HostRows<kTileCols>(s.u, n));
  for (int j = 0; j < n; ++j) {
    float* rj = s.r + j * kTileCols;
    KB::SerialGemm<KB::Trans::NoTranspose, KB::Trans::NoTranspose, KB::Algo::Gemm::Unblocked>::
        invoke(1.0f, host_block(s.akq + j * C, 1, j + 1, C), HostConstRows<kTileCols>(s.u, j + 1),
               1.0f, HostRows<kTileCols>(rj, 1));
    float o[kTileCols];
    const float qf = s.qf[j];
    GDN_SIMD
    for (int e = 0; e < kTileCols; ++e) o[e] = qf * rj[e];
    emit(j, o);
  }
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_HOST_DENSE_HPP
