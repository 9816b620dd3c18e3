"""The test cases of gdn's Python entry, shared by the CPU (test_cpu.py) and
CUDA (test_cuda.py) files; each file supplies the `device` fixture.

The reference is a plain PyTorch float64 loop over tokens with the per-token
mathematics of docs/design.md section 2 (qf, kinv, S <- a*S, kv = S^T k,
u = beta*(v - kv*kinv)*kinv, S += k u^T, out = qf * S^T q). The library
computes the same in float32 in its own (chunked) order, so the two agree
within a tolerance; kernels are compared with each other bit for bit only
where docs/design.md promises it (verify vs forward, fold vs forward, strided vs
dense inputs). The conv1d calls have their own float64 reference
(conv_reference: bias plus the W taps, then SiLU) and the same bit-for-bit
comparisons (verify vs forward, fold with the conv pools vs forward).
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


# ---------------------------------------------------------------------------
# The causal depthwise conv1d with SiLU (conv1d_fwd, conv1d_verify_ring, state_fold's conv pools)

CONV_TOL = 4e-6  # float32 out: |out - ref| <= CONV_TOL * max(1, |ref|) against float64
CONV_TOL_BF16 = 2.0 ** -8  # bfloat16 out: rounding to 8 significant bits, with room


class ConvProblem:
    """One layer's pre-conv inputs over a ragged batch, its conv weights and a conv state pool.

    Values are drawn as in the C++ tests (inputs in (-1, 1), weights in (-0.6, 0.6), bias in
    (-0.3, 0.3)) and rounded to what the activation dtype holds, so the float64 reference
    sees exactly the kernel's inputs."""

    def __init__(self, device, width=4, bias=True, lengths=(3, 0, 5, 1, 7), dtype=torch.float32,
                 slots=None, pool_rows=None, nk=1, nv=2, dk=64, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.device, self.width, self.dtype = device, width, dtype
        self.cfg = gdn.HeadConfig(nk, nv, dk, dk)
        self.lengths = list(lengths)
        batch = len(lengths)
        self.offsets = [0]
        for n in lengths:
            self.offsets.append(self.offsets[-1] + n)
        conv = self.cfg.conv_dim

        def held(x):  # values the activation dtype holds exactly, as float32
            return x.to(dtype).float()

        self.qkv = held(2 * torch.rand(self.offsets[-1], conv, generator=g) - 1)
        self.weight = 1.2 * torch.rand(conv, width, generator=g) - 0.6
        self.bias = 0.6 * torch.rand(conv, generator=g) - 0.3 if bias else None
        rows = pool_rows if pool_rows is not None else batch + 2
        self.slots = list(slots) if slots is not None else [rows - 1 - b for b in range(batch)]
        self.state0 = held(2 * torch.rand(rows, conv, width - 1, generator=g) - 1)

    def t(self, x, dtype=None):
        return x.to(device=self.device, dtype=dtype if dtype is not None else x.dtype)

    def idx(self, values):
        return torch.tensor(values, dtype=torch.int32, device=self.device)

    def inputs(self):
        """qkv (the activation dtype), weight, bias (or None), row_offsets, state_slots."""
        bias = self.t(self.bias) if self.bias is not None else None
        return (self.t(self.qkv, self.dtype), self.t(self.weight), bias, self.idx(self.offsets),
                self.idx(self.slots))

    def conv_state(self):
        return self.t(self.state0.clone(), self.dtype)

    def out(self, dtype=torch.float32, tokens=None):
        tokens = self.qkv.shape[0] if tokens is None else tokens
        return torch.full((tokens, self.cfg.conv_dim), float("nan"), dtype=dtype,
                          device=self.device)

    def conv_ring(self, ring_len, rows=None, pad=3):
        """[rows, RING_LEN, conv_dim + pad] filled with -7 (a value no input has)."""
        rows = rows if rows is not None else len(self.lengths) + 1
        return torch.full((rows, ring_len, self.cfg.conv_dim + pad), -7.0, dtype=self.dtype,
                          device=self.device)


def conv_reference(cp):
    """float64 conv of problem cp: (out [tokens, conv_dim], conv state pool after).

    Channel c sees h = (its conv state row, oldest first, then the sequence's inputs);
    token p gets acc = bias[c] + sum_j weight[c, j] * h[p + j] and out = acc / (1 + exp(-acc)).
    The row keeps the last W-1 entries of h."""
    x, w = cp.qkv.double(), cp.weight.double()
    k = cp.width - 1
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


def conv_fwd_args(cp):
    qkv, weight, bias, off, slots = cp.inputs()
    return dict(cfg=cp.cfg, qkv=qkv, weight=weight, bias=bias, row_offsets=off,
                state_slots=slots, conv_state=cp.conv_state(), out=cp.out())


def conv_verify_args(cp, ring_len=4):
    a = conv_fwd_args(cp)
    a.update(ring_slots=cp.idx(list(range(len(cp.lengths)))), conv_ring=cp.conv_ring(ring_len))
    return a


def fold_conv_args(p, ring_len=4, width=4, dtype=torch.float32):
    """fold_args(p) with conv pools of p's rows and ring rows."""
    a = fold_args(p, ring_len)
    conv = p.cfg.conv_dim
    a.update(conv_state=torch.zeros(p.state0.shape[0], conv, width - 1, dtype=dtype,
                                    device=p.device),
             conv_ring=torch.zeros(a["ring"].shape[0], ring_len, conv, dtype=dtype,
                                   device=p.device))
    return a


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


# ---------------------------------------------------------------------------
# Padding rows: -1 (gdn.pad_slot) in an int32 index tensor skips the row

PAD = -1
# (length, state slot, ring slot): padding rows first, in the middle and last, by the state slot,
# the ring slot or both, empty and with tokens (19 > RING_LEN: it would commit state row 2, and
# is longer than a chunk). The forward looks only at the state slot.
PAD_ROWS = [(2, PAD, PAD), (3, 6, 0), (4, PAD, 5), (20, 1, 1), (19, 2, PAD), (4, 4, 2),
            (3, 7, PAD), (0, 0, 4), (1, 3, 3), (1, PAD, 0)]
PAD_RING_LEN = 4
# Accepted tokens: all but one of a recording row; a committed row's length (not folded).
PAD_ACCEPTED = [n if n > PAD_RING_LEN else max(n - 1, 0) for n, _, _ in PAD_ROWS]


def test_pad_slot_is_minus_one():
    assert gdn.pad_slot == -1


def padding_split(p, with_ring):
    """The real rows of PAD_ROWS: (rows, token indices on p's device, their row offsets)."""
    keep = [b for b, r in enumerate(PAD_ROWS) if r[1] != PAD and not (with_ring and r[2] == PAD)]
    sel = [t for b in keep for t in range(p.offsets[b], p.offsets[b + 1])]
    offs = [0]
    for b in keep:
        offs.append(offs[-1] + p.lengths[b])
    return keep, torch.tensor(sel, dtype=torch.long, device=p.device), offs


def assert_padded_out(out, expected, sel, fill):
    """The real rows' tokens of `out` equal `expected`, the padding rows' tokens still `fill`."""
    real = torch.zeros(out.shape[0], dtype=torch.bool, device=out.device)
    real[sel] = True
    assert bits_equal(out[sel], expected), "a real row's out differs from the unpadded call's"
    assert bits_equal(out[~real], fill[~real]), "a padding row's out was written"


@pytest.mark.parametrize("checking", [False, True])
def test_padding_rows_are_skipped(device, checking):
    """-1 in state_slots, ring_slots and the fold tables: no crash; every pool equals, bit for
    bit, the call without the padding rows, and their out rows keep their NaN fill. The index
    checking mode accepts -1."""
    lengths = [r[0] for r in PAD_ROWS]
    p = Problem(device, lengths=lengths, pool_rows=8, seed=50)
    qkv, decay, beta, off, _ = p.inputs()
    slots, rslots = p.idx([r[1] for r in PAD_ROWS]), p.idx([r[2] for r in PAD_ROWS])
    accepted = PAD_ACCEPTED
    state_f, out_f = p.state(), p.out()
    state_v, out_v, ring = p.state(), p.out(), p.ring(PAD_RING_LEN, rows=6)
    gdn.set_index_checking(checking)
    try:
        gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, state_f, out_f)
        gdn.recurrence_verify_ring(p.cfg, qkv, decay, beta, off, slots, state_v, out_v, rslots,
                                   ring)
        state_v0, ring_v = state_v.clone(), ring.clone()  # after verify, before the fold
        gdn.state_fold(p.cfg, p.idx([[r[1] for r in PAD_ROWS]]), state_v,
                       p.idx([[r[2] for r in PAD_ROWS]]), ring, p.idx(accepted))
    finally:
        gdn.set_index_checking(False)
    sync(device)

    # The same calls without the padding rows.
    keep, sel, offs = padding_split(p, with_ring=False)
    e_state, e_out = p.state(), torch.empty(len(sel), p.cfg.value_dim, device=device)
    gdn.recurrence_fwd(p.cfg, qkv[sel], decay[sel], beta[sel], p.idx(offs),
                       p.idx([PAD_ROWS[b][1] for b in keep]), e_state, e_out)
    sync(device)
    assert bits_equal(state_f, e_state)
    assert_padded_out(out_f, e_out, sel, p.out())

    keep, sel, offs = padding_split(p, with_ring=True)
    e_state, e_out = p.state(), torch.empty(len(sel), p.cfg.value_dim, device=device)
    e_ring = p.ring(PAD_RING_LEN, rows=6)
    gdn.recurrence_verify_ring(p.cfg, qkv[sel], decay[sel], beta[sel], p.idx(offs),
                               p.idx([PAD_ROWS[b][1] for b in keep]), e_state, e_out,
                               p.idx([PAD_ROWS[b][2] for b in keep]), e_ring)
    sync(device)
    assert bits_equal(state_v0, e_state)
    assert bits_equal(ring_v, e_ring)
    assert_padded_out(out_v, e_out, sel, p.out())
    gdn.state_fold(p.cfg, p.idx([[PAD_ROWS[b][1] for b in keep]]), e_state,
                   p.idx([[PAD_ROWS[b][2] for b in keep]]), e_ring,
                   p.idx([accepted[b] for b in keep]))
    sync(device)
    assert bits_equal(state_v, e_state), "fold with padding entries != fold without them"
    assert not bits_equal(state_v, state_v0)  # the fold did fold the real rows


