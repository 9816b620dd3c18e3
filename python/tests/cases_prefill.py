"""recurrence_prefill (the chunked prefill): against the float64 loop within the bounds of
docs/api.md, with and without a workspace (the same bits), raw gates against
recurrence_fwd_gates, bad input named, and the torch operator's bits."""

import pytest
import torch

import gdn
from cases_ops import needs_custom_ops
from cases_support import Problem, bits_equal, expect_error, reference, rel_err, sync


def prefill_tol(device, precision):
    """docs/api.md's bounds: float32 on the CPU; on CUDA per precision."""
    if not str(device).startswith("cuda"):
        return 2e-5
    return 2e-2 if precision == "bf16" else 1e-4


def workspace(p, device):
    tokens = p.offsets[-1]
    n = gdn.prefill_workspace_bytes(p.cfg, tokens, len(p.lengths))
    return torch.empty(n, dtype=torch.uint8, device=device)


def prefill_args(p, device):
    qkv, decay, beta, off, slots = p.inputs()
    return dict(cfg=p.cfg, qkv=qkv, decay=decay, beta=beta, row_offsets=off, state_slots=slots,
                state=p.state(), out=p.out(), workspace=workspace(p, device))


@pytest.mark.parametrize("precision", ["tf32x3", "bf16"])
def test_prefill_matches_float64_reference(device, precision):
    p = Problem(device, nk=1, nv=2, dk=64, lengths=(70, 1, 0, 129))
    a = prefill_args(p, device)
    assert gdn.recurrence_prefill(**a, precision=precision) is None
    sync(device)
    ref_out, ref_state = reference(p)
    rows = [p.slots[b] for b in range(len(p.lengths)) if p.lengths[b] > 0]
    tol = prefill_tol(device, precision)
    assert rel_err(a["out"], ref_out) <= tol
    assert rel_err(a["state"][rows], ref_state[rows]) <= tol
    others = [r for r in range(p.state0.shape[0]) if r not in rows]
    assert torch.equal(a["state"][others].cpu(), p.state0[others])


def test_prefill_without_workspace_same_bits(device):
    p = Problem(device, nk=1, nv=2, dk=64, lengths=(65, 3))
    a, b = prefill_args(p, device), prefill_args(p, device)
    gdn.recurrence_prefill(**a, precision="bf16")
    b["workspace"] = None
    gdn.recurrence_prefill(**b, precision="bf16")
    sync(device)
    assert bits_equal(a["out"], b["out"]) and bits_equal(a["state"], b["state"])


def test_prefill_gates_agree_with_forward_gates(device):
    p = Problem(device, nk=1, nv=2, dk=64, lengths=(80, 5))
    g = torch.Generator().manual_seed(3)
    tokens = p.offsets[-1]
    gates = (p.t(torch.randn(tokens, 2, generator=g)), p.t(torch.randn(tokens, 2, generator=g)),
             p.t(-torch.rand(2, generator=g)), p.t(torch.randn(2, generator=g)))
    qkv, _, _, off, slots = p.inputs()
    s1, o1, s2, o2 = p.state(), p.out(), p.state(), p.out()
    gdn.recurrence_prefill_gates(p.cfg, qkv, *gates, off, slots, s1, o1, workspace(p, device),
                                 "tf32x3")
    gdn.recurrence_fwd_gates(p.cfg, qkv, *gates, off, slots, s2, o2)
    sync(device)
    ref = o2.double().cpu()
    assert rel_err(o1, ref) <= prefill_tol(device, "tf32x3")


def test_prefill_bad_input_is_named(device):
    p = Problem(device, nk=1, nv=2, dk=64, lengths=(10, 3))
    a = prefill_args(p, device)
    expect_error(ValueError, "precision", gdn.recurrence_prefill, a, precision="fp8")
    small = torch.empty(a["workspace"].numel() - 1, dtype=torch.uint8, device=device)
    e = expect_error(gdn.InvalidArgument, "workspace", gdn.recurrence_prefill, a, workspace=small)
    assert "prefill_workspace_bytes" in str(e)
    with pytest.raises(gdn.InvalidArgument, match="'cfg.key_head_dim'"):
        gdn.prefill_workspace_bytes(gdn.HeadConfig(1, 2, 96, 96), 10, 1)


@needs_custom_ops
def test_prefill_operator_gives_the_functions_bits(device):
    import gdn.ops
    p = Problem(device, nk=1, nv=2, dk=64, lengths=(65, 3))
    a, b = prefill_args(p, device), prefill_args(p, device)
    gdn.recurrence_prefill(**a, precision="tf32x3")
    head = gdn.ops.head_of(p.cfg)
    del b["cfg"]
    torch.ops.gdn.recurrence_prefill(head, **b, precision="tf32x3")
    sync(device)
    assert bits_equal(a["out"], b["out"]) and bits_equal(a["state"], b["state"])
