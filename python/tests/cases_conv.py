"""The causal depthwise conv1d with SiLU: conv1d_fwd against its float64 reference, pieces and
strides, conv1d_verify_ring equal to the forward, state_fold with the conv pools equal to the
forwards over the accepted prefix, and the conv calls' bad arguments.
"""

import pytest
import torch

import gdn
from cases_support import (ConvProblem, Problem, bits_equal, conv_fwd_args, conv_verify_args,
                           expect_error, fold_conv_args, sync, transposed)


# ---------------------------------------------------------------------------
# The causal depthwise conv1d with SiLU (conv1d_fwd, conv1d_verify_ring, state_fold's conv pools)


CONV_TOL = 4e-6  # float32 out: |out - ref| <= CONV_TOL * max(1, |ref|) against float64
CONV_TOL_BF16 = 2.0 ** -8  # bfloat16 out: rounding to 8 significant bits, with room


def conv_reference(cp):
    """float64 conv of problem cp: (out [tokens, conv_dim], conv state pool after).

    Channel c sees h = (its conv state row, oldest first, then the sequence's inputs);
    token p gets acc = bias[c] + sum_j weight[c, j] * h[p + j] and out = acc / (1 + exp(-acc)).
    The row keeps the last W-1 entries of h."""
    x, w = cp.qkv.double(), cp.weight.double()
    pool = cp.state0.double().clone()
    out = torch.zeros(x.shape, dtype=torch.float64)
    for b, n in enumerate(cp.lengths):
        if n == 0:
            continue
        o = cp.offsets[b]
        h = torch.cat([pool[cp.slots[b]].t(), x[o:o + n]])  # [W-1 + n, conv_dim]
        acc = torch.zeros(n, x.shape[1], dtype=torch.float64)
        if cp.bias is not None:
            acc += cp.bias.double()
        for j in range(cp.width):
            acc += w[:, j] * h[j:j + n]
        out[o:o + n] = acc / (1 + torch.exp(-acc))
        pool[cp.slots[b]] = h[n:].t()
    return out, pool


def conv_rel_err(x, ref):
    """Largest |x - ref| / max(1, |ref|)."""
    x = x.detach().to("cpu", torch.float64)
    return ((x - ref).abs() / ref.abs().clamp(min=1.0)).max().item() if ref.numel() else 0.0


def accepted_prefix(lengths, accepted, ring_len):
    """(token indices, row offsets) of the tokens a fold commits: the first accepted[b] tokens,
    or the whole row where it is longer than RING_LEN (verify committed it)."""
    keep = [n if length <= ring_len else length for n, length in zip(accepted, lengths)]
    starts = [sum(lengths[:b]) for b in range(len(lengths))]
    sel = [s + i for s, n in zip(starts, keep) for i in range(n)]
    offs = [0]
    for n in keep:
        offs.append(offs[-1] + n)
    return torch.tensor(sel, dtype=torch.long), offs


