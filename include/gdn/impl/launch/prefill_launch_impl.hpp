#ifndef GDN_IMPL_PREFILL_LAUNCH_IMPL_HPP
#define GDN_IMPL_PREFILL_LAUNCH_IMPL_HPP

/// \file prefill_launch_impl.hpp
/// \brief Definitions of the prefill launchers (prefill_launch.hpp): validate, then launch the
/// host kernels (prefill_host.hpp) or the CUDA ones (prefill_cuda.hpp). Included only by the
/// explicit instantiations in src/.

#include <gdn/config.hpp>
#include <gdn/impl/launch/head_dim.hpp>
#include <gdn/impl/launch/prefill_launch.hpp>
#include <gdn/impl/prefill/prefill_host.hpp>
#include <gdn/impl/prefill/prefill_params.hpp>
#include <gdn/impl/validate/validate.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

#if defined(KOKKOS_ENABLE_CUDA)
#if !defined(__CUDACC__)
#error "the CUDA instantiations of gdn's prefill are compiled by nvcc (nvcc_wrapper)"
#endif
#include <gdn/impl/prefill/prefill_cuda.hpp>
#endif

namespace gdn {
namespace Impl {

/// The prefill's own arguments: the precision and the workspace.
inline void check_prefill_extras(const ArgCheck& c, const HeadConfig& cfg, std::size_t tokens,
                                 std::size_t batch, std::size_t workspace_bytes,
                                 const void* workspace_data, PrefillPrecision precision) {
  const int prec = static_cast<int>(precision);
  if (!(prec == static_cast<int>(PrefillPrecision::bf16) ||
        prec == static_cast<int>(PrefillPrecision::tf32x3))) {
    c.fail("precision", "gdn::PrefillPrecision::bf16 or gdn::PrefillPrecision::tf32x3",
           "the value " + to_str(prec));
  }
  const std::size_t need = prefill_bytes(cfg, tokens, batch);
  if (!(workspace_bytes >= need)) {
    c.fail("workspace",
           "at least prefill_workspace_bytes(cfg, tokens, B) = " + to_str(need) +
               " bytes (tokens = qkv.extent(0) = " + to_str(tokens) +
               ", B = state_slots.extent(0) = " + to_str(batch) + ")",
           to_str(workspace_bytes) + " bytes");
  }
  if (!(need == 0 || aligned16(workspace_data))) {
    c.fail("workspace", "data() aligned to 16 bytes", "a misaligned pointer");
  }
}

/// recurrence_prefill for either input form: validate, then launch.
template <class ExecSpace, class Inputs, class StateT>
void run_prefill(
    const ExecSpace& space, const HeadConfig& cfg, const Inputs& in,
    const IndexView<typename ExecSpace::memory_space>& state_slots,
    const PoolView<StateT, typename ExecSpace::memory_space>& state,
    const OutView<typename Inputs::activation_type, typename ExecSpace::memory_space>& out,
    const WorkspaceView<typename ExecSpace::memory_space>& workspace, PrefillPrecision precision) {
  using M = typename ExecSpace::memory_space;
  using ActT = typename Inputs::activation_type;
  const ArgCheck c("gdn::recurrence_prefill");
  const std::size_t batch = state_slots.extent(0);
  const std::size_t tokens = check_recurrence_shapes(c, cfg, in, batch, state, out);
  check_prefill_extras(c, cfg, tokens, batch, workspace.extent(0), workspace.data(), precision);
  // The largest leagues launched: the host's B x nv teams (CUDA's state kernel: B in the
  // grid's x) and the chunk slots (the chunk kernel's grid in x).
  check_league(c, "state_slots", static_cast<long long>(batch) * cfg.num_value_heads);
  check_league(c, "inputs.qkv", prefill_chunk_slots(tokens, batch));
  if (index_checking_enabled()) {
    check_call_indices(c, space, in.row_offsets, tokens, state_slots, state.extent(0), nullptr, 0,
                       0, kRecurrencePools);
    check_gate_params(c, cfg, in);
  }
  PrefillParams<ActT, StateT, M> p;
  p.in = TokenReader<ActT, M>(in);
  p.slots = state_slots;
  p.state = state;
  p.out.m_out = out;
  p.ws = reinterpret_cast<float*>(workspace.data());
  p.chunk_slots = prefill_chunk_slots(tokens, batch);
  p.tokens = static_cast<long long>(tokens);
  p.pool_rows = static_cast<long long>(state.extent(0));
  p.batch = static_cast<int>(batch);
  p.nv = cfg.num_value_heads;
  p.group = cfg.group_size();
  p.key_dim = cfg.key_dim();
  p.q_scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(cfg.key_head_dim)));
  p.precision = precision;
  if (batch == 0 || tokens == 0) return;
  with_head_dim(cfg.key_head_dim, [&](auto dk) {
    constexpr int D = decltype(dk)::value;
#if defined(KOKKOS_ENABLE_CUDA)
    if constexpr (std::is_same<ExecSpace, Kokkos::Cuda>::value) {
      launch_prefill_cuda<ActT, StateT, D>(space, p);
      return;
    } else
#endif
    {
      launch_prefill_host<ExecSpace, ActT, StateT, D>(space, p);
    }
  });
}

template <class ExecSpace, class ActT, class StateT>
void PrefillLauncher<ExecSpace, ActT, StateT>::run(
    const ExecSpace& space, const HeadConfig& cfg, const TokenInputs<M, ActT>& in,
    const IndexView<M>& state_slots, const PoolView<StateT, M>& state, const OutView<ActT, M>& out,
    const WorkspaceView<M>& workspace, PrefillPrecision precision) {
  run_prefill(space, cfg, in, state_slots, state, out, workspace, precision);
}

template <class ExecSpace, class ActT, class StateT>
void PrefillLauncher<ExecSpace, ActT, StateT>::run(
    const ExecSpace& space, const HeadConfig& cfg, const GateInputs<M, ActT>& in,
    const IndexView<M>& state_slots, const PoolView<StateT, M>& state, const OutView<ActT, M>& out,
    const WorkspaceView<M>& workspace, PrefillPrecision precision) {
  run_prefill(space, cfg, in, state_slots, state, out, workspace, precision);
}

}  // namespace Impl
}  // namespace gdn

#endif  // GDN_IMPL_PREFILL_LAUNCH_IMPL_HPP
