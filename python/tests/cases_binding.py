"""What the binding itself does for recurrence_fwd, recurrence_verify_ring and state_fold: bad
arguments raise the right exception naming the argument, the library's checks map to
gdn.InvalidArgument, the index checking mode, and Kokkos initialised and finalised by the
module in a process of its own.
"""

import os
import subprocess
import sys

import pytest
import torch

import gdn
from cases_support import (Problem, bits_equal, expect_error, fold_args, fwd_args, sync,
                           verify_args)


# ---------------------------------------------------------------------------
# Bad arguments: the right exception type, naming the argument


CALLS = {
    "fwd": (gdn.recurrence_fwd, fwd_args),
    "verify": (gdn.recurrence_verify_ring, verify_args),
    "fold": (gdn.state_fold, fold_args),
}


TENSOR_ARGS = {
    "fwd": ["qkv", "decay", "beta", "row_offsets", "state_slots", "state", "out"],
    "verify": ["qkv", "decay", "beta", "row_offsets", "state_slots", "state", "out", "ring_slots",
               "ring"],
    "fold": ["state_rows", "state", "ring_rows", "ring", "num_accepted"],
}
INDEX_ARGS = {"row_offsets", "state_slots", "ring_slots", "num_accepted", "state_rows",
              "ring_rows"}
FLOAT_ARGS = {"qkv", "decay", "beta", "out"}


@pytest.mark.parametrize("call", ["fwd", "verify", "fold"])
def test_not_a_tensor_is_a_type_error(device, call):
    fn, make = CALLS[call]
    args = make(Problem(device))
    for name in TENSOR_ARGS[call]:
        expect_error(TypeError, name, fn, args, **{name: [1, 2, 3]})


@pytest.mark.parametrize("call", ["fwd", "verify", "fold"])
def test_wrong_dtype_is_a_type_error(device, call):
    fn, make = CALLS[call]
    args = make(Problem(device))
    for name in TENSOR_ARGS[call]:
        t = args[name]
        if name in INDEX_ARGS:
            bad = [t.to(torch.int64), t.to(torch.float32), t.to(torch.int16)]
        elif name in FLOAT_ARGS:  # the activations: float32 or bfloat16, one dtype per call
            bad = [t.to(torch.float64), t.to(torch.float16)]
            if name != "qkv":  # qkv decides the call's dtype; the others must follow it
                bad.append(t.to(torch.bfloat16))
        else:  # the pools: float32 or bfloat16
            bad = [t.to(torch.float64), t.to(torch.float16), t.to(torch.int32)]
        for b in bad:
            e = expect_error(TypeError, name, fn, args, **{name: b})
            assert "dtype" in str(e)


@pytest.mark.parametrize("call", ["fwd", "verify", "fold"])
def test_wrong_rank_is_a_value_error(device, call):
    fn, make = CALLS[call]
    args = make(Problem(device))
    for name in TENSOR_ARGS[call]:
        t = args[name]
        for b in (t.unsqueeze(0), t.reshape(-1) if t.dim() > 1 else t.reshape(1, -1)):
            e = expect_error(ValueError, name, fn, args, **{name: b})
            assert "rank" in str(e)


@pytest.mark.parametrize("call", ["verify", "fold"])
def test_pools_must_be_dense(device, call):
    fn, make = CALLS[call]
    p = Problem(device)
    args = make(p)
    e = expect_error(ValueError, "state", fn, args, state=args["state"].transpose(2, 3))
    assert "contiguous" in str(e)
    ring = args["ring"]
    wider = torch.zeros(*ring.shape[:3], ring.shape[3] + 1, device=device)
    e = expect_error(ValueError, "ring", fn, args, ring=wider[..., :ring.shape[3]])
    assert "contiguous" in str(e)


def test_strided_index_tensors_give_the_same_results(device):
    """Index tensors are passed with their strides (no copy): every other
    element of a larger tensor gives the contiguous tensor's results."""
    p = Problem(device)
    args = verify_args(p)
    ref_state, ref_out, ref_ring = args["state"].clone(), args["out"].clone(), args["ring"].clone()
    gdn.recurrence_verify_ring(**dict(args, state=ref_state, out=ref_out, ring=ref_ring))
    for name in ("row_offsets", "state_slots", "ring_slots"):
        t = args[name]
        spread = torch.zeros(2 * t.shape[0], dtype=t.dtype, device=device)
        spread[::2] = t
        state, out, ring = args["state"].clone(), args["out"].clone(), args["ring"].clone()
        gdn.recurrence_verify_ring(**dict(args, state=state, out=out, ring=ring,
                                          **{name: spread[::2]}))
        sync(device)
        assert bits_equal(out, ref_out), name
        assert bits_equal(ring, ref_ring), name
        assert bits_equal(state, ref_state), name


def test_overlapping_output_is_rejected(device):
    p = Problem(device)
    args = fwd_args(p)
    row = args["out"][:1]
    e = expect_error(ValueError, "out", gdn.recurrence_fwd, args,
                     out=row.expand(args["out"].shape[0], -1))
    assert "overlap" in str(e)