@pytest.mark.parametrize("checking", [False, True])
def test_conv_padding_rows_are_skipped(device, checking):
    """conv1d_fwd, conv1d_verify_ring and the fold of the conv states with -1 slots: the conv
    pools equal the calls without the padding rows, their out rows keep their NaN fill."""
    lengths = [r[0] for r in PAD_ROWS]
    cp = ConvProblem(device, lengths=lengths, slots=[r[1] for r in PAD_ROWS], pool_rows=8,
                     seed=51)
    rp = Problem(device, nk=1, nv=2, dk=64, lengths=lengths, pool_rows=8, seed=52)
    qkv, weight, bias, off, slots = cp.inputs()
    rslots = cp.idx([r[2] for r in PAD_ROWS])
    accepted = cp.idx(PAD_ACCEPTED)
    cs_f, y_f = cp.conv_state(), cp.out()
    cs_v, y_v, cring = cp.conv_state(), cp.out(), cp.conv_ring(PAD_RING_LEN, rows=6)
    state, ring = rp.state(), rp.ring(PAD_RING_LEN, rows=6)
    gdn.set_index_checking(checking)
    try:
        gdn.conv1d_fwd(cp.cfg, qkv, weight, bias, off, slots, cs_f, y_f)
        gdn.conv1d_verify_ring(cp.cfg, qkv, weight, bias, off, slots, cs_v, y_v, rslots, cring)
        cs_v0, cring_v = cs_v.clone(), cring.clone()
        gdn.state_fold(cp.cfg, cp.idx([[r[1] for r in PAD_ROWS]]), state,
                       cp.idx([[r[2] for r in PAD_ROWS]]), ring, accepted, conv_state=cs_v,
                       conv_ring=cring)
    finally:
        gdn.set_index_checking(False)
    sync(device)

    keep, sel, offs = padding_split(cp, with_ring=False)
    e_cs, e_y = cp.conv_state(), cp.out(tokens=len(sel))
    gdn.conv1d_fwd(cp.cfg, qkv[sel], weight, bias, cp.idx(offs),
                   cp.idx([PAD_ROWS[b][1] for b in keep]), e_cs, e_y)
    sync(device)
    assert bits_equal(cs_f, e_cs)
    assert_padded_out(y_f, e_y, sel, cp.out())

    keep, sel, offs = padding_split(cp, with_ring=True)
    e_cs, e_y, e_ring = cp.conv_state(), cp.out(tokens=len(sel)), cp.conv_ring(PAD_RING_LEN, 6)
    gdn.conv1d_verify_ring(cp.cfg, qkv[sel], weight, bias, cp.idx(offs),
                           cp.idx([PAD_ROWS[b][1] for b in keep]), e_cs, e_y,
                           cp.idx([PAD_ROWS[b][2] for b in keep]), e_ring)
    sync(device)
    assert bits_equal(cs_v0, e_cs)
    assert bits_equal(cring_v, e_ring)
    assert_padded_out(y_v, e_y, sel, cp.out())
    e_state = rp.state()
    gdn.state_fold(cp.cfg, cp.idx([[PAD_ROWS[b][1] for b in keep]]), e_state,
                   cp.idx([[PAD_ROWS[b][2] for b in keep]]), rp.ring(PAD_RING_LEN, rows=6),
                   cp.idx([PAD_ACCEPTED[b] for b in keep]), conv_state=e_cs,
                   conv_ring=e_ring)
    sync(device)
    assert bits_equal(cs_v, e_cs), "conv fold with padding entries != conv fold without them"
    assert not bits_equal(cs_v, cs_v0)  # the fold did commit the real rows


