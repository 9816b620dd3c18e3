"""gdn's Python entry on CPU tensors (Kokkos's host space). The shared cases are the
cases_*.py modules, one per call family (helpers in cases_support.py); this file collects
them all and adds the CPU's own."""

import numpy as np
import pytest
import torch

import gdn
# The shared cases, each family's tests run with this file's `device` fixture.
from cases_binding import *  # noqa: F401,F403
from cases_conv import *  # noqa: F401,F403
from cases_fla import *  # noqa: F401,F403
from cases_fold import *  # noqa: F401,F403
from cases_hf import *  # noqa: F401,F403
from cases_lazy import *  # noqa: F401,F403
from cases_ops import *  # noqa: F401,F403
from cases_padding import *  # noqa: F401,F403
from cases_prefill import *  # noqa: F401,F403
from cases_recurrence import *  # noqa: F401,F403
from cases_support import Problem, assert_close_to_reference


@pytest.fixture
def device():
    return "cpu"


def test_numpy_arrays_speak_dlpack():
    """Any DLPack producer works: numpy arrays (uint32 indices) give the same bits as torch."""
    p = Problem("cpu", lengths=(3, 4))
    qkv, decay, beta, off, slots = p.inputs()
    state_t, out_t = p.state(), p.out()
    gdn.recurrence_fwd(p.cfg, qkv, decay, beta, off, slots, state_t, out_t)
    state_n = p.state0.numpy().copy()
    out_n = np.zeros((qkv.shape[0], p.cfg.value_dim), dtype=np.float32)
    gdn.recurrence_fwd(p.cfg, qkv.numpy(), decay.numpy(), beta.numpy(),
                       np.asarray(p.offsets, dtype=np.uint32), np.asarray(p.slots, dtype=np.uint32),
                       state_n, out_n)
    assert np.array_equal(out_n.view(np.int32), out_t.numpy().view(np.int32))
    assert np.array_equal(state_n.view(np.int32), state_t.numpy().view(np.int32))
    assert_close_to_reference(torch.from_numpy(out_n), torch.from_numpy(state_n), p)


def test_numpy_array_refuses_a_stream():
    p = Problem("cpu", lengths=(2,))
    qkv, decay, beta, off, slots = p.inputs()
    with pytest.raises(ValueError, match="'qkv'.*CUDA"):
        gdn.recurrence_fwd(p.cfg, qkv.numpy(), decay, beta, off, slots, p.state(), p.out(),
                           stream=12345)


def test_readme_example():
    """The speculative-decoding step of python/README.md runs (on CPU here)."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text.split("## One speculative-decoding step", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "gdn.state_fold" in code and len(code.strip().splitlines()) <= 16
    scope = {}
    exec(compile(code, "python/README.md", "exec"), scope)
    state, before = scope["state"], torch.zeros_like(scope["state"])
    assert not torch.equal(state, before)  # the fold committed the accepted tokens
    assert torch.isfinite(state).all()


def test_readme_conv_example():
    """The conv example of python/README.md runs; the fold left in every conv state row the
    last W-1 accepted pre-conv inputs."""
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    section = text.split("## The conv1d in front of the recurrence", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "conv_state=conv_state" in code
    scope = {}
    exec(compile(code, "python/README.md", "exec"), scope)
    conv_state, projected, state = scope["conv_state"], scope["projected"], scope["state"]
    T, W, C = scope["T"], scope["W"], scope["C"]
    for b, n in enumerate([1, 4, 2]):
        history = torch.cat([torch.zeros(W - 1, C), projected[b * T:b * T + n]])
        assert torch.equal(conv_state[b], history[-(W - 1):].t())
    assert not torch.equal(state, torch.zeros_like(state))
    assert torch.isfinite(scope["qkv"]).all()
