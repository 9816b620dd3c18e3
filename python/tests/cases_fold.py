"""Speculative decoding with the ring: recurrence_verify_ring equals the forward, and state_fold
of its records equals the forward over the accepted prefix, bit for bit; a bfloat16 ring and
fold tables in any layout.
"""

import pytest
import torch

import gdn
from cases_support import TOL, Problem, bits_equal, reference, rel_err, sync, transposed


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
