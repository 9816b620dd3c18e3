#ifndef GDN_WORKSPACE_HPP
#define GDN_WORKSPACE_HPP

/// \file workspace.hpp
/// \brief `gdn::Workspace`: caller-owned device memory for the forward's
/// parallel pass over a long prompt's chunks, and `gdn::workspace_bytes`, its size.
///
/// With a workspace, `recurrence_fwd` runs in two launches: a parallel pass
/// computes every chunk's step-2 coefficients (the Gram entries times the
/// decay products, the norms, the gates) into the workspace, then the
/// sequential pass reads them instead of computing them. The results are the
/// bits of the call without a workspace (docs/design.md section 2): only where the
/// coefficients are computed changes. A call with a workspace allocates
/// nothing, so it can be captured in a CUDA graph; the call without one
/// computes the coefficients inside the sequential pass and allocates
/// nothing either.

#include <gdn/config.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gdn {
namespace Impl {

/// Floats of one (value head, token) record of the workspace: row j of the
/// chunk's coefficient matrices akk and akq (chunk_tokens each), then the
/// token's decay, beta, key inverse norm, query factor and Gam_j, padded to
/// whole 16-byte words.
struct CoefRecord {
  static constexpr int kAkk = 0;
  static constexpr int kAkq = chunk_tokens;
  static constexpr int kDecay = 2 * chunk_tokens;
  static constexpr int kBeta = kDecay + 1;
  static constexpr int kKinv = kDecay + 2;
  static constexpr int kQf = kDecay + 3;
  static constexpr int kGam = kDecay + 4;
  static constexpr int kScalars = 5;
  static constexpr int kFloats = (kGam + 1 + 3) / 4 * 4;
};

}  // namespace Impl

/// \brief Bytes of the workspace that a `recurrence_fwd` over at most
/// `max_tokens` tokens in at most `max_rows` rows needs with head geometry `cfg`.
///
/// Today `num_value_heads * max_tokens * 160` bytes (a 160-byte record per
/// value head and token); `max_rows` does not change it but is part of the
/// query so that a caller sizes for both. 0 for a geometry with no value heads.
inline std::size_t workspace_bytes(const HeadConfig& cfg, std::size_t max_tokens,
                                   std::size_t max_rows) {
  (void)max_rows;
  const std::size_t nv = cfg.num_value_heads > 0 ? static_cast<std::size_t>(cfg.num_value_heads) : 0;
  return nv * max_tokens * Impl::CoefRecord::kFloats * sizeof(float);
}

/// \brief A caller-owned workspace in memory space `MemorySpace`: a byte View.
///
/// Build it over a View the caller allocated (e.g. a slice of an engine's
/// arena; its data 16-byte aligned), or let the sizing constructor allocate
/// one of `workspace_bytes(cfg, max_tokens, max_rows)` bytes. Copies share
/// the memory (a View). A call that is given one checks on the host, before
/// any launch, that it is large enough for the call and 16-byte aligned, and
/// throws `gdn::InvalidArgument` naming `workspace` and the bytes needed
/// otherwise. Calls on the same execution space instance may share one
/// workspace; calls that may run at once on different instances need their own.
template <class MemorySpace>
class Workspace {
 public:
  using memory_space = MemorySpace;
  using view_type = Kokkos::View<std::uint8_t*, MemorySpace>;

  /// No memory: for a call that is given it, too small unless it has no tokens.
  Workspace() = default;
  /// Over `bytes` (shared, not copied).
  Workspace(const view_type& bytes) : m_bytes(bytes) {}  // NOLINT: a View converts implicitly
  /// Allocates `workspace_bytes(cfg, max_tokens, max_rows)` bytes (uninitialised) labelled `label`.
  Workspace(const std::string& label, const HeadConfig& cfg, std::size_t max_tokens,
            std::size_t max_rows)
      : m_bytes(Kokkos::view_alloc(label, Kokkos::WithoutInitializing),
                workspace_bytes(cfg, max_tokens, max_rows)) {}

  /// The memory.
  const view_type& view() const { return m_bytes; }
  /// Its size in bytes.
  std::size_t size() const { return m_bytes.size(); }

 private:
  view_type m_bytes;
};

}  // namespace gdn

#endif  // GDN_WORKSPACE_HPP
