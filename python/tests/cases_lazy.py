"""Lazy commit: recurrence_verify_lazy, conv1d_verify_lazy, lazy_accept and state_flush against
the eager flow (verify_ring, then state_fold every step), bit for bit; lazy_drop and a bad
ledger.
"""

import pytest
import torch

import gdn
from cases_support import Problem, bits_equal, sync


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
