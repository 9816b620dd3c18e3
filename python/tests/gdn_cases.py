"""The test cases of gdn's Python entry, shared by the CPU (test_cpu.py) and
CUDA (test_cuda.py) files; each file supplies the `device` fixture.

The reference is a plain PyTorch float64 loop over tokens with the per-token
mathematics of docs/design.md section 2 (qf, kinv, S <- a*S, kv = S^T k,
u = beta*(v - kv*kinv)*kinv, S += k u^T, out = qf * S^T q). The library
computes the same in float32 in its own (chunked) order, so the two agree
within a tolerance; kernels are compared with each other bit for bit only
where docs/design.md promises it (verify vs forward, fold vs forward, strided vs
dense inputs).
"""

import math
import os
import subprocess
import sys

import pytest
import torch

import gdn

TOL = 1e-4  # relative (to the largest magnitude of the reference) error allowed against float64


# ---------------------------------------------------------------------------
# Problems


class Problem:
    """One layer's per-token inputs over a ragged batch, and a state pool."""

    def __init__(self, device, nk=2, nv=4, dk=64, lengths=(3, 0, 5, 1), slots=None,
                 pool_rows=None, state_dtype=torch.float32, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.device = device
        self.cfg = gdn.HeadConfig(nk, nv, dk, dk)
        self.lengths = list(lengths)
        batch = len(lengths)
        tokens = sum(lengths)
        self.offsets = [0]
        for n in lengths:
            self.offsets.append(self.offsets[-1] + n)
        conv = self.cfg.conv_dim
        # qkv rows of unit-scale values, decays in (0.8, 1), betas in (0, 1).
        self.qkv = torch.randn(tokens, conv, generator=g)
        self.decay = 0.8 + 0.2 * torch.rand(tokens, nv, generator=g)
        self.beta = torch.rand(tokens, nv, generator=g)
        rows = pool_rows if pool_rows is not None else batch + 2
        # Distinct rows from the top of the pool down: rows 0 and 1 stay unused.
        self.slots = list(slots) if slots is not None else [rows - 1 - b for b in range(batch)]
        state = 0.1 * torch.randn(rows, nv, dk, dk, generator=g)
        self.state_dtype = state_dtype
        self.state0 = state.to(state_dtype)  # the initial pool, on the host

    # tensors on the device -------------------------------------------------
    def t(self, x, dtype=None):
        return x.to(device=self.device, dtype=dtype if dtype is not None else x.dtype)

    def idx(self, values):
        return torch.tensor(values, dtype=torch.int32, device=self.device)

    def inputs(self):
        return (self.t(self.qkv), self.t(self.decay), self.t(self.beta), self.idx(self.offsets),
                self.idx(self.slots))

    def state(self):
        return self.t(self.state0.clone())

    def out(self):
        return torch.full((self.qkv.shape[0], self.cfg.value_dim), float("nan"),
                          device=self.device)

    def ring(self, ring_len, rows=None, dtype=torch.float32, pad=3):
        cfg = self.cfg
        rec = gdn.ring_record_elements(cfg.key_head_dim, cfg.value_head_dim, cfg.group_size)
        rows = rows if rows is not None else len(self.lengths) + 1
        return torch.full((rows, cfg.num_key_heads, ring_len, rec + pad), -7.0, dtype=dtype,
                          device=self.device)


def reference(p, state0=None):
    """float64 forward of problem p from state0 (default p.state0): (out, state)."""
    cfg = p.cfg
    nk, nv, dk, dv = cfg.num_key_heads, cfg.num_value_heads, cfg.key_head_dim, cfg.value_head_dim
    grp = nv // nk
    qkv = p.qkv.double()
    decay, beta = p.decay.double(), p.beta.double()
    state = (p.state0 if state0 is None else state0).double().clone()
    out = torch.zeros(qkv.shape[0], nv * dv, dtype=torch.float64)
    kd = nk * dk
    kh_of = torch.arange(nv) // grp  # key head of every value head
    for b in range(len(p.lengths)):
        s = state[p.slots[b]].clone()  # [nv, Dk, Dv]
        for t in range(p.offsets[b], p.offsets[b + 1]):
            q = qkv[t, :kd].view(nk, dk)[kh_of]  # [nv, Dk]
            k = qkv[t, kd:2 * kd].view(nk, dk)[kh_of]
            v = qkv[t, 2 * kd:].view(nv, dv)
            qf = (1.0 / math.sqrt(dk)) / torch.sqrt((q * q).sum(-1) + 1e-6)  # [nv]
            kinv = 1.0 / torch.sqrt((k * k).sum(-1) + 1e-6)
            s = decay[t].view(nv, 1, 1) * s
            kv = torch.einsum("hij,hi->hj", s, k)
            u = beta[t].view(nv, 1) * (v - kv * kinv.view(nv, 1)) * kinv.view(nv, 1)
            s = s + k.unsqueeze(2) * u.unsqueeze(1)
            out[t] = (qf.view(nv, 1) * torch.einsum("hij,hi->hj", s, q)).reshape(-1)
        if p.lengths[b] > 0:
            state[p.slots[b]] = s
    return out, state


def rel_err(x, ref):
    x = x.detach().to("cpu", torch.float64)
    scale = ref.abs().max().item()
    return (x - ref).abs().max().item() / (scale if scale > 0 else 1.0)


def assert_close_to_reference(out, state, p, state_tol=TOL):
    ref_out, ref_state = reference(p)
    rows = sorted({p.slots[b] for b in range(len(p.lengths)) if p.lengths[b] > 0})
    tokens = p.offsets[-1]
    assert rel_err(out[:tokens], ref_out) <= TOL
    # Rows the call commits are close to the reference; every other row is untouched.
    assert rel_err(state[rows], ref_state[rows]) <= state_tol
    others = [r for r in range(p.state0.shape[0]) if r not in rows]
    assert torch.equal(state[others].cpu(), p.state0[others])


def bits_equal(a, b):
    """Bit-for-bit equality (NaNs included) of two tensors of one dtype."""
    a, b = a.detach().cpu().contiguous(), b.detach().cpu().contiguous()
    if a.dtype in (torch.float32, torch.int32):
        return torch.equal(a.view(torch.int32), b.view(torch.int32))
    if a.dtype == torch.bfloat16:
        return torch.equal(a.view(torch.int16), b.view(torch.int16))
    return torch.equal(a, b)


def sync(device):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


# ---------------------------------------------------------------------------
# Shapes, dtypes and agreement with the float64 loop


@pytest.mark.parametrize("state_dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("nk,nv,dk", [(2, 4, 64), (2, 2, 64), (1, 2, 128)])
def test_forward_matches_float64_reference(device, state_dtype, nk, nv, dk):
    p = Problem(device, nk=nk, nv=nv, dk=dk, lengths=(3, 0, 21, 1), state_dtype=state_dtype)
    qkv, decay, beta, off, slots = p.inputs()
    state, out = p.state(), p.out()
    assert gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, state, out) is None
    sync(device)
    assert out.dtype == torch.float32 and state.dtype == state_dtype
    # A bf16 pool rounds the committed state to 8 significant bits (2^-9 relative each time it
    # is stored); 2^-7 leaves room for a store per chunk.
    assert_close_to_reference(out, state, p, state_tol=TOL if state_dtype == torch.float32
                              else 2.0 ** -7)


def test_empty_batch(device):
    p = Problem(device, lengths=())
    qkv, decay, beta, off, slots = p.inputs()
    state, out = p.state(), p.out()
    gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, state, out)
    ring = p.ring(4)
    gdn.recurrence_verify_ring(p.cfg, qkv, decay, beta, off, slots, state, out, p.idx([]), ring)
    gdn.state_fold(p.cfg, torch.zeros(2, 0, dtype=torch.int32, device=device), state,
                   torch.zeros(2, 0, dtype=torch.int32, device=device), ring, p.idx([]))
    sync(device)
    assert bits_equal(state, p.state0)
    assert torch.all(ring == -7.0)


