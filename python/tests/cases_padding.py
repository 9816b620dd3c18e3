"""Padding rows: -1 (gdn.pad_slot) in an int32 index tensor skips the row in every call (forward,
verify, fold, the conv calls), with index checking off and on; every other out-of-range index
is rejected.
"""

import pytest
import torch

import gdn
from cases_support import (ConvProblem, Problem, bits_equal, expect_error, fold_args, fwd_args,
                           sync, verify_args)


PAD = -1
# (length, state slot, ring slot): padding rows first, in the middle and last, by the state slot,
# the ring slot or both, empty and with tokens (19 > RING_LEN: it would commit state row 2, and
# is longer than a staging pass of 16 tokens). The forward looks only at the state slot.
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


def test_out_of_range_indices_are_skipped_and_counted(device):
    """With the checking mode off, a state slot past the pool (7 for a pool of 3 rows), a
    negative one and a ring slot past the ring neither crash nor write: the other rows get the
    bits of the call without those rows, the pools' other rows are untouched, and
    gdn.skipped_rows counts each skipped row once."""
    p = Problem(device, lengths=(2, 3, 1, 4), seed=17)
    a, v, f = fwd_args(p), verify_args(p), fold_args(p)
    kind = "cuda" if device.startswith("cuda") else "cpu"
    gdn.skipped_rows(kind, reset=True)
    for bad in (7, -2):
        s_bad = a["state"].clone()
        o_bad = torch.full_like(a["out"], float("nan"))
        gdn.recurrence_fwd(**dict(a, state_slots=p.idx([0, bad, 2, 1]), state=s_bad, out=o_bad))
        # The same call with the bad row made a padding row: the bits to expect.
        s_pad = a["state"].clone()
        o_pad = torch.full_like(a["out"], float("nan"))
        gdn.recurrence_fwd(**dict(a, state_slots=p.idx([0, PAD, 2, 1]), state=s_pad, out=o_pad))
        sync(device)
        assert bits_equal(s_bad, s_pad) and bits_equal(o_bad, o_pad)
    assert gdn.skipped_rows(kind) == 2
    ring = v["ring"].clone()
    gdn.recurrence_verify_ring(**dict(v, ring_slots=p.idx([0, 1, ring.shape[0] + 5, 3]),
                                      ring=ring))
    assert gdn.skipped_rows(kind, reset=True) == 3
    assert gdn.skipped_rows(kind) == 0
    gdn.state_fold(**dict(f, state_rows=p.idx([[0, 1, 2, 99]])))
    assert gdn.skipped_rows(kind) == 1
    with pytest.raises(ValueError, match="device"):
        gdn.skipped_rows("tpu")