def test_checking_rejects_other_negative_and_large_indices(device):
    """With index checking on, -1 passes and every other out-of-range index raises, naming the
    argument."""
    p = Problem(device)
    a, v, f = fwd_args(p), verify_args(p), fold_args(p)
    rows, ring_rows = a["state"].shape[0], v["ring"].shape[0]
    gdn.set_index_checking(True)
    try:
        gdn.recurrence_fwd(**dict(a, state_slots=p.idx([PAD, 4, PAD, 2])))
        for bad in (-2, rows, 2**31 - 1):
            expect_error(gdn.InvalidArgument, "state_slots", gdn.recurrence_fwd, a,
                         state_slots=p.idx([PAD, 4, bad, 2]))
            expect_error(gdn.InvalidArgument, "state_slots", gdn.recurrence_verify_ring, v,
                         state_slots=p.idx([PAD, 4, bad, 2]))
        for bad in (-2, ring_rows):
            expect_error(gdn.InvalidArgument, "ring_slots", gdn.recurrence_verify_ring, v,
                         ring_slots=p.idx([bad, 1, PAD, 3]))  # row 0 records, row 2 commits
            expect_error(gdn.InvalidArgument, "ring_rows", gdn.state_fold, f,
                         ring_rows=p.idx([[PAD, 1, bad, 3]]))
            expect_error(gdn.InvalidArgument, "state_rows", gdn.state_fold, f,
                         state_rows=p.idx([[PAD, 4, -2, 2]]))
    finally:
        gdn.set_index_checking(False)


