"""fla's gated-delta-rule entry points on gdn's kernels.

``fused_recurrent_gated_delta_rule`` and ``chunk_gated_delta_rule`` take fla's
arguments (``q``, ``k`` ``[B, T, H, K]``, ``v`` ``[B, T, HV, V]``, ``g`` the
log-decay and ``beta`` ``[B, T, HV]``, ``scale``, ``initial_state``
``[N, HV, K, V]``, ``output_final_state``, ``cu_seqlens`` for varlen with
``B == 1``, ``use_qk_l2norm_in_kernel``) and return fla's ``(o, final_state)``:
``o`` ``[B, T, HV, V]`` of ``v``'s dtype and the float32 final state (None
unless ``output_final_state``). A script that imports them from ``gdn.fla``
instead of ``fla.ops.gated_delta_rule`` runs unchanged.

``fused_recurrent_gated_delta_rule`` runs gdn's exact path
(``gdn.recurrence_fwd``: one token at a time, in gdn's canonical order);
``chunk_gated_delta_rule`` runs gdn's chunked prefill (``gdn.recurrence_prefill``,
64-token chunks on tensor cores) with bf16 products for bfloat16 inputs, as
fla does, and 3xTF32 products (float32-level accuracy) otherwise. Both agree
with fla to a tolerance, not bit for bit (docs/api.md gives the prefill's
bounds).

What gdn supports and fla's other options:

- ``use_qk_l2norm_in_kernel=True`` and ``scale`` of ``K ** -0.5`` (the
  defaults of Qwen3-Next): gdn always normalises the key and the query in
  the kernel. Anything else raises ``NotImplementedError``.
- ``K == V`` in {64, 128}; ``HV`` a multiple of ``H``.
- Inference only: no backward (gdn is an inference library); a tensor that
  requires grad raises ``NotImplementedError``.
- fla's other options (``gk``, ``gv``, ``use_gate_in_kernel``,
  ``use_beta_sigmoid_in_kernel``, ``allow_neg_eigval``, ``state_v_first``,
  ``transpose_state_layout``, ``head_first``, ``cp_context``) raise
  ``NotImplementedError`` when set.
- Any other keyword argument is ignored, as fla ignores it: Hugging Face's
  Qwen3-Next layer passes the model call's keywords (``use_cache``,
  ``output_router_logits``, ...) through to these functions. fla's
  ``chunk_size`` is one of them: gdn's chunk is 64 tokens.

No copy of q, k and v is made when they are views of one float32 buffer in
the order q, k, v along the channels (as Hugging Face's Qwen3-Next layer
splits its projection): gdn reads that buffer with its strides. Otherwise,
and for bfloat16 inputs (gdn's activations and gates share one dtype, and a
bfloat16 decay would lose the precision of fla's float32 log-decay), the
inputs are gathered into one float32 buffer first.
"""

import gdn

__all__ = ["fused_recurrent_gated_delta_rule", "chunk_gated_delta_rule"]

_UNSUPPORTED = ("gk", "gv", "use_gate_in_kernel", "use_beta_sigmoid_in_kernel", "allow_neg_eigval",
                "state_v_first", "transpose_state_layout", "head_first", "cp_context", "A_log",
                "dt_bias")


def _torch():
    import torch
    return torch


def _qkv_view(q, k, v):
    """The float32 [tokens, conv_dim] view of q, k, v if they are views of one buffer in the
    order q, k, v along the channels with a mergeable (batch, time) layout, else None."""
    torch = _torch()
    if not (q.dtype == k.dtype == v.dtype == torch.float32):
        return None
    if q.device != k.device or q.device != v.device:
        return None
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    e = q.element_size()
    try:
        same = q.untyped_storage().data_ptr() == v.untyped_storage().data_ptr()
    except AttributeError:  # torch < 2.0
        same = q.storage().data_ptr() == v.storage().data_ptr()
    if not same:
        return None
    if q.stride()[2:] != (K, 1) or k.stride()[2:] != (K, 1) or v.stride()[2:] != (V, 1):
        return None
    if not (q.stride()[:2] == k.stride()[:2] == v.stride()[:2]):
        return None
    if k.data_ptr() != q.data_ptr() + H * K * e or v.data_ptr() != q.data_ptr() + 2 * H * K * e:
        return None
    sb, st = q.stride(0), q.stride(1)
    if B > 1 and sb != T * st:
        return None
    conv_dim = 2 * H * K + HV * V
    return q.as_strided((B * T, conv_dim), (st, 1))