def test_uint32_and_int32_indices_agree(device):
    if not hasattr(torch, "uint32"):
        pytest.skip("this torch has no uint32 dtype")
    p = Problem(device)
    qkv, decay, beta, off, slots = p.inputs()
    try:
        off_u, slots_u = off.to(torch.uint32), slots.to(torch.uint32)
        off_u.__dlpack__()
    except Exception as e:  # uint32 support in torch is partial
        pytest.skip(f"this torch cannot export uint32 tensors through DLPack: {e}")
    s1, o1 = p.state(), p.out()
    s2, o2 = p.state(), p.out()
    gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, s1, o1)
    gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off_u, slots_u, s2, o2)
    sync(device)
    assert bits_equal(o1, o2) and bits_equal(s1, s2)


def test_head_config_and_record_elements():
    cfg = gdn.HeadConfig(num_key_heads=16, num_value_heads=32, key_head_dim=128,
                         value_head_dim=128)
    assert (cfg.group_size, cfg.key_dim, cfg.value_dim, cfg.conv_dim) == (2, 2048, 4096, 8192)
    assert "num_key_heads=16" in repr(cfg)
    assert gdn.ring_record_elements(128, 128, 2) == 128 + 2 * 129
    assert gdn.ring_record_elements(64, 64, 1) == 129
    with pytest.raises(ValueError):
        gdn.ring_record_elements(-1, 64, 1)


