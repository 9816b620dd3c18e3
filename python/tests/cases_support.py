"""Shared helpers of gdn's Python test cases: the problems, their float64 reference, bit
comparisons, strided layouts, and every call's arguments as a keyword dictionary. The cases
are the cases_*.py modules, one per call family, which test_cpu.py and test_cuda.py collect;
each of those two files supplies the `device` fixture.

The reference is a plain PyTorch float64 loop over tokens with the per-token
mathematics of docs/design.md section 2 (qf, kinv, S <- a*S, kv = S^T k,
u = beta*(v - kv*kinv)*kinv, S += k u^T, out = qf * S^T q). The library
computes the same in float32 in its own (canonical) order, so the two agree
within a tolerance; kernels are compared with each other bit for bit only
where docs/design.md promises it (verify vs forward, fold vs forward, strided vs
dense inputs). The conv1d calls have their own float64 reference
(cases_conv.py's conv_reference: bias plus the W taps, then SiLU) and the same
bit-for-bit comparisons (verify vs forward, fold with the conv pools vs forward).
"""

import math

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
# Strided layouts of the same values


def transposed(x):
    """x's values in a tensor whose memory is the transpose (strides (1, rows))."""
    return x.t().contiguous().t()


def sliced(x, device):
    """x's values inside a larger tensor: every other row, from column 3 on."""
    big = torch.full((2 * x.shape[0] + 1, x.shape[1] + 5), float("nan"), device=device)
    view = big[1::2, 3:3 + x.shape[1]]
    view.copy_(x)
    return view


# ---------------------------------------------------------------------------
# The conv1d's problem


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


# ---------------------------------------------------------------------------
# Each call's arguments as a keyword dictionary, and the check of a rejected call


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


def expect_error(exc, name, fn, args, **changes):
    a = dict(args)
    a.update(changes)
    with pytest.raises(exc) as info:
        fn(**a)
    assert f"'{name}'" in str(info.value), str(info.value)
    return info.value
