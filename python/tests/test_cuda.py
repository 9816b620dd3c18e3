"""gdn's Python entry on CUDA tensors (Kokkos::Cuda on the caller's stream).

Skipped where torch has no CUDA device. Besides the shared cases (the cases_*.py
modules, one per call family): device mismatches, explicit streams, and verify + fold
captured in a torch.cuda.CUDAGraph and replayed with new inputs, also with padding rows (-1),
a forward over long rows captured and replayed,
a lazy decode loop (verify_lazy + lazy_accept) replayed from one capture, and (torch >= 2.4)
a module calling torch.ops.gdn verify and fold compiled with torch.compile(fullgraph=True),
then captured in a CUDA graph.
"""

import pytest
import torch

import gdn

if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
if not gdn.has_cuda:
    pytest.fail("torch has a CUDA device but this gdn module was built without CUDA",
                pytrace=False)

# The shared cases, each family's tests run with this file's `device` fixture.
from cases_binding import *  # noqa: E402,F401,F403
from cases_conv import *  # noqa: E402,F401,F403
from cases_fla import *  # noqa: E402,F401,F403
from cases_fold import *  # noqa: E402,F401,F403
from cases_hf import *  # noqa: E402,F401,F403
from cases_lazy import *  # noqa: E402,F401,F403
from cases_ops import *  # noqa: E402,F401,F403
from cases_ops import needs_custom_ops  # noqa: E402
from cases_padding import *  # noqa: E402,F401,F403
from cases_prefill import *  # noqa: E402,F401,F403
from cases_recurrence import *  # noqa: E402,F401,F403
from cases_support import (  # noqa: E402
    ConvProblem, Problem, bits_equal, conv_verify_args, expect_error, fold_args, fold_conv_args,
    fwd_args, reference, rel_err, verify_args)


@pytest.fixture
def device():
    return "cuda"


def capture_verify_fold(cfg, qkv, decay, beta, off, slots, state, out, ring_slots, ring,
                        state_rows, ring_rows, accepted):
    """A CUDA graph of one verify and one fold on these tensors. Eager calls
    on copies come first (the kernels' one-time setup), then the capture on a
    stream of its own."""
    gdn.recurrence_verify_ring(cfg, qkv, decay, beta, off, slots, state.clone(), out.clone(),
                               ring_slots, ring.clone())
    gdn.state_fold(cfg, state_rows, state.clone(), ring_rows, ring.clone(), accepted)
    torch.cuda.synchronize()
    capture_stream = torch.cuda.Stream()
    gdn.prepare_stream(capture_stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=capture_stream):
        gdn.recurrence_verify_ring(cfg, qkv, decay, beta, off, slots, state, out, ring_slots, ring)
        gdn.state_fold(cfg, state_rows, state, ring_rows, ring, accepted)
    return graph


def test_cpu_tensor_in_a_cuda_call_is_a_value_error():
    p = Problem("cuda")
    a = verify_args(p)
    for name in ("decay", "state_slots", "state", "out", "ring"):
        e = expect_error(ValueError, name, gdn.recurrence_verify_ring, a, **{name: a[name].cpu()})
        assert "cuda" in str(e).lower() and "cpu" in str(e).lower()
    b = fold_args(p)
    for name in ("state_rows", "ring", "num_accepted"):
        expect_error(ValueError, name, gdn.state_fold, b, **{name: b[name].cpu()})
    c = conv_verify_args(ConvProblem("cuda"))
    for name in ("weight", "bias", "conv_state", "out", "conv_ring"):
        expect_error(ValueError, name, gdn.conv1d_verify_ring, c, **{name: c[name].cpu()})
    d = fold_conv_args(p)
    for name in ("conv_state", "conv_ring"):
        expect_error(ValueError, name, gdn.state_fold, d, **{name: d[name].cpu()})


def test_cuda_tensor_in_a_cpu_call_is_a_value_error():
    p = Problem("cpu")
    a = fwd_args(p)
    expect_error(ValueError, "state", gdn.recurrence_fwd, a, state=a["state"].cuda())


def test_runs_on_the_current_and_on_an_explicit_stream():
    p = Problem("cuda", lengths=(5, 3))
    qkv, decay, beta, off, slots = p.inputs()
    s0, o0 = p.state(), p.out()
    gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, s0, o0)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    s1, o1 = p.state(), p.out()
    s2, o2 = p.state(), p.out()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):  # the wrapper reads this stream
        gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, s1, o1)
    gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, s2, o2, stream=side.cuda_stream)
    side.synchronize()
    assert bits_equal(o0, o1) and bits_equal(s0, s1)
    assert bits_equal(o0, o2) and bits_equal(s0, s2)
    assert rel_err(o0, reference(p)[0]) <= 1e-4