# ---------------------------------------------------------------------------
# Strides: no copies, the same bits as dense inputs


def transposed(x):
    """x's values in a tensor whose memory is the transpose (strides (1, rows))."""
    return x.t().contiguous().t()


def sliced(x, device):
    """x's values inside a larger tensor: every other row, from column 3 on."""
    big = torch.full((2 * x.shape[0] + 1, x.shape[1] + 5), float("nan"), device=device)
    view = big[1::2, 3:3 + x.shape[1]]
    view.copy_(x)
    return view


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_strided_inputs_and_output(device, layout):
    p = Problem(device, lengths=(4, 2, 7))
    qkv, decay, beta, off, slots = p.inputs()
    s_dense, o_dense = p.state(), p.out()
    gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, s_dense, o_dense)

    make = transposed if layout == "transposed" else (lambda x: sliced(x, device))
    qkv_s, decay_s, beta_s = make(qkv), make(decay), make(beta)
    assert not qkv_s.is_contiguous()
    s_strided = p.state()
    out_s = make(p.out())
    gdn.recurrence_fwd(p.cfg, qkv_s, decay_s, beta_s, off, slots, s_strided, out_s)
    sync(device)
    assert bits_equal(out_s, o_dense)
    assert bits_equal(s_strided, s_dense)
    assert_close_to_reference(o_dense, s_dense, p)
    if layout == "sliced":  # the output's neighbours in the larger tensor are not written
        base = out_s._base if out_s._base is not None else out_s
        mask = torch.ones_like(base, dtype=torch.bool)
        mask[1::2, 3:3 + out_s.shape[1]] = False
        assert torch.isnan(base[mask]).all()


def test_broadcast_gate_input(device):
    """A read-only input may repeat its elements (stride 0): one decay row for every token."""
    p = Problem(device, lengths=(3, 2))
    p.decay[:] = p.decay[0]
    qkv, decay, beta, off, slots = p.inputs()
    s1, o1 = p.state(), p.out()
    gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, s1, o1)
    s2, o2 = p.state(), p.out()
    expanded = decay[:1].expand(decay.shape[0], -1)
    assert expanded.stride(0) == 0
    gdn.recurrence_fwd(p.cfg, qkv, expanded, beta, off, slots, s2, o2)
    sync(device)
    assert bits_equal(o1, o2) and bits_equal(s1, s2)


# ---------------------------------------------------------------------------
# Speculative decoding: verify == forward, fold(verify) == forward(accepted prefix)


