"""recurrence_fwd: shapes and dtypes against the float64 loop,
index dtypes, strided and broadcast inputs (no copies, the same bits as dense
ones), bfloat16 activations, and the raw gates computed in the kernel
(recurrence_fwd_gates, recurrence_verify_ring_gates).
"""

import pytest
import torch

import gdn
from cases_support import (TOL, Problem, assert_close_to_reference, bits_equal, expect_error,
                           fwd_args, reference, rel_err, sliced, sync, transposed)


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
    # is stored); 2^-7 leaves room for the stores of a call.
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