def test_first_use_of_a_stream_inside_a_capture_is_an_error():
    p = Problem("cuda", lengths=(2,))
    qkv, decay, beta, off, slots = p.inputs()
    state, out = p.state(), p.out()
    fresh = torch.cuda.Stream()
    g = torch.cuda.CUDAGraph()
    with pytest.raises(RuntimeError, match="prepare_stream"):
        with torch.cuda.graph(g, stream=fresh):
            gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, state, out)


def test_long_rows_forward_in_a_cuda_graph():
    """A forward over long rows (it allocates nothing), captured once and replayed with new
    inputs: the bits of eager calls."""
    lengths = [300, 17, 64]
    base = Problem("cuda", nk=2, nv=4, dk=128, lengths=lengths, seed=7)
    cfg = base.cfg
    qkv, decay, beta, off, slots = base.inputs()
    state, out = base.state(), base.out()
    gdn.recurrence_fwd(cfg, qkv, decay, beta, off, slots, state.clone(), out.clone())
    torch.cuda.synchronize()
    capture_stream = torch.cuda.Stream()
    gdn.prepare_stream(capture_stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=capture_stream):
        gdn.recurrence_fwd(cfg, qkv, decay, beta, off, slots, state, out)
    for step in range(2):
        p = Problem("cuda", nk=2, nv=4, dk=128, lengths=lengths, seed=200 + step)
        qkv.copy_(p.qkv)
        decay.copy_(p.decay)
        beta.copy_(p.beta)
        state.copy_(p.state0)
        graph.replay()
        e_state, e_out = p.state(), p.out()
        q2, d2, b2, off2, slots2 = p.inputs()
        gdn.recurrence_fwd(cfg, q2, d2, b2, off2, slots2, e_state, e_out)
        torch.cuda.synchronize()
        assert bits_equal(out, e_out) and bits_equal(state, e_state)
        assert rel_err(out, reference(p)[0]) <= 1e-4


def test_verify_and_fold_in_a_cuda_graph():
    """verify + fold captured once, replayed with new inputs: the same bits as eager calls."""
    ring_len = 4
    lengths = [4, 2, 4]
    base = Problem("cuda", lengths=lengths, seed=1)
    cfg = base.cfg
    batch = len(lengths)
    # Static buffers the graph reads and writes.
    qkv, decay, beta, off, slots = base.inputs()
    state = base.state()
    out = base.out()
    ring = base.ring(ring_len)
    ring_slots = base.idx([2, 0, 1])
    state_rows = base.idx([base.slots])
    ring_rows = base.idx([[2, 0, 1]])
    accepted = base.idx([1, 2, 3])

    graph = capture_verify_fold(cfg, qkv, decay, beta, off, slots, state, out, ring_slots, ring,
                                state_rows, ring_rows, accepted)

    for step in range(3):
        p = Problem("cuda", lengths=lengths, seed=100 + step)
        n = [(step + b) % (lengths[b] + 1) for b in range(batch)]
        new_acc = base.idx(n)
        # New inputs into the static buffers, then replay.
        qkv.copy_(p.qkv)
        decay.copy_(p.decay)
        beta.copy_(p.beta)
        state.copy_(p.state0)
        accepted.copy_(new_acc)
        graph.replay()
        # The same calls, eagerly, on fresh tensors.
        e_state, e_out, e_ring = p.state(), p.out(), p.ring(ring_len)
        q2, d2, b2, off2, slots2 = p.inputs()
        gdn.recurrence_verify_ring(cfg, q2, d2, b2, off2, slots2, e_state, e_out, ring_slots,
                                   e_ring)
        gdn.state_fold(cfg, state_rows, e_state, ring_rows, e_ring, new_acc)
        torch.cuda.synchronize()
        assert bits_equal(out, e_out), f"step {step}: out"
        assert bits_equal(state, e_state), f"step {step}: state"
        assert bits_equal(ring, e_ring), f"step {step}: ring"
        assert rel_err(out, reference(p)[0]) <= 1e-4