# ---------------------------------------------------------------------------
# Lazy commit: the lazy flow against the eager flow, bit for bit


@pytest.mark.parametrize("state_dtype", [torch.float32, torch.bfloat16])
def test_lazy_flow_matches_eager(device, state_dtype):
    """Random windows, acceptances and flush points; a padding row. Every output (recurrence
    and conv), and after each flush the flushed states (recurrent and conv), equal the eager
    flow's (verify_ring, then state_fold with the conv pools, every step)."""
    g = torch.Generator().manual_seed(3)
    capacity, window, batch, width = 8, 4, 3, 4
    cfg = gdn.HeadConfig(2, 4, 64, 64)
    conv_dim = cfg.conv_dim
    rec = gdn.ring_record_elements(64, 64, 2)
    rows = batch + 1
    slots = [2, 0, -1]  # the last row is padding
    rrows = [1, 3, -1]
    idx = lambda v: torch.tensor(v, dtype=torch.int32, device=device)  # noqa: E731
    state0 = (0.1 * torch.randn(rows, 4, 64, 64, generator=g)).to(state_dtype)
    conv0 = torch.randn(rows, conv_dim, width - 1, generator=g)
    se, sl = state0.to(device), state0.clone().to(device)
    ce, cl = conv0.to(device), conv0.clone().to(device)
    ring = torch.zeros(rows, 2, window, rec, device=device)
    conv_ring = torch.zeros(rows, window, conv_dim, device=device)
    history = torch.zeros(rows, 2, capacity, rec, device=device)
    conv_history = torch.zeros(rows, capacity, conv_dim, device=device)
    ledger = torch.zeros(rows, gdn.lazy_ledger_words(capacity), dtype=torch.int32, device=device)
    weight = (0.5 * torch.randn(conv_dim, width, generator=g)).to(device)
    bias = (0.1 * torch.randn(conv_dim, generator=g)).to(device)
    table = lambda v: torch.tensor([v], dtype=torch.int32, device=device)  # noqa: E731
    flushes = 0
    for step in range(40):
        lens = [int(torch.randint(1, window + 1, (1,), generator=g)) for _ in range(batch)]
        offs = [0]
        for n in lens:
            offs.append(offs[-1] + n)
        tokens = offs[-1]
        x = torch.randn(tokens, conv_dim, generator=g).to(device)
        decay = (0.8 + 0.2 * torch.rand(tokens, 4, generator=g)).to(device)
        beta = torch.rand(tokens, 4, generator=g).to(device)
        y_e = torch.zeros(tokens, conv_dim, device=device)
        y_l = torch.zeros(tokens, conv_dim, device=device)
        gdn.conv1d_verify_ring(cfg, x, weight, bias, idx(offs), idx(slots), ce, y_e, idx(rrows),
                               conv_ring)
        gdn.conv1d_verify_lazy(cfg, x, weight, bias, idx(offs), idx(slots), cl, y_l, idx(rrows),
                               conv_history, history, ledger)
        o_e = torch.zeros(tokens, cfg.value_dim, device=device)
        o_l = torch.zeros(tokens, cfg.value_dim, device=device)
        gdn.recurrence_verify_ring(cfg, y_e, decay, beta, idx(offs), idx(slots), se, o_e,
                                   idx(rrows), ring)
        gdn.recurrence_verify_lazy(cfg, y_l, decay, beta, idx(offs), idx(slots), sl, o_l,
                                   idx(rrows), history, ledger)
        sync(device)
        assert bits_equal(y_e, y_l), f"step {step}: conv outputs differ"
        assert bits_equal(o_e, o_l), f"step {step}: outputs differ"
        acc = [int(torch.randint(0, n + 1, (1,), generator=g)) for n in lens]
        gdn.state_fold(cfg, table(slots), se, table(rrows), ring, idx(acc), conv_state=ce,
                       conv_ring=conv_ring)
        gdn.lazy_accept(table(rrows), history, ledger, idx(acc))
        if step % 7 == 6 or step == 39:
            gdn.state_flush(cfg, table(slots), sl, table(rrows), history, ledger, conv_state=cl,
                            conv_history=conv_history)
            sync(device)
            flushes += 1
            assert bits_equal(se, sl), f"step {step}: flushed states differ"
            assert bits_equal(ce, cl), f"step {step}: flushed conv states differ"
            assert int(ledger[:, 0].abs().sum()) == 0
    assert flushes == 6