def test_library_checks_map_to_invalid_argument(device):
    """Shapes against the head geometry: gdn::InvalidArgument -> gdn.InvalidArgument (ValueError)."""
    p = Problem(device)
    a = verify_args(p)
    f = gdn.recurrence_verify_ring
    assert issubclass(gdn.InvalidArgument, ValueError)
    cases = [
        ("cfg.key_head_dim", dict(cfg=gdn.HeadConfig(2, 4, 32, 32))),
        ("cfg.num_value_heads", dict(cfg=gdn.HeadConfig(2, 3, 64, 64))),
        ("inputs.qkv", dict(qkv=a["qkv"][:, :10])),
        ("inputs.decay", dict(decay=a["decay"][:, :1])),
        ("inputs.beta", dict(beta=a["beta"][:2])),
        ("inputs.row_offsets", dict(row_offsets=a["row_offsets"][:-1])),
        ("state", dict(state=a["state"][:, :1].contiguous())),
        ("out", dict(out=a["out"][:, :5])),
        ("ring", dict(ring=a["ring"][:, :1].contiguous())),
        ("ring", dict(ring=a["ring"][..., :10].contiguous())),
        ("ring_slots", dict(ring_slots=a["ring_slots"][:1])),
    ]
    for name, change in cases:
        expect_error(gdn.InvalidArgument, name, f, a, **change)
    b = fold_args(p)
    expect_error(gdn.InvalidArgument, "ring_rows", gdn.state_fold, b,
                 ring_rows=torch.cat([b["ring_rows"], b["ring_rows"]]))
    expect_error(gdn.InvalidArgument, "state_rows", gdn.state_fold, b,
                 num_accepted=b["num_accepted"][:2])
    # A pool whose data is not 16-byte aligned (the kernels' wide loads).
    st = a["state"]
    flat = torch.zeros(st.numel() + 1, device=device)
    expect_error(gdn.InvalidArgument, "state", f, a, state=flat[1:].view(st.shape))


def test_index_checking_mode(device):
    p = Problem(device)
    a = fwd_args(p)
    rows = a["state"].shape[0]
    assert not gdn.index_checking_enabled()
    gdn.set_index_checking(True)
    try:
        assert gdn.index_checking_enabled()
        for bad in ([rows, 0, 1, 2], [-2, 0, 1, 2]):  # -2 is read as uint32 0xfffffffe
            e = expect_error(gdn.InvalidArgument, "state_slots", gdn.recurrence_fwd, a,
                             state_slots=p.idx(bad))
            assert str(rows) in str(e)
        # -1 (0xffffffff) is gdn.pad_slot: a padding row, skipped.
        gdn.recurrence_fwd(**dict(a, state_slots=p.idx([-1, 0, 1, 2])))
        expect_error(gdn.InvalidArgument, "inputs.row_offsets", gdn.recurrence_fwd, a,
                     row_offsets=p.idx([0, 3, 2, 8, 9]))
    finally:
        gdn.set_index_checking(False)


def test_requires_grad_is_a_type_error(device):
    p = Problem(device)
    a = fwd_args(p)
    e = expect_error(TypeError, "qkv", gdn.recurrence_fwd, a,
                     qkv=a["qkv"].clone().requires_grad_(True))
    assert "__dlpack__" in str(e)


def test_bad_stream_argument(device):
    p = Problem(device)
    a = fwd_args(p)
    expect_error(TypeError, "stream", gdn.recurrence_fwd, a, stream="default")
    expect_error(ValueError, "stream", gdn.recurrence_fwd, a, stream=-5)


# ---------------------------------------------------------------------------
# Process lifetime


def test_kokkos_initialized_and_finalized_by_the_module(device):
    """A fresh process: the first call initializes Kokkos, the exit finalizes it cleanly."""
    code = (
        "import torch, gdn\n"
        "assert not gdn.kokkos_initialized_here()\n"
        f"dev = {str(device)!r}\n"
        "cfg = gdn.HeadConfig(1, 1, 64, 64)\n"
        "qkv = torch.ones(2, cfg.conv_dim, device=dev)\n"
        "g = torch.full((2, 1), 0.5, device=dev)\n"
        "off = torch.tensor([0, 2], dtype=torch.int32, device=dev)\n"
        "slots = torch.zeros(1, dtype=torch.int32, device=dev)\n"
        "state = torch.zeros(1, 1, 64, 64, device=dev)\n"
        "out = torch.zeros(2, 64, device=dev)\n"
        "gdn.recurrence_fwd(cfg, qkv, g, g, off, slots, state, out)\n"
        "assert gdn.kokkos_initialized_here()\n"
        "print('sum', float(out.sum()))\n"
    )
    env = dict(os.environ)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "sum" in r.stdout
    assert float(r.stdout.split("sum")[1]) > 0