def test_padding_rows_in_a_cuda_graph():
    """verify + fold captured once for a batch of 4, replayed with rows padded by -1 written
    into the static slot tensors and fold tables between replays (by the state slot, the ring
    slot or both): the bits of eager calls without the padding rows; the padding rows' out rows
    keep their fill."""
    ring_len = 4
    lengths = [4, 2, 4, 3]
    batch = len(lengths)
    base = Problem("cuda", lengths=lengths, seed=2)
    cfg = base.cfg
    real_slots, real_ring = [5, 2, 4, 3], [1, 3, 0, 2]
    accepted_values = [1, 2, 3, 2]
    qkv, decay, beta, off, _ = base.inputs()
    slots, ring_slots = base.idx(real_slots), base.idx(real_ring)
    state, out, ring = base.state(), base.out(), base.ring(ring_len)
    state_rows, ring_rows = base.idx([real_slots]), base.idx([real_ring])
    accepted = base.idx(accepted_values)

    graph = capture_verify_fold(cfg, qkv, decay, beta, off, slots, state, out, ring_slots, ring,
                                state_rows, ring_rows, accepted)

    patterns = [[False, True, False, True], [True, False, False, False],
                [False, False, False, True], [True, True, True, True], [False] * 4]
    for step, pad in enumerate(patterns):
        kind = step % 3  # 0: both indices -1, 1: the state slot only, 2: the ring slot only
        p = Problem("cuda", lengths=lengths, seed=200 + step)
        s = [-1 if pad[b] and kind != 2 else real_slots[b] for b in range(batch)]
        r = [-1 if pad[b] and kind != 1 else real_ring[b] for b in range(batch)]
        qkv.copy_(p.qkv)
        decay.copy_(p.decay)
        beta.copy_(p.beta)
        state.copy_(p.state0)
        ring.fill_(-7.0)
        out.fill_(float("nan"))
        slots.copy_(base.idx(s))
        ring_slots.copy_(base.idx(r))
        state_rows.copy_(base.idx([s]))
        ring_rows.copy_(base.idx([r]))
        graph.replay()

        keep = [b for b in range(batch) if not pad[b]]
        sel = torch.tensor([t for b in keep for t in range(p.offsets[b], p.offsets[b + 1])],
                           dtype=torch.long, device="cuda")
        offs = [0]
        for b in keep:
            offs.append(offs[-1] + lengths[b])
        e_state, e_ring = p.state(), p.ring(ring_len)
        e_out = torch.full((len(sel), cfg.value_dim), float("nan"), device="cuda")
        q2, d2, b2, _, _ = p.inputs()
        gdn.recurrence_verify_ring(cfg, q2[sel], d2[sel], b2[sel], p.idx(offs),
                                   p.idx([real_slots[b] for b in keep]), e_state, e_out,
                                   p.idx([real_ring[b] for b in keep]), e_ring)
        gdn.state_fold(cfg, p.idx([[real_slots[b] for b in keep]]), e_state,
                       p.idx([[real_ring[b] for b in keep]]), e_ring,
                       p.idx([accepted_values[b] for b in keep]))
        torch.cuda.synchronize()
        assert bits_equal(state, e_state), f"step {step}: state"
        assert bits_equal(ring, e_ring), f"step {step}: ring"
        real = torch.zeros(out.shape[0], dtype=torch.bool, device="cuda")
        real[sel] = True
        assert bits_equal(out[sel], e_out), f"step {step}: out of the real rows"
        assert torch.isnan(out[~real]).all(), f"step {step}: a padding row's out was written"