def test_lazy_drop_and_bad_ledger(device):
    cfg = gdn.HeadConfig(2, 4, 64, 64)
    rec = gdn.ring_record_elements(64, 64, 2)
    history = torch.zeros(2, 2, 8, rec, device=device)
    ledger = torch.zeros(2, gdn.lazy_ledger_words(8), dtype=torch.int32, device=device)
    rows = torch.tensor([[0, 1]], dtype=torch.int32, device=device)
    gdn.lazy_accept(rows, history, ledger, torch.tensor([2, 0], dtype=torch.int32, device=device))
    sync(device)
    assert ledger[0, 0].item() == 2 and ledger[1, 0].item() == 0
    gdn.lazy_drop(rows, history, ledger)
    sync(device)
    assert int(ledger.abs().sum()) == 0
    with pytest.raises(gdn.InvalidArgument, match="lazy.ledger"):
        gdn.lazy_accept(rows, history, ledger[:, :1].contiguous(),
                        torch.tensor([1, 1], dtype=torch.int32, device=device))
    with pytest.raises(TypeError, match="ledger"):
        gdn.lazy_drop(rows, history, ledger.float())
    p = Problem(device, lengths=(2,))
    qkv, decay, beta, off, slots = p.inputs()
    with pytest.raises(ValueError, match="history"):
        gdn.recurrence_verify_lazy(p.cfg, qkv, decay, beta, off, slots, p.state(), p.out(),
                                   slots, history[0], ledger)


# ---------------------------------------------------------------------------
# torch custom operators (gdn.ops, torch >= 2.4)

HAS_CUSTOM_OPS = hasattr(torch.library, "register_fake")
needs_custom_ops = pytest.mark.skipif(not HAS_CUSTOM_OPS,
                                      reason="torch < 2.4 has no torch.library.register_fake")


def test_ops_module_on_an_old_torch_is_an_import_error():
    if HAS_CUSTOM_OPS:
        pytest.skip("this torch has custom operators")
    with pytest.raises(ImportError, match=r"torch >= 2\.4") as e:
        import gdn.ops  # noqa: F401
    assert torch.__version__ in str(e.value)