@pytest.mark.parametrize("state_dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("nk,nv", [(2, 4), (2, 2)])
def test_verify_and_fold_are_exact(device, state_dtype, nk, nv):
    ring_len = 6
    lengths = [4, 6, 0, 9, 3]  # 9 > RING_LEN: verify commits that row itself
    accepted = [2, 6, 0, 9, 0]  # 0: not folded; 9 > RING_LEN: not folded (already committed)
    layers = 2
    batch = len(lengths)
    rows = layers * batch + 1
    # Layer-major tables, two different permutations of the pool rows.
    state_rows = [[(7 * (l * batch + b) + 3) % rows for b in range(batch)] for l in range(layers)]
    ring_rows = [[(5 * (l * batch + b) + 1) % rows for b in range(batch)] for l in range(layers)]
    probs = [Problem(device, nk=nk, nv=nv, lengths=lengths, slots=state_rows[l], pool_rows=rows,
                     state_dtype=state_dtype, seed=11 + l) for l in range(layers)]
    cfg = probs[0].cfg
    # One pool for all layers (each layer's problem draws a different initial pool: use layer 0's).
    for pr in probs[1:]:
        pr.state0 = probs[0].state0
    state_v = probs[0].state()
    ring = probs[0].ring(ring_len, rows=rows)
    outs_v = []
    for l, pr in enumerate(probs):
        qkv, decay, beta, off, slots = pr.inputs()
        out = pr.out()
        gdn.recurrence_verify_ring(cfg, qkv, decay, beta, off, slots, state_v, out,
                                   pr.idx(ring_rows[l]), ring)
        outs_v.append(out)
    sync(device)
    # Verify touched only the rows of sequences longer than RING_LEN.
    committed = {state_rows[l][b] for l in range(layers) for b in range(batch)
                 if lengths[b] > ring_len}
    for r in range(rows):
        if r not in committed:
            assert bits_equal(state_v[r], probs[0].state0[r])
    # Records of unused ring rows and the padding of every record are untouched.
    rec = gdn.ring_record_elements(cfg.key_head_dim, cfg.value_head_dim, cfg.group_size)
    assert torch.all(ring[..., rec:] == -7.0)
    used = {ring_rows[l][b] for l in range(layers) for b in range(batch)
            if 0 < lengths[b] <= ring_len}
    for r in range(rows):
        if r not in used:
            assert torch.all(ring[r] == -7.0)

    gdn.state_fold(cfg, torch.tensor(state_rows, dtype=torch.int32, device=device), state_v,
                   torch.tensor(ring_rows, dtype=torch.int32, device=device), ring,
                   probs[0].idx(accepted))

    # The forward over the whole window (outputs) and over the accepted prefix (state).
    state_f = probs[0].state()
    for l, pr in enumerate(probs):
        qkv, decay, beta, off, slots = pr.inputs()
        s_full, out_f = pr.state(), pr.out()
        gdn.recurrence_fwd(cfg, qkv, decay, beta, off, slots, s_full, out_f)
        sync(device)
        assert bits_equal(outs_v[l], out_f), f"layer {l}: verify's out != forward's out"
        assert rel_err(out_f, reference(pr)[0]) <= TOL
        # Accepted prefixes (rows longer than RING_LEN take the whole row, as verify committed).
        keep = [accepted[b] if lengths[b] <= ring_len else lengths[b] for b in range(batch)]
        sel = torch.cat([torch.arange(pr.offsets[b], pr.offsets[b] + keep[b], dtype=torch.long)
                         for b in range(batch)])
        offs = [0]
        for n in keep:
            offs.append(offs[-1] + n)
        gdn.recurrence_fwd(cfg, pr.t(pr.qkv[sel]), pr.t(pr.decay[sel]), pr.t(pr.beta[sel]),
                           pr.idx(offs), slots, state_f,
                           torch.empty(len(sel), cfg.value_dim, device=device))
    sync(device)
    assert bits_equal(state_v, state_f), "fold(verify) != forward over the accepted prefix"
    for l in range(layers):  # the fold did commit every accepted prefix
        for b in range(batch):
            if 0 < accepted[b] <= ring_len:
                assert not bits_equal(state_v[state_rows[l][b]], probs[0].state0[state_rows[l][b]])


def test_bf16_ring_is_close(device):
    """A bf16 ring is not exact, but the folded state stays close to the float one."""
    p = Problem(device, lengths=(4, 3))
    qkv, decay, beta, off, slots = p.inputs()
    results = []
    for dtype in (torch.float32, torch.bfloat16):
        state = p.state()
        ring = p.ring(4, dtype=dtype)
        rslots = p.idx([0, 1])
        gdn.recurrence_verify_ring(p.cfg, qkv, decay, beta, off, slots, state, p.out(), rslots,
                                   ring)
        gdn.state_fold(p.cfg, p.idx([p.slots]), state, p.idx([[0, 1]]), ring, p.idx([3, 3]))
        results.append(state)
    sync(device)
    rows = p.slots
    assert rel_err(results[1][rows], results[0][rows].cpu().double()) <= 2.0 ** -6
    assert not bits_equal(results[1], p.state0)


def test_fold_tables_in_any_layout(device):
    """[L, B] tables given transposed in memory give the same fold."""
    p = Problem(device, lengths=(3, 2, 4))
    qkv, decay, beta, off, slots = p.inputs()
    ring = p.ring(4)
    rslots = p.idx([2, 0, 1])
    base = p.state()
    gdn.recurrence_verify_ring(p.cfg, qkv, decay, beta, off, slots, base, p.out(), rslots, ring)
    acc = p.idx([1, 2, 3])
    results = []
    for make in (lambda x: x.contiguous(), transposed):
        state = base.clone()
        gdn.state_fold(p.cfg, make(p.idx([p.slots])), state, make(p.idx([[2, 0, 1]])), ring, acc)
        results.append(state)
    sync(device)
    assert bits_equal(results[0], results[1])
    assert not bits_equal(results[0], base)


# ---------------------------------------------------------------------------
# Bad arguments: the right exception type, naming the argument


def fwd_args(p):
    qkv, decay, beta, off, slots = p.inputs()
    return dict(cfg=p.cfg, qkv=qkv, decay=decay, beta=beta, row_offsets=off, state_slots=slots,
                state=p.state(), out=p.out())


def verify_args(p, ring_len=4):
    a = fwd_args(p)
    a.update(ring_slots=p.idx(list(range(len(p.lengths)))), ring=p.ring(ring_len))
    return a


def fold_args(p, ring_len=4):
    return dict(cfg=p.cfg, state_rows=p.idx([p.slots]), state=p.state(),
                ring_rows=p.idx([list(range(len(p.lengths)))]), ring=p.ring(ring_len),
                num_accepted=p.idx([1] * len(p.lengths)))


CALLS = {
    "fwd": (gdn.recurrence_fwd, fwd_args),
    "verify": (gdn.recurrence_verify_ring, verify_args),
    "fold": (gdn.state_fold, fold_args),
}


def expect_error(exc, name, fn, args, **changes):
    a = dict(args)
    a.update(changes)
    with pytest.raises(exc) as info:
        fn(**a)
    assert f"'{name}'" in str(info.value), str(info.value)
    return info.value


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
        for bad in ([rows, 0, 1, 2], [-1, 0, 1, 2]):  # -1 is read as uint32 0xffffffff
            e = expect_error(gdn.InvalidArgument, "state_slots", gdn.recurrence_fwd, a,
                             state_slots=p.idx(bad))
            assert str(rows) in str(e)
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


# ---------------------------------------------------------------------------
# bfloat16 activations and raw gates computed in the kernel


def gates_of(p, seed=5):
    """Raw gates of problem p: a, b [tokens, nv] and A_log, dt_bias [nv] (float32, host)."""
    g = torch.Generator().manual_seed(seed)
    tokens, nv = p.decay.shape
    a = -3.0 + 5.0 * torch.rand(tokens, nv, generator=g)
    b = -4.0 + 8.0 * torch.rand(tokens, nv, generator=g)
    a_log = -3.0 + 3.5 * torch.rand(nv, generator=g)
    dt_bias = -1.0 + 2.0 * torch.rand(nv, generator=g)
    return a, b, a_log, dt_bias


def gate_values(a, b, a_log, dt_bias):
    """decay and beta of the raw gates in float64 (the mathematics)."""
    x = a.double() + dt_bias.double()
    decay = torch.exp(-torch.exp(a_log.double()) * torch.nn.functional.softplus(x))
    return decay, torch.sigmoid(b.double())


@pytest.mark.parametrize("state_dtype", [torch.float32, torch.bfloat16])
def test_bf16_activations_are_float_on_widened_values(device, state_dtype):
    """bfloat16 qkv/decay/beta/out: the bits of a float32 call on the widened values, with out
    rounded to nearest even; the state identical."""
    p = Problem(device, lengths=(3, 0, 21, 1), state_dtype=state_dtype)
    for name in ("qkv", "decay", "beta"):  # values that bfloat16 holds exactly
        setattr(p, name, getattr(p, name).to(torch.bfloat16).float())
    qkv, decay, beta, off, slots = p.inputs()
    state_f, out_f = p.state(), p.out()
    gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, state_f, out_f)
    state_b = p.state()
    out_b = torch.zeros(out_f.shape, dtype=torch.bfloat16, device=device)
    gdn.recurrence_fwd(p.cfg, qkv.bfloat16(), decay.bfloat16(), beta.bfloat16(), off, slots,
                       state_b, out_b)
    sync(device)
    assert bits_equal(state_b, state_f)
    assert bits_equal(out_b, out_f.bfloat16())
    assert rel_err(out_b, reference(p)[0]) <= 2.0 ** -8