@pytest.mark.parametrize("out_dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("width", [2, 3, 4])
def test_conv1d_fwd_matches_float64_reference(device, width, bias, dtype, out_dtype):
    """out within CONV_TOL (CONV_TOL_BF16 for a bfloat16 out) of float64; the conv state pool
    after the call equals the reference's exactly (it holds copies of inputs: the last W-1 of
    (old row, the sequence), shifted for a sequence shorter than W-1); other rows untouched."""
    cp = ConvProblem(device, width=width, bias=bias, dtype=dtype,
                     lengths=(3, 0, 5, 1, 7, 2, 37), seed=width + 10 * bias)
    qkv, weight, b, off, slots = cp.inputs()
    state, out = cp.conv_state(), cp.out(out_dtype)
    assert gdn.conv1d_fwd(cp.cfg, qkv, weight, b, off, slots, state, out) is None
    sync(device)
    ref_out, ref_pool = conv_reference(cp)
    assert out.dtype == out_dtype and state.dtype == dtype
    tol = CONV_TOL if out_dtype == torch.float32 else CONV_TOL_BF16
    assert conv_rel_err(out, ref_out) <= tol
    assert torch.equal(state.cpu().double(), ref_pool)


def test_conv1d_pieces_and_empty_batch(device):
    """A sequence conv'd in two calls (the conv state carried between them) gives the bits of
    one call; B == 0 writes nothing."""
    cp = ConvProblem(device, lengths=(9,), seed=3)
    qkv, weight, bias, off, slots = cp.inputs()
    s1, o1 = cp.conv_state(), cp.out()
    gdn.conv1d_fwd(cp.cfg, qkv, weight, bias, off, slots, s1, o1)
    s2, o2 = cp.conv_state(), cp.out()
    for lo, hi in ((0, 2), (2, 9)):  # the first piece is shorter than W-1
        gdn.conv1d_fwd(cp.cfg, qkv[lo:hi], weight, bias, cp.idx([0, hi - lo]), slots, s2,
                       o2[lo:hi])
    sync(device)
    assert bits_equal(o1, o2) and bits_equal(s1, s2)
    empty = ConvProblem(device, lengths=())
    qkv, weight, bias, off, slots = empty.inputs()
    state, out = empty.conv_state(), empty.out()
    gdn.conv1d_fwd(empty.cfg, qkv, weight, bias, off, slots, state, out)
    sync(device)
    assert torch.equal(state.cpu(), empty.state0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_conv1d_strided_inputs_and_output(device, dtype):
    """qkv and out in larger tensors, qkv transposed, and the weight a view of a
    torch.nn.Conv1d weight [conv_dim, 1, W]: the bits of dense tensors."""
    cp = ConvProblem(device, dtype=dtype, lengths=(4, 2, 7), seed=4)
    qkv, weight, bias, off, slots = cp.inputs()
    s_dense, o_dense = cp.conv_state(), cp.out()
    gdn.conv1d_fwd(cp.cfg, qkv, weight, bias, off, slots, s_dense, o_dense)
    conv_weight = torch.zeros(cp.cfg.conv_dim, 1, cp.width + 2, device=device)[..., 1:-1]
    conv_weight.copy_(weight.unsqueeze(1))
    for make_qkv in (transposed, lambda x: torch.zeros(
            2 * x.shape[0], x.shape[1] + 4, dtype=dtype, device=device)[::2, 2:-2].copy_(x)):
        big = torch.full((qkv.shape[0] + 3, 2 * cp.cfg.conv_dim), float("nan"), device=device)
        out = big[3:, 1::2]
        state = cp.conv_state()
        q = make_qkv(qkv)
        assert not q.is_contiguous() and not out.is_contiguous()
        gdn.conv1d_fwd(cp.cfg, q, conv_weight[:, 0, :], bias, off, slots, state, out)
        sync(device)
        assert bits_equal(out, o_dense) and bits_equal(state, s_dense)
        assert torch.isnan(big[:3]).all() and torch.isnan(big[3:, 0::2]).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("width", [2, 3, 4])
def test_conv1d_verify_equals_forward_and_records_inputs(device, width, dtype):
    """verify's out == the forward's, bit for bit. Rows with 0 < L <= RING_LEN leave their
    conv state row unchanged and record their pre-conv inputs in conv_ring; the longer row
    commits as the forward does; nothing else of the ring is written."""
    ring_len = 5
    cp = ConvProblem(device, width=width, dtype=dtype, lengths=(3, 0, 5, 1, 7), seed=20 + width)
    qkv, weight, bias, off, slots = cp.inputs()
    s_fwd, o_fwd = cp.conv_state(), cp.out()
    gdn.conv1d_fwd(cp.cfg, qkv, weight, bias, off, slots, s_fwd, o_fwd)
    ring_slots = [4, 0, 2, 1, 3]
    state, out, ring = cp.conv_state(), cp.out(), cp.conv_ring(ring_len, rows=6)
    gdn.conv1d_verify_ring(cp.cfg, qkv, weight, bias, off, slots, state, out,
                           cp.idx(ring_slots), ring)
    sync(device)
    assert bits_equal(out, o_fwd)
    expect_ring = torch.full(ring.shape, -7.0, dtype=dtype)
    expect_state = cp.state0.to(dtype).clone()
    for b, n in enumerate(cp.lengths):
        o = cp.offsets[b]
        if n > ring_len:  # committed, as the forward does
            expect_state[cp.slots[b]] = s_fwd[cp.slots[b]].cpu()
        else:
            expect_ring[ring_slots[b], :n, :cp.cfg.conv_dim] = cp.qkv[o:o + n].to(dtype)
    assert bits_equal(state, expect_state)
    assert bits_equal(ring, expect_ring)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("width", [2, 3, 4])
def test_state_fold_with_conv_equals_forward_over_the_accepted_prefix(device, width, dtype):
    """Two layers, each verified (the conv, then the recurrence on its output), then folded in
    one state_fold with the conv pools: both pools equal, bit for bit, conv1d_fwd and
    recurrence_fwd over the accepted tokens; verify's outs are the forwards' outs. Rows with
    0 or more than RING_LEN accepted tokens are left as verify left them."""
    lengths, ring_len = [4, 2, 0, 7, 3, 5, 1], 5
    accepted = [2, 0, 0, 7, 3, 5, 1]
    batch, layers = len(lengths), 2
    rows = layers * batch + 2
    probs = []
    for layer in range(layers):
        slots = [layer * batch + b + 1 for b in range(batch)]  # rows 0 and rows-1 unused
        cp = ConvProblem(device, width=width, dtype=dtype, lengths=lengths, slots=slots,
                         pool_rows=rows, seed=30 + layer)
        rp = Problem(device, nk=1, nv=2, dk=64, lengths=lengths, slots=slots, pool_rows=rows,
                     seed=40 + layer)
        probs.append((cp, rp))
    cfg = probs[0][0].cfg
    ring_rows = [[layer * batch + batch - 1 - b for b in range(batch)] for layer in range(layers)]
    conv_state0, state0 = probs[0][0].conv_state(), probs[0][1].state()  # every layer's rows
    conv_state, state = conv_state0.clone(), state0.clone()
    conv_ring = probs[0][0].conv_ring(ring_len, rows=layers * batch + 1)
    ring = probs[0][1].ring(ring_len, rows=layers * batch + 1)
    outs = []
    for layer, (cp, rp) in enumerate(probs):
        qkv, weight, bias, off, slots = cp.inputs()
        _, decay, beta, _, _ = rp.inputs()
        y, o = cp.out(), rp.out()
        rs = cp.idx(ring_rows[layer])
        gdn.conv1d_verify_ring(cfg, qkv, weight, bias, off, slots, conv_state, y, rs, conv_ring)
        gdn.recurrence_verify_ring(cfg, y, decay, beta, off, slots, state, o, rs, ring)
        outs.append((y, o))
    idx = probs[0][0].idx
    state_rows = idx([cp.slots for cp, _ in probs])
    gdn.state_fold(cfg, state_rows, state, idx(ring_rows), ring, idx(accepted),
                   conv_state=conv_state, conv_ring=conv_ring)

    sel, offs = accepted_prefix(lengths, accepted, ring_len)
    sel = sel.to(device)
    e_conv, e_state = conv_state0.clone(), state0.clone()
    for layer, (cp, rp) in enumerate(probs):
        qkv, weight, bias, _, slots = cp.inputs()
        _, decay, beta, _, _ = rp.inputs()
        y, o = cp.out(tokens=len(sel)), rp.out()[:len(sel)]
        gdn.conv1d_fwd(cfg, qkv[sel], weight, bias, idx(offs), slots, e_conv, y)
        gdn.recurrence_fwd(cfg, y, decay[sel], beta[sel], idx(offs), slots, e_state, o)
        sync(device)
        assert bits_equal(outs[layer][0][sel], y), f"layer {layer}: conv verify out != forward"
        assert bits_equal(outs[layer][1][sel], o), f"layer {layer}: verify out != forward"
    assert bits_equal(conv_state, e_conv), "fold(conv verify) != conv1d_fwd over the prefix"
    assert bits_equal(state, e_state), "fold(verify) != recurrence_fwd over the prefix"


# ---------------------------------------------------------------------------
# The conv calls' bad arguments


CONV_CALLS = {
    "conv_fwd": (gdn.conv1d_fwd, conv_fwd_args),
    "conv_verify": (gdn.conv1d_verify_ring, conv_verify_args),
}
CONV_TENSOR_ARGS = ["qkv", "weight", "bias", "row_offsets", "state_slots", "conv_state", "out"]


@pytest.mark.parametrize("call", ["conv_fwd", "conv_verify"])
def test_conv1d_bad_tensors_name_the_argument(device, call):
    """Not a tensor: TypeError; a dtype other than the documented ones: TypeError naming the
    dtype; a wrong rank or a non-dense pool: ValueError."""
    fn, make = CONV_CALLS[call]
    cp = ConvProblem(device, lengths=(3, 0, 2))
    args = make(cp)
    names = CONV_TENSOR_ARGS + (["ring_slots", "conv_ring"] if call == "conv_verify" else [])
    for name in names:
        t = args[name]
        expect_error(TypeError, name, fn, args, **{name: [1, 2, 3]})
        if name in ("row_offsets", "state_slots", "ring_slots"):
            bad = [t.to(torch.int64), t.to(torch.float32)]
        elif name in ("weight", "bias"):  # float32 only, whatever qkv's dtype
            bad = [t.to(torch.float64), t.to(torch.bfloat16)]
        elif name == "out":  # float32 or bfloat16, whatever qkv's dtype
            bad = [t.to(torch.float64), t.to(torch.float16)]
        elif name == "qkv":
            bad = [t.to(torch.float64), t.to(torch.float16), t.to(torch.int32)]
        else:  # the conv pools: qkv's dtype
            bad = [t.to(torch.bfloat16), t.to(torch.float64)]
        for b in bad:
            e = expect_error(TypeError, name, fn, args, **{name: b})
            assert "dtype" in str(e)
        for b in (t.unsqueeze(0), t.reshape(-1) if t.dim() > 1 else t.reshape(1, -1)):
            e = expect_error(ValueError, name, fn, args, **{name: b})
            assert "rank" in str(e)
    e = expect_error(ValueError, "conv_state", fn, args,
                     conv_state=args["conv_state"].transpose(1, 2).contiguous().transpose(1, 2))
    assert "contiguous" in str(e)
    row = args["out"][:1]
    e = expect_error(ValueError, "out", fn, args, out=row.expand(args["out"].shape[0], -1))
    assert "overlap" in str(e)
    # bfloat16 activations: the conv pools must be bfloat16 too.
    b16 = dict(args, qkv=args["qkv"].bfloat16(), conv_state=args["conv_state"].bfloat16())
    if call == "conv_verify":
        b16["conv_ring"] = args["conv_ring"].bfloat16()
    e = expect_error(TypeError, "conv_state", fn, b16, conv_state=args["conv_state"])
    assert "bfloat16" in str(e) and "qkv" in str(e)
    if call == "conv_verify":
        e = expect_error(TypeError, "conv_ring", fn, b16, conv_ring=args["conv_ring"])
        assert "bfloat16" in str(e)


def test_conv1d_library_checks_map_to_invalid_argument(device):
    """Wrong W, a conv state that does not match W or conv_dim, short tensors:
    gdn.InvalidArgument naming the C++ argument."""
    cp = ConvProblem(device, lengths=(3, 0, 2))
    a = conv_verify_args(cp)
    st, w = a["conv_state"], a["weight"]
    conv = cp.cfg.conv_dim
    cases = [
        ("inputs.weight", dict(weight=torch.zeros(conv, 5, device=device))),  # W = 5
        ("inputs.weight", dict(weight=torch.zeros(conv, 1, device=device))),  # W = 1
        ("inputs.weight", dict(weight=w[:-1])),
        ("inputs.bias", dict(bias=a["bias"][:-1])),
        ("inputs.qkv", dict(qkv=a["qkv"][:, :-1])),
        ("inputs.row_offsets", dict(row_offsets=a["row_offsets"][:-1])),
        ("conv_state", dict(conv_state=st[:, :, :2].contiguous())),  # W-1 = 2 but W = 4
        ("conv_state", dict(conv_state=st[:, :-1].contiguous())),
        ("out", dict(out=a["out"][:, :-1])),
        ("out", dict(out=a["out"][:-1])),
        ("conv_ring", dict(conv_ring=a["conv_ring"][..., :conv - 1].contiguous())),
        ("ring_slots", dict(ring_slots=a["ring_slots"][:1])),
    ]
    for name, change in cases:
        expect_error(gdn.InvalidArgument, name, gdn.conv1d_verify_ring, a, **change)
        if name not in ("conv_ring", "ring_slots"):
            fwd = {k: v for k, v in a.items() if k not in ("ring_slots", "conv_ring")}
            expect_error(gdn.InvalidArgument, name, gdn.conv1d_fwd, fwd, **change)
    # Nothing was written by a rejected call.
    sync(device)
    assert torch.equal(a["conv_state"].cpu(), cp.state0)
    assert torch.isnan(a["out"]).all()


def test_state_fold_conv_arguments_are_checked(device):
    """conv_state and conv_ring go together (TypeError naming the missing one), share one
    dtype, and match conv_dim, W (2..4) and the ring's RING_LEN (gdn.InvalidArgument)."""
    p = Problem(device)
    a = fold_conv_args(p)
    f = gdn.state_fold
    expect_error(TypeError, "conv_ring", f, a, conv_ring=None)
    expect_error(TypeError, "conv_state", f, a, conv_state=None)
    expect_error(TypeError, "conv_state", f, a, conv_state=[1, 2])
    for bad in (torch.float64, torch.float16):
        e = expect_error(TypeError, "conv_state", f, a, conv_state=a["conv_state"].to(bad))
        assert "dtype" in str(e)
    e = expect_error(TypeError, "conv_ring", f, a, conv_ring=a["conv_ring"].bfloat16())
    assert "conv_state" in str(e)
    expect_error(ValueError, "conv_ring", f, a, conv_ring=a["conv_ring"][0])
    st, rg = a["conv_state"], a["conv_ring"]
    conv = p.cfg.conv_dim
    cases = [
        ("conv.conv_state", dict(conv_state=torch.zeros(st.shape[0], conv, 4, device=device))),
        ("conv.conv_state", dict(conv_state=torch.zeros(st.shape[0], conv, 0, device=device))),
        ("conv.conv_state", dict(conv_state=st[:, :-1].contiguous())),
        ("conv.conv_ring", dict(conv_ring=rg[:, :3].contiguous())),  # RING_LEN 3, ring has 4
        ("conv.conv_ring", dict(conv_ring=rg[..., :-1].contiguous())),
    ]
    state = a["state"].clone()
    for name, change in cases:
        expect_error(gdn.InvalidArgument, name, f, a, **change)
    sync(device)
    assert bits_equal(a["state"], state)  # validated before either fold ran
    for width in (2, 3, 4):  # every supported W, both dtypes
        for dtype in (torch.float32, torch.bfloat16):
            f(**fold_conv_args(p, width=width, dtype=dtype))