def _check(name, q, k, v, g, beta, scale, use_qk_l2norm_in_kernel, cu_seqlens, kwargs):
    torch = _torch()
    for key in _UNSUPPORTED:
        value = kwargs.get(key)
        if value is not None and value is not False:
            raise NotImplementedError(f"gdn.fla.{name}: '{key}' is not supported by gdn")
    if g is None or beta is None:
        raise NotImplementedError(f"gdn.fla.{name}: gdn needs 'g' (the log-decay) and 'beta'")
    if any(t.requires_grad for t in (q, k, v, g, beta)) and torch.is_grad_enabled():
        raise NotImplementedError(f"gdn.fla.{name}: gdn is an inference library and has no "
                                  "backward; call it under torch.no_grad() or on tensors that "
                                  "do not require grad")
    if not use_qk_l2norm_in_kernel:
        raise NotImplementedError(f"gdn.fla.{name}: gdn normalises q and k in the kernel; pass "
                                  "use_qk_l2norm_in_kernel=True")
    if q.dim() != 4 or k.shape != q.shape or v.dim() != 4 or v.shape[:2] != q.shape[:2]:
        raise ValueError(f"gdn.fla.{name}: expected q, k [B, T, H, K] and v [B, T, HV, V], got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    B, T, H, K = q.shape
    HV = v.shape[2]
    if g.shape != (B, T, HV) or beta.shape != (B, T, HV):
        raise ValueError(f"gdn.fla.{name}: expected g and beta [B, T, HV] = {(B, T, HV)}, got "
                         f"{tuple(g.shape)}, {tuple(beta.shape)} (headwise beta only)")
    if scale is not None and abs(scale - K ** -0.5) > 1e-12 * K ** -0.5:
        raise NotImplementedError(f"gdn.fla.{name}: gdn scales the query by K ** -0.5; "
                                  f"got scale={scale}")
    if cu_seqlens is not None and B != 1:
        raise ValueError(f"gdn.fla.{name}: with cu_seqlens, B must be 1 (got {B})")


def _forward(q, k, v, g, beta, offsets, state, slots, chunked):
    """gdn.recurrence_fwd, or with `chunked` gdn.recurrence_prefill, over q, k, v (one qkv
    buffer, read in place where possible) from the pool rows `slots` of `state` (written
    back); returns o [B, T, HV, V] of v's dtype."""
    torch = _torch()
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    tokens = B * T
    qkv = _qkv_view(q, k, v)
    if qkv is None:
        qkv = torch.cat([q.reshape(tokens, H * K), k.reshape(tokens, H * K),
                         v.reshape(tokens, HV * V)], dim=1).float()
    decay = torch.exp(g.float()).reshape(tokens, HV)
    beta_f = beta.float().reshape(tokens, HV)
    out = torch.empty(tokens, HV * V, device=q.device, dtype=torch.float32)
    cfg = gdn.HeadConfig(H, HV, K, V)
    if chunked:
        precision = "bf16" if q.dtype == torch.bfloat16 else "tf32x3"
        gdn.recurrence_prefill(cfg, qkv, decay, beta_f, offsets, slots, state, out,
                               precision=precision)
    else:
        gdn.recurrence_fwd(cfg, qkv, decay, beta_f, offsets, slots, state, out)
    return out.reshape(B, T, HV, V).to(v.dtype)


def _offsets(q, cu_seqlens):
    torch = _torch()
    B, T = q.shape[:2]
    if cu_seqlens is not None:
        return cu_seqlens.to(device=q.device, dtype=torch.int32)
    return torch.arange(0, B * T + 1, T, device=q.device, dtype=torch.int32)


def _run(name, q, k, v, g, beta, scale, initial_state, output_final_state, cu_seqlens,
         use_qk_l2norm_in_kernel, kwargs, chunked=False):
    torch = _torch()
    _check(name, q, k, v, g, beta, scale, use_qk_l2norm_in_kernel, cu_seqlens, kwargs)
    K, HV, V = q.shape[3], v.shape[2], v.shape[3]
    dev = q.device
    with torch.no_grad():
        offsets = _offsets(q, cu_seqlens)
        N = offsets.numel() - 1
        if initial_state is not None:
            state = initial_state.to(device=dev, dtype=torch.float32).clone().contiguous()
            if tuple(state.shape) != (N, HV, K, V):
                raise ValueError(f"gdn.fla.{name}: expected initial_state [N, HV, K, V] = "
                                 f"{(N, HV, K, V)}, got {tuple(initial_state.shape)}")
        else:
            state = torch.zeros(N, HV, K, V, device=dev, dtype=torch.float32)
        slots = torch.arange(N, device=dev, dtype=torch.int32)
        o = _forward(q, k, v, g, beta, offsets, state, slots, chunked)
    return o, (state if output_final_state else None)


def fused_recurrent_gated_delta_rule(q, k, v, g=None, beta=None, scale=None, initial_state=None,
                                     output_final_state=False, use_qk_l2norm_in_kernel=False,
                                     cu_seqlens=None, **kwargs):
    """fla's ``fused_recurrent_gated_delta_rule`` (see the module's documentation)."""
    return _run("fused_recurrent_gated_delta_rule", q, k, v, g, beta, scale, initial_state,
                output_final_state, cu_seqlens, use_qk_l2norm_in_kernel, kwargs)


def chunk_gated_delta_rule(q, k, v, g=None, beta=None, scale=None, initial_state=None,
                           output_final_state=False, use_qk_l2norm_in_kernel=False,
                           cu_seqlens=None, **kwargs):
    """fla's ``chunk_gated_delta_rule`` (see the module's documentation): gdn's chunked
    prefill, within its stated tolerance of :func:`fused_recurrent_gated_delta_rule`."""
    return _run("chunk_gated_delta_rule", q, k, v, g, beta, scale, initial_state,
                output_final_state, cu_seqlens, use_qk_l2norm_in_kernel, kwargs, chunked=True)