def test_mixed_activation_dtypes_are_a_type_error(device):
    args = fwd_args(Problem(device))
    e = expect_error(TypeError, "out", gdn.recurrence_fwd, args,
                     qkv=args["qkv"].bfloat16(), decay=args["decay"].bfloat16(),
                     beta=args["beta"].bfloat16())
    assert "bfloat16" in str(e)


def test_raw_gates_match_the_formula_and_fold_exactly(device):
    """recurrence_fwd_gates agrees with recurrence_fwd on the gates computed in float64, and
    fold(verify_gates) == fwd_gates over the accepted prefix, bit for bit."""
    p = Problem(device, lengths=(4, 6, 0, 9, 3))
    a, b, a_log, dt_bias = gates_of(p)
    decay, beta = gate_values(a, b, a_log, dt_bias)
    qkv, _, _, off, slots = p.inputs()
    gates = (p.t(a), p.t(b), p.t(a_log), p.t(dt_bias))
    state_g, out_g = p.state(), p.out()
    gdn.recurrence_fwd_gates(p.cfg, qkv, *gates, off, slots, state_g, out_g)
    state_d, out_d = p.state(), p.out()
    gdn.recurrence_fwd(p.cfg, qkv, p.t(decay.float()), p.t(beta.float()), off, slots, state_d,
                       out_d)
    sync(device)
    assert rel_err(out_g, out_d.cpu().double()) <= 1e-5
    assert rel_err(state_g, state_d.cpu().double()) <= 1e-5
    p.decay, p.beta = decay.float(), beta.float()
    assert rel_err(out_g, reference(p)[0]) <= TOL

    ring_len, accepted = 6, [2, 6, 0, 9, 1]
    ring = p.ring(ring_len)
    rslots = p.idx([0, 1, 2, 3, 4])
    state_v, out_v = p.state(), p.out()
    gdn.recurrence_verify_ring_gates(p.cfg, qkv, *gates, off, slots, state_v, out_v, rslots, ring)
    gdn.state_fold(p.cfg, p.idx([p.slots]), state_v, p.idx([[0, 1, 2, 3, 4]]), ring,
                   p.idx(accepted))
    keep = [n if L <= ring_len else L for n, L in zip(accepted, p.lengths)]
    sel = torch.cat([torch.arange(p.offsets[i], p.offsets[i] + keep[i], dtype=torch.long)
                     for i in range(len(keep))])
    offs = [0]
    for n in keep:
        offs.append(offs[-1] + n)
    state_e = p.state()
    gdn.recurrence_fwd_gates(p.cfg, p.t(p.qkv[sel]), p.t(a[sel]), p.t(b[sel]), gates[2], gates[3],
                             p.idx(offs), slots, state_e,
                             torch.empty(len(sel), p.cfg.value_dim, device=device))
    sync(device)
    assert bits_equal(out_v, out_g), "verify's out != forward's out"
    assert bits_equal(state_v, state_e), "fold(verify) != forward over the accepted prefix"


def test_raw_gate_arguments_are_checked(device):
    p = Problem(device)
    a, b, a_log, dt_bias = gates_of(p)
    qkv, _, _, off, slots = p.inputs()
    args = dict(cfg=p.cfg, qkv=qkv, a=p.t(a), b=p.t(b), A_log=p.t(a_log), dt_bias=p.t(dt_bias),
                row_offsets=off, state_slots=slots, state=p.state(), out=p.out())
    expect_error(TypeError, "A_log", gdn.recurrence_fwd_gates, args, A_log=p.t(a_log.double()))
    expect_error(TypeError, "b", gdn.recurrence_fwd_gates, args, b=p.t(b.bfloat16()))
    expect_error(gdn.InvalidArgument, "inputs.dt_bias", gdn.recurrence_fwd_gates, args,
                 dt_bias=p.t(dt_bias[:1]))
    gdn.set_index_checking(True)
    try:
        expect_error(gdn.InvalidArgument, "inputs.A_log", gdn.recurrence_fwd_gates, args,
                     A_log=p.t(torch.full_like(a_log, float("nan"))))
    finally:
        gdn.set_index_checking(False)