def test_lazy_decode_loop_in_a_cuda_graph():
    """One lazy step (recurrence_verify_lazy + lazy_accept) captured once and replayed over 12
    steps with new inputs and acceptances, the cursors moving on the device only: every step's
    out equals the eager flow's (verify_ring + state_fold, run eagerly beside it), and after a
    flush the states are the eager ones, bit for bit."""
    lengths = [4, 3, 4]
    capacity = 8
    base = Problem("cuda", lengths=lengths, seed=5)
    cfg = base.cfg
    rec = gdn.ring_record_elements(cfg.key_head_dim, cfg.value_head_dim, cfg.group_size)
    qkv, decay, beta, off, slots = base.inputs()
    rows = base.idx([base.slots])
    state_l, state_e = base.state(), base.state()
    out = base.out()
    ring = base.ring(4, rows=len(base.state0))  # ring_slots are the state slots
    history = torch.zeros(len(base.state0), cfg.num_key_heads, capacity, rec, device="cuda")
    ledger = torch.zeros(len(base.state0), gdn.lazy_ledger_words(capacity), dtype=torch.int32,
                         device="cuda")
    accepted = base.idx([1, 1, 1])
    torch.cuda.synchronize()
    capture_stream = torch.cuda.Stream()
    gdn.prepare_stream(capture_stream)
    # The kernels' one-time setup on copies, then the capture.
    gdn.recurrence_verify_lazy(cfg, qkv, decay, beta, off, slots, state_l.clone(), out.clone(),
                               slots, history.clone(), ledger.clone())
    gdn.lazy_accept(rows, history, ledger.clone(), accepted)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=capture_stream):
        gdn.recurrence_verify_lazy(cfg, qkv, decay, beta, off, slots, state_l, out, slots,
                                   history, ledger)
        gdn.lazy_accept(rows, history, ledger, accepted)
    for step in range(12):
        p = Problem("cuda", lengths=lengths, seed=200 + step)
        qkv.copy_(p.qkv)
        decay.copy_(p.decay)
        beta.copy_(p.beta)
        n = [1 + (step * 3 + b) % lengths[b] for b in range(len(lengths))]
        accepted.copy_(base.idx(n))
        graph.replay()
        e_out = p.out()
        gdn.recurrence_verify_ring(cfg, qkv, decay, beta, off, slots, state_e, e_out, slots, ring)
        gdn.state_fold(cfg, rows, state_e, rows, ring, accepted)
        torch.cuda.synchronize()
        assert bits_equal(out, e_out), f"step {step}: out"
    gdn.state_flush(cfg, rows, state_l, rows, history, ledger)
    torch.cuda.synchronize()
    assert bits_equal(state_l, state_e), "flushed states != eager states"
    assert int(ledger[:, 0].abs().sum()) == 0


@needs_custom_ops
def test_compiled_verify_and_fold_in_a_cuda_graph():
    """A module that calls torch.ops.gdn.recurrence_verify_ring and state_fold compiles with
    torch.compile(fullgraph=True) (no graph break), runs, is captured in a CUDA graph and
    replayed over new inputs and acceptances: out, ring and state equal the eager
    functions', bit for bit, every step."""
    import gdn.ops
    lengths = [4, 3, 4]
    base = Problem("cuda", lengths=lengths, seed=7)
    cfg = base.cfg
    head = gdn.ops.head_of(cfg)

    class Step(torch.nn.Module):
        def forward(self, qkv, decay, beta, off, slots, state, out, ring_slots, ring, rows,
                    accepted):
            torch.ops.gdn.recurrence_verify_ring(head, qkv, decay, beta, off, slots, state, out,
                                                 ring_slots, ring)
            torch.ops.gdn.state_fold(head, rows, state, rows, ring, accepted)

    compiled = torch.compile(Step(), fullgraph=True)
    qkv, decay, beta, off, slots = base.inputs()
    rows = base.idx([base.slots])
    state_c, state_e = base.state(), base.state()
    out_c, out_e = base.out(), base.out()
    ring_c, ring_e = base.ring(4, rows=len(base.state0)), base.ring(4, rows=len(base.state0))
    accepted = base.idx([2, 1, 4])

    def eager():
        gdn.recurrence_verify_ring(cfg, qkv, decay, beta, off, slots, state_e, out_e, slots,
                                   ring_e)
        gdn.state_fold(cfg, rows, state_e, rows, ring_e, accepted)

    def same(what):
        torch.cuda.synchronize()
        for name, c, e in (("out", out_c, out_e), ("ring", ring_c, ring_e),
                           ("state", state_c, state_e)):
            assert bits_equal(c, e), f"{what}: {name}"

    compiled(qkv, decay, beta, off, slots, state_c, out_c, slots, ring_c, rows, accepted)
    eager()
    same("compiled call")
    capture_stream = torch.cuda.Stream()
    gdn.prepare_stream(capture_stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=capture_stream):
        compiled(qkv, decay, beta, off, slots, state_c, out_c, slots, ring_c, rows, accepted)
    for step in range(4):
        p = Problem("cuda", lengths=lengths, seed=300 + step)
        qkv.copy_(p.qkv)
        decay.copy_(p.decay)
        beta.copy_(p.beta)
        accepted.copy_(base.idx([1 + (step + b) % n for b, n in enumerate(lengths)]))
        graph.replay()
        eager()
        same(f"replay {step}")
