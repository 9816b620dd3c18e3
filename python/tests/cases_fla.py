"""gdn.fla: fla's gated-delta-rule signatures on gdn's kernels, against a float64 loop written
from fla's semantics (the log-decay g, q and k normalised in the kernel, the query scaled by
K ** -0.5): fixed-length and varlen batches, GQA, an initial state, q, k and v as views of
one projection buffer (read without a copy) or as separate tensors, and the clear errors for
what gdn does not support."""

import pytest
import torch

import gdn.fla


def fla_reference(q, k, v, g, beta, h0, cu_seqlens):
    """The recurrence in float64, sequence by sequence: (o [B, T, HV, V], final [N, HV, K, V])."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    G = HV // H
    qd, kd, vd = (x.double().reshape(B * T, -1, x.shape[-1]) for x in (q, k, v))
    gd, bd = g.double().reshape(B * T, HV), beta.double().reshape(B * T, HV)
    bounds = (cu_seqlens.tolist() if cu_seqlens is not None else list(range(0, B * T + 1, T)))
    N = len(bounds) - 1
    S = h0.double().clone() if h0 is not None else torch.zeros(N, HV, K, V, dtype=torch.float64)
    o = torch.zeros(B * T, HV, V, dtype=torch.float64)
    for n in range(N):
        for t in range(bounds[n], bounds[n + 1]):
            for h in range(HV):
                qh, kh = qd[t, h // G], kd[t, h // G]
                qh = qh / torch.sqrt((qh * qh).sum() + 1e-6) * K ** -0.5
                kh = kh / torch.sqrt((kh * kh).sum() + 1e-6)
                S[n, h] *= torch.exp(gd[t, h])
                u = bd[t, h] * (vd[t, h] - S[n, h].t() @ kh)
                S[n, h] += torch.outer(kh, u)
                o[t, h] = S[n, h].t() @ qh
    return o.reshape(B, T, HV, V), S


def inputs(device, B=2, T=5, H=2, HV=4, D=64, seed=0, one_buffer=False):
    gen = torch.Generator().manual_seed(seed)
    if one_buffer:  # one projection [B, T, conv_dim] split into q, k, v (Hugging Face's layer)
        mixed = torch.randn(B, T, 2 * H * D + HV * D, generator=gen)
        q, k, v = torch.split(mixed.to(device), [H * D, H * D, HV * D], dim=-1)
        q, k, v = q.reshape(B, T, H, D), k.reshape(B, T, H, D), v.reshape(B, T, HV, D)
    else:
        q, k = (torch.randn(B, T, H, D, generator=gen).to(device) for _ in range(2))
        v = torch.randn(B, T, HV, D, generator=gen).to(device)
    g = (-0.2 * torch.rand(B, T, HV, generator=gen)).to(device)  # log-decay in [-0.2, 0]
    beta = torch.rand(B, T, HV, generator=gen).to(device)
    return q, k, v, g, beta


def rel(a, b):
    return float((a.double().cpu() - b).norm() / b.norm())


@pytest.mark.parametrize("fn", ["fused_recurrent_gated_delta_rule", "chunk_gated_delta_rule"])
@pytest.mark.parametrize("one_buffer", [False, True])
def test_fla_signature_matches_the_float64_loop(device, fn, one_buffer):
    """Fixed-length batch, G = 2, an initial state, the final state returned."""
    q, k, v, g, beta = inputs(device, one_buffer=one_buffer)
    h0 = torch.randn(2, 4, 64, 64, generator=torch.Generator().manual_seed(9)).to(device) * 0.1
    o, ht = getattr(gdn.fla, fn)(q, k, v, g=g, beta=beta, initial_state=h0,
                                  output_final_state=True, use_qk_l2norm_in_kernel=True)
    ro, rs = fla_reference(q.cpu(), k.cpu(), v.cpu(), g.cpu(), beta.cpu(), h0.cpu(), None)
    assert o.shape == v.shape and o.dtype == v.dtype and ht.shape == (2, 4, 64, 64)
    assert rel(o, ro) < 1e-5 and rel(ht, rs) < 1e-5
    # the initial state is not modified; without output_final_state no state is returned
    o2, none = getattr(gdn.fla, fn)(q, k, v, g=g, beta=beta, initial_state=h0,
                                     use_qk_l2norm_in_kernel=True)
    assert none is None and torch.equal(o2, o)


def test_fla_views_of_one_buffer_are_read_without_a_copy(device):
    q, k, v, _, _ = inputs(device, one_buffer=True)
    view = gdn.fla._qkv_view(q, k, v)
    assert view is not None and view.data_ptr() == q.data_ptr()
    assert view.shape == (2 * 5, 2 * 2 * 64 + 4 * 64)
    q2, k2, v2, _, _ = inputs(device, one_buffer=False)
    assert gdn.fla._qkv_view(q2, k2, v2) is None


def test_fla_varlen(device):
    """cu_seqlens over one row of 9 tokens: sequences of 4, 0 and 5 tokens."""
    q, k, v, g, beta = inputs(device, B=1, T=9, H=1, HV=2, D=128, seed=3)
    cu = torch.tensor([0, 4, 4, 9], dtype=torch.int32, device=device)
    o, ht = gdn.fla.fused_recurrent_gated_delta_rule(
        q, k, v, g=g, beta=beta, cu_seqlens=cu, output_final_state=True,
        use_qk_l2norm_in_kernel=True)
    ro, rs = fla_reference(q.cpu(), k.cpu(), v.cpu(), g.cpu(), beta.cpu(), None, cu.cpu())
    assert ht.shape == (3, 2, 128, 128)
    assert rel(o, ro) < 1e-5 and rel(ht, rs) < 1e-5
    assert float(ht[1].abs().max()) == 0.0  # the empty sequence keeps its zero state


@pytest.mark.parametrize("fn", ["fused_recurrent_gated_delta_rule", "chunk_gated_delta_rule"])
def test_fla_varlen_across_chunks(device, fn):
    """cu_seqlens with rows of 70, 1 and 64 tokens (the chunked prefill's 64-token chunks:
    one row across two chunks, one shorter than a chunk, one exactly a chunk)."""
    q, k, v, g, beta = inputs(device, B=1, T=135, H=1, HV=2, D=64, seed=5)
    cu = torch.tensor([0, 70, 71, 135], dtype=torch.int32, device=device)
    h0 = torch.randn(3, 2, 64, 64, generator=torch.Generator().manual_seed(4)).to(device) * 0.1
    o, ht = getattr(gdn.fla, fn)(q, k, v, g=g, beta=beta, cu_seqlens=cu, initial_state=h0,
                                  output_final_state=True, use_qk_l2norm_in_kernel=True)
    ro, rs = fla_reference(q.cpu(), k.cpu(), v.cpu(), g.cpu(), beta.cpu(), h0.cpu(), cu.cpu())
    assert rel(o, ro) < 1e-5 and rel(ht, rs) < 1e-5


@pytest.mark.parametrize("fn", ["fused_recurrent_gated_delta_rule", "chunk_gated_delta_rule"])
def test_fla_ignores_other_keywords_as_fla_does(device, fn):
    """Keywords fla does not know (transformers' layer passes the model call's through) change
    nothing; unsupported options set to their off value are accepted."""
    q, k, v, g, beta = inputs(device, seed=6)
    f = getattr(gdn.fla, fn)
    o, _ = f(q, k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=True)
    o2, _ = f(q, k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=True, use_cache=True,
              output_router_logits=False, chunk_size=64, gk=None, head_first=False)
    assert torch.equal(o, o2)


def test_fla_says_what_gdn_does_not_support(device):
    q, k, v, g, beta = inputs(device)
    f = gdn.fla.fused_recurrent_gated_delta_rule
    with pytest.raises(NotImplementedError, match="use_qk_l2norm_in_kernel"):
        f(q, k, v, g=g, beta=beta)
    with pytest.raises(NotImplementedError, match="scale"):
        f(q, k, v, g=g, beta=beta, scale=0.5, use_qk_l2norm_in_kernel=True)
    with pytest.raises(NotImplementedError, match="gk"):
        f(q, k, v, g=g, beta=beta, gk=g, use_qk_l2norm_in_kernel=True)
    with pytest.raises(NotImplementedError, match="transpose_state_layout"):
        f(q, k, v, g=g, beta=beta, transpose_state_layout=True, use_qk_l2norm_in_kernel=True)
    with pytest.raises(NotImplementedError, match="backward"):
        f(q.requires_grad_(), k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=True)
    with pytest.raises(ValueError, match="cu_seqlens"):
        f(q.detach(), k, v, g=g, beta=beta, use_qk_l2norm_in_kernel=True,
          cu_seqlens=torch.tensor([0, 5], dtype=torch.int32, device=device))


def test_hf_use_gdn_switches_gated_deltanet_layers(device):
    """gdn.hf.use_gdn rebinds the two recurrence functions of every module built like
    transformers' Qwen3NextGatedDeltaNet (a stand-in here: transformers is not needed) and
    leaves other modules alone; a model without such a layer is an error."""
    import gdn.hf

    class Qwen3NextGatedDeltaNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.chunk_gated_delta_rule = None
            self.recurrent_gated_delta_rule = None

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([Qwen3NextGatedDeltaNet(), torch.nn.Linear(2, 2),
                                               Qwen3NextGatedDeltaNet()])

    model = Model()
    assert gdn.hf.use_gdn(model) == 2
    for i in (0, 2):
        assert model.layers[i].chunk_gated_delta_rule is gdn.fla.chunk_gated_delta_rule
        assert (model.layers[i].recurrent_gated_delta_rule
                is gdn.fla.fused_recurrent_gated_delta_rule)
    with pytest.raises(ValueError, match="Gated DeltaNet"):
        gdn.hf.use_gdn(torch.nn.Linear(2, 2))


def test_hf_use_gdn_replaces_the_globals_a_layer_calls(device):
    """Where a layer calls its recurrence functions as globals of its modeling module (later
    transformers 5.x), gdn.hf.use_gdn replaces those globals; a layer with neither attributes
    nor such calls is an error that changes nothing."""
    import sys
    import types

    import gdn.hf

    mod = types.ModuleType("gdn_test_fake_modeling")
    exec("def chunk_gated_delta_rule(*a, **k): return 'chunk'\n"
         "def fused_recurrent_gated_delta_rule(*a, **k): return 'recurrent'\n"
         "def torch_chunk_gated_delta_rule(*a, **k): return 'torch chunk'\n"
         "import functools, torch\n"
         "def logged(f):\n"
         "    @functools.wraps(f)\n"
         "    def wrapper(*a, **k):\n"
         "        return f(*a, **k)\n"
         "    return wrapper\n"
         "class FakeGatedDeltaNet(torch.nn.Module):\n"
         "    @logged  # a decorated forward, as transformers' layers may have\n"
         "    def forward(self, x, decode, fallback=False):\n"
         "        if decode:\n"
         "            return fused_recurrent_gated_delta_rule(x)\n"
         "        if fallback:\n"
         "            return torch_chunk_gated_delta_rule(x)\n"
         "        return chunk_gated_delta_rule(x)\n"
         "class OtherGatedDeltaNet(torch.nn.Module):\n"
         "    def forward(self, x):\n"
         "        return x\n", mod.__dict__)
    sys.modules[mod.__name__] = mod
    try:
        model = torch.nn.Sequential(mod.FakeGatedDeltaNet(), torch.nn.Linear(2, 2))
        before = mod.chunk_gated_delta_rule
        with pytest.raises(ValueError, match="not supported"):
            gdn.hf.use_gdn(torch.nn.Sequential(mod.FakeGatedDeltaNet(), mod.OtherGatedDeltaNet()))
        assert mod.chunk_gated_delta_rule is before  # nothing switched by the failed call
        assert gdn.hf.use_gdn(model) == 1
        assert mod.chunk_gated_delta_rule is gdn.fla.chunk_gated_delta_rule
        assert mod.torch_chunk_gated_delta_rule is gdn.fla.chunk_gated_delta_rule
        assert mod.fused_recurrent_gated_delta_rule is gdn.fla.fused_recurrent_gated_delta_rule
    finally:
        del sys.modules[mod.__name__]


def test_vllm_pool_indexed_call_updates_its_rows_in_place(device):
    """gdn.vllm's pool-indexed call: sequences of cu_seqlens read and write pool rows
    ssm_state_indices in place (-1: a padding row, nothing read or written), the other rows
    untouched; outputs and states as the float64 loop from those rows."""
    import gdn.vllm
    q, k, v, g, beta = inputs(device, B=1, T=7, H=2, HV=4, D=64, seed=5)
    cu = torch.tensor([0, 3, 7, 7], dtype=torch.int32, device=device)
    pool = torch.randn(5, 4, 64, 64, generator=torch.Generator().manual_seed(6)).to(device) * 0.1
    before = pool.clone()
    idx = torch.tensor([4, 1, -1], dtype=torch.int32, device=device)
    o, same = gdn.vllm.fused_recurrent_gated_delta_rule(
        q, k, v, g, beta, 64 ** -0.5, pool, True, cu, idx, None, True)
    assert same is pool
    h0 = before[[4, 1, 0]].cpu()  # the third sequence is empty (and a padding row)
    ro, rs = fla_reference(q.cpu(), k.cpu(), v.cpu(), g.cpu(), beta.cpu(), h0, cu.cpu())
    assert rel(o, ro) < 1e-5
    assert rel(pool[4], rs[0]) < 1e-5 and rel(pool[1], rs[1]) < 1e-5
    for r in (0, 2, 3):
        assert torch.equal(pool[r], before[r])
    with pytest.raises(NotImplementedError, match="state_fold"):
        gdn.vllm.fused_recurrent_gated_delta_rule(
            q, k, v, g, beta, 64 ** -0.5, pool, True, cu, idx,
            torch.tensor([1, 1, 1], dtype=torch.int32, device=device), True)