@needs_custom_ops
def test_operators_take_the_functions_arguments():
    """Every operator's schema lists its function's arguments in order (head for cfg, no
    stream), and marks as written at least the tensors the call's documentation says it
    writes."""
    import inspect

    import gdn.ops
    writes = {"state", "out", "ring", "history", "ledger", "conv_state", "conv_ring",
              "conv_history"}
    for name in gdn.ops.OPERATORS:
        schema = getattr(torch.ops.gdn, name).default._schema
        names = ["cfg" if a.name == "head" else a.name for a in schema.arguments]
        params = [n for n in inspect.signature(getattr(gdn, name)).parameters if n != "stream"]
        assert names == params, name
        written = {a.name for a in schema.arguments
                   if a.alias_info is not None and a.alias_info.is_write}
        # The inputs that a call only reads: the ring of a fold, the history and ledger of
        # the conv's lazy verify, the history of accept, drop and flush.
        read_only = {"state_fold": {"ring", "conv_ring"},
                     "conv1d_verify_lazy": {"history", "ledger"}, "lazy_accept": {"history"},
                     "lazy_drop": {"history"},
                     "state_flush": {"history", "conv_history"}}.get(name, set())
        assert written == (writes & set(params)) - read_only, name
    p = Problem("cpu", lengths=(1,))
    with pytest.raises(ValueError, match="'head'"):
        torch.ops.gdn.recurrence_fwd([2, 4, 64], *p.inputs(), p.state(), p.out())


@needs_custom_ops
def test_operators_give_the_functions_bits(device):
    """verify, fold and a lazy step through torch.ops.gdn equal the gdn functions bit for
    bit; torch.library.opcheck finds the schemas (the tensors written) and the fake
    implementations right."""
    import gdn.ops
    p = Problem(device, lengths=(3, 0, 5, 1))
    head = gdn.ops.head_of(p.cfg)
    a, b = verify_args(p), verify_args(p)
    gdn.recurrence_verify_ring(**a)
    del b["cfg"]
    torch.ops.gdn.recurrence_verify_ring(head, **b)
    sync(device)
    for name in ("out", "ring", "state"):
        assert bits_equal(a[name], b[name]), name
    f, h = fold_args(p), fold_args(p)
    f["ring"], h["ring"] = a["ring"].clone(), a["ring"].clone()
    # Each row's recorded window accepted whole; empty rows and the committed row (5 > 4) fold none.
    f["num_accepted"] = h["num_accepted"] = p.idx([n if n <= 4 else 0 for n in p.lengths])
    gdn.state_fold(**f)
    del h["cfg"]
    torch.ops.gdn.state_fold(head, **h)
    sync(device)
    assert bits_equal(f["state"], h["state"])
    # A lazy step: verify into a history, accept, flush.
    cfg = p.cfg
    rec = gdn.ring_record_elements(cfg.key_head_dim, cfg.value_head_dim, cfg.group_size)
    states = []
    for ops in (False, True):
        c = verify_args(p)
        history = torch.zeros(5, cfg.num_key_heads, 8, rec, device=device)
        ledger = torch.zeros(5, gdn.lazy_ledger_words(8), dtype=torch.int32, device=device)
        rows, rrows = p.idx([p.slots]), c["ring_slots"].view(1, -1)
        acc = p.idx([2, 0, 3, 1])
        lazy = (c["qkv"], c["decay"], c["beta"], c["row_offsets"], c["state_slots"], c["state"],
                c["out"], c["ring_slots"], history, ledger)
        if ops:
            torch.ops.gdn.recurrence_verify_lazy(head, *lazy)
            torch.ops.gdn.lazy_accept(rrows, history, ledger, acc)
            torch.ops.gdn.state_flush(head, rows, c["state"], rrows, history, ledger)
        else:
            gdn.recurrence_verify_lazy(cfg, *lazy)
            gdn.lazy_accept(rrows, history, ledger, acc)
            gdn.state_flush(cfg, rows, c["state"], rrows, history, ledger)
        sync(device)
        states.append((c["out"], c["state"]))
    assert bits_equal(states[0][0], states[1][0]) and bits_equal(states[0][1], states[1][1])
    v = verify_args(p)
    del v["cfg"]
    for op, args in ((torch.ops.gdn.recurrence_verify_ring.default, (head, *v.values())),
                     (torch.ops.gdn.state_fold.default, (head, *h.values()))):
        torch.library.opcheck(op, args, test_utils=("test_schema", "test_faketensor"))
