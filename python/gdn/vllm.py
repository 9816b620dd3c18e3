"""The pool-indexed gated-delta-rule call of vLLM and SGLang on gdn's kernels.

``fused_recurrent_gated_delta_rule(q, k, v, g, beta, scale, initial_state,
inplace_final_state=True, cu_seqlens=None, ssm_state_indices=None,
num_accepted_tokens=None, use_qk_l2norm_in_kernel=False)`` takes the arguments of
vLLM's ``vllm.model_executor.layers.fla.ops.fused_recurrent_gated_delta_rule``:
``initial_state`` is the engine's state pool ``[slots, HV, K, V]`` (float32), and
sequence ``n`` (of ``cu_seqlens``, or of the batch) reads and writes pool row
``ssm_state_indices[n]`` in place; ``-1`` (``gdn.pad_slot``) is a padding row. It
returns ``(o, initial_state)`` as vLLM's does. It runs ``gdn.recurrence_fwd`` with
``state_slots = ssm_state_indices``: gdn's exact per-token path.

Speculative rows are where gdn differs. vLLM writes a state checkpoint per drafted
token (``ssm_state_indices`` ``[N, max_T]``) and the next step starts from the
checkpoint ``num_accepted_tokens`` picks; gdn verifies the window without writing
the state and commits the accepted prefix from a compact ring
(``gdn.recurrence_verify_ring``, then ``gdn.state_fold`` with ``num_accepted``, or
the lazy flow), so a 2-D ``ssm_state_indices`` or ``num_accepted_tokens`` raises
``NotImplementedError`` here; docs/integrating.md ("vLLM and SGLang") shows the two
side by side. The other restrictions are those of :mod:`gdn.fla`
(``use_qk_l2norm_in_kernel=True``, ``scale`` of ``K ** -0.5``, no backward).
"""

from . import fla

__all__ = ["fused_recurrent_gated_delta_rule"]


def fused_recurrent_gated_delta_rule(q, k, v, g, beta, scale, initial_state,
                                     inplace_final_state=True, cu_seqlens=None,
                                     ssm_state_indices=None, num_accepted_tokens=None,
                                     use_qk_l2norm_in_kernel=False):
    """vLLM's pool-indexed recurrent call (see the module's documentation)."""
    import torch
    name = "vllm.fused_recurrent_gated_delta_rule"
    fla._check(name, q, k, v, g, beta, scale, use_qk_l2norm_in_kernel, cu_seqlens, {})
    if num_accepted_tokens is not None or (ssm_state_indices is not None
                                           and ssm_state_indices.dim() != 1):
        raise NotImplementedError(
            f"gdn.{name}: speculative rows (a state per drafted token, num_accepted_tokens) "
            "run as gdn.recurrence_verify_ring + gdn.state_fold (or the lazy flow) in gdn; "
            "see docs/integrating.md, 'vLLM and SGLang'")
    if not inplace_final_state:
        raise NotImplementedError(f"gdn.{name}: gdn updates the pool in place "
                                  "(inplace_final_state=True)")
    K, HV, V = q.shape[3], v.shape[2], v.shape[3]
    if (initial_state.dtype != torch.float32 or initial_state.dim() != 4
            or tuple(initial_state.shape[1:]) != (HV, K, V)):
        raise ValueError(f"gdn.{name}: expected a float32 state pool [slots, HV, K, V] with "
                         f"(HV, K, V) = {(HV, K, V)}, got {initial_state.dtype} "
                         f"{tuple(initial_state.shape)}")
    with torch.no_grad():
        offsets = fla._offsets(q, cu_seqlens)
        N = offsets.numel() - 1
        if ssm_state_indices is None:
            slots = torch.arange(N, device=q.device, dtype=torch.int32)
        else:
            slots = ssm_state_indices.to(dtype=torch.int32)
        if slots.numel() != N:
            raise ValueError(f"gdn.{name}: expected ssm_state_indices of {N} rows, got "
                             f"{slots.numel()}")
        o = fla._forward(q, k, v, g, beta, offsets, initial_state, slots, False)
    return o, initial_state
