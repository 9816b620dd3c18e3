"""gdn: the Gated DeltaNet recurrence, verify-with-ring and fold, and the causal conv1d in
front of it, on DLPack tensors.

Every tensor argument may be any object that speaks DLPack (``__dlpack__`` /
``__dlpack_device__``): torch tensors, numpy arrays (CPU), ... No tensor is
copied: the per-token inputs, the conv weights and ``out`` are used with their
strides, the state, ring and conv pools must be dense (C-contiguous). All
tensors of a call live on one device. CPU tensors run on Kokkos's host space (OpenMP) and the call
returns when the work is done; CUDA tensors run on ``stream`` (default: torch's
current stream of the tensors' device) without synchronizing, so the calls can
be captured in a CUDA graph (see ``prepare_stream``).

Shapes (symbols of the C++ API: ``nk``/``nv`` key/value heads, ``Dk``/``Dv``
head dims, ``G = nv // nk``, ``conv_dim = 2*nk*Dk + nv*Dv``):

=============== ========================================= =====================
argument        shape                                     dtype
=============== ========================================= =====================
qkv             [tokens, >= conv_dim], any strides        float32 or bfloat16
decay, beta     [tokens, >= nv], any strides              the dtype of qkv
a, b            [tokens, >= nv], any strides (raw gates)  the dtype of qkv
A_log, dt_bias  [>= nv] (raw gates)                       float32
out             [tokens, >= nv*Dv], any non-overlapping   the dtype of qkv
row_offsets     [B + 1], contiguous                       int32 or uint32
state_slots     [B], contiguous                           int32 or uint32
ring_slots      [B], contiguous                           int32 or uint32
num_accepted    [B], contiguous                           int32 or uint32
state_rows      [L, B]                                    int32 or uint32
ring_rows       [L, B]                                    int32 or uint32
state           [slots, nv, Dk, Dv], contiguous           float32 or bfloat16
ring            [ring_rows, nk, RING_LEN, record_stride]  float32 or bfloat16
weight          [>= conv_dim, W], W in 2..4 (conv)        float32
bias            [>= conv_dim] or None (conv)              float32
conv_state      [slots, conv_dim, W-1], contiguous        the dtype of qkv
conv_ring       [ring_rows, RING_LEN, >= conv_dim], ditto the dtype of qkv
=============== ========================================= =====================

qkv, the gates and out of one call share one activation dtype: float32 or
bfloat16. The arithmetic is float32 either way; a bfloat16 out is rounded to
nearest even. ``recurrence_fwd_gates`` and ``recurrence_verify_ring_gates``
take the raw gates instead of decay and beta and compute, in float32,
``decay = exp(-exp(A_log) * softplus(a + dt_bias))`` (softplus(x) = x above
20) and ``beta = sigmoid(b)`` in the kernel (docs/design.md, section 1).

The conv calls (``conv1d_fwd``, ``conv1d_verify_ring``) read ``qkv`` (float32 or
bfloat16) and write ``out`` ``[tokens, >= conv_dim]`` as float32 or bfloat16
(either, whatever qkv's dtype); ``conv_state`` and ``conv_ring`` keep copies of
qkv's rows and so have its dtype. In ``state_fold`` they share one dtype.

Index tensors are uint32 in the C++ API; int32 tensors (torch before 2.3 has
no uint32) are read as uint32 bit patterns. -1 (``gdn.pad_slot``; 0xFFFFFFFF
in a uint32 tensor) marks a **padding row**, as engines that replay a CUDA
graph of a fixed batch size fill their unused rows: a row whose
``state_slots``, ``ring_slots`` or fold table entry (``state_rows[l, b]``,
``ring_rows[l, b]``) is -1 is skipped whatever its length (its state, ring,
conv state and ``out`` rows are neither read nor written, the other rows get
the bits of the call without it). Any other index outside its pool (a
negative one included) is rejected with a named error by the index checking
mode (``set_index_checking(True)`` or ``GDN_CHECK_INDICES=1``); with the mode
off the kernels skip such a row like a padding row and count it:
``skipped_rows("cpu")`` or ``skipped_rows("cuda")`` returns the count (and
``reset=True`` clears it).

Errors: a wrong dtype, or an object that does not speak DLPack, raises
``TypeError``; a wrong rank, device, or layout raises ``ValueError``; what the
C++ library rejects (shapes against the head geometry, ...) raises
``gdn.InvalidArgument``, a ``ValueError``. Every message names the argument.
"""

import sys as _sys

from . import _gdn
from ._gdn import (  # noqa: F401  (re-exported)
    HeadConfig,
    InvalidArgument,
    has_cuda,
    index_checking_enabled,
    kokkos_initialized_here,
    lazy_ledger_words,
    pad_slot,
    prefill_workspace_bytes,
    ring_record_elements,
    set_index_checking,
    skipped_rows,
)

__version__ = _gdn.__version__

__all__ = [
    "HeadConfig",
    "InvalidArgument",
    "conv1d_fwd",
    "conv1d_verify_ring",
    "has_cuda",
    "index_checking_enabled",
    "kokkos_initialized_here",
    "conv1d_verify_lazy",
    "lazy_accept",
    "lazy_drop",
    "lazy_ledger_words",
    "pad_slot",
    "prefill_workspace_bytes",
    "prepare_stream",
    "recurrence_fwd",
    "recurrence_fwd_gates",
    "recurrence_prefill",
    "recurrence_prefill_gates",
    "recurrence_verify_ring",
    "recurrence_verify_lazy",
    "recurrence_verify_lazy_gates",
    "recurrence_verify_ring_gates",
    "ring_record_elements",
    "set_index_checking",
    "skipped_rows",
    "state_flush",
    "state_fold",
]


def _torch_tensor(t):
    """Whether t is a torch tensor (without importing torch)."""
    torch = _sys.modules.get("torch")
    return torch is not None and isinstance(t, torch.Tensor)


def _stream(stream, *tensors):
    """The stream handle of a call: ``stream`` if given (an int, or an object
    with ``cuda_stream`` such as torch.cuda.Stream), else torch's current
    stream when the first torch tensor among ``tensors`` is on CUDA, else None
    (a CPU call)."""
    if stream is not None:
        return getattr(stream, "cuda_stream", stream)
    torch = _sys.modules.get("torch")
    if torch is None:
        return None
    for t in tensors:
        if isinstance(t, torch.Tensor):
            return torch.cuda.current_stream(t.device).cuda_stream if t.is_cuda else None
    return None


def _prepare(stream, *tensors):
    """The stream handle of a call (``_stream``) and its tensors. For a call on
    torch's current stream (``stream`` not given) torch tensors go as DLPack
    capsules from torch.utils.dlpack.to_dlpack: producer and consumer share
    the stream, so __dlpack__'s per-tensor stream handshake (several
    microseconds each) has nothing to order. Everything else goes as given
    and is borrowed through __dlpack__ (with ``stream`` when one is given)."""
    handle = _stream(stream, *tensors)
    torch = _sys.modules.get("torch")
    if stream is not None or torch is None:
        return handle, tensors
    to_dlpack = torch.utils.dlpack.to_dlpack
    tensor = torch.Tensor
    # A tensor that requires grad goes through __dlpack__, which refuses it (TypeError).
    return handle, tuple(to_dlpack(t) if isinstance(t, tensor) and not t.requires_grad else t
                         for t in tensors)


def recurrence_fwd(cfg, qkv, decay, beta, row_offsets, state_slots, state, out, *, stream=None):
    """Run the recurrence over every token of every sequence and commit the state.

    Sequence b owns tokens ``row_offsets[b]:row_offsets[b+1]`` and starts from
    pool row ``state[state_slots[b]]``; ``out`` is written for every token and
    the final state written back to the same row, one token at a time (a row's
    bits do not depend on how its tokens are split into calls).

    ``cfg``: a :class:`HeadConfig`. ``stream``: for CUDA tensors, a cudaStream_t handle (int) or a
    torch.cuda.Stream; default torch's current stream. Returns None (``out``
    and ``state`` are written in place).
    """
    s, t = _prepare(stream, qkv, decay, beta, row_offsets, state_slots, state, out)
    _gdn.recurrence_fwd(cfg, *t, s)


def recurrence_prefill(cfg, qkv, decay, beta, row_offsets, state_slots, state, out,
                       workspace=None, precision="tf32x3", *, stream=None):
    """:func:`recurrence_fwd`'s job for long prompts in the chunked WY/UT form (64-token
    chunks; tensor cores on CUDA): within a stated tolerance of the exact path, not bit for
    bit (docs/api.md gives the bounds). A row's bits do not depend on the other rows.

    ``workspace``: a contiguous 1-D tensor on the call's device of at least
    ``prefill_workspace_bytes(cfg, tokens, B)`` bytes (any dtype; its contents are scratch),
    or None to allocate one for the call (which then blocks until done). ``precision``:
    ``"bf16"`` (bf16 operands, float32 accumulation and state) or ``"tf32x3"`` (3xTF32,
    float32-level); the CPU computes in float32 for both.
    """
    s, t = _prepare(stream, qkv, decay, beta, row_offsets, state_slots, state, out, workspace)
    _gdn.recurrence_prefill(cfg, *t, precision, s)


def recurrence_prefill_gates(cfg, qkv, a, b, A_log, dt_bias, row_offsets, state_slots, state,
                             out, workspace=None, precision="tf32x3", *, stream=None):
    """:func:`recurrence_prefill` with raw gates (as :func:`recurrence_fwd_gates`)."""
    s, t = _prepare(stream, qkv, a, b, A_log, dt_bias, row_offsets, state_slots, state, out,
                    workspace)
    _gdn.recurrence_prefill_gates(cfg, *t, precision, s)


def recurrence_verify_ring(cfg, qkv, decay, beta, row_offsets, state_slots, state, out,
                           ring_slots, ring, *, stream=None):
    """Verify a drafted window: write ``out`` (bit-identical to the forward's)
    and, instead of the state, the ring records of every token.

    A sequence of length 0 < L <= RING_LEN (``ring.shape[2]``) leaves its state
    row untouched and writes the records ``ring[ring_slots[b], :, :L, :rec]``
    (``rec = ring_record_elements(Dk, Dv, G)``); a longer one writes no record
    and commits its state as the forward does.
    """
    s, t = _prepare(stream, qkv, decay, beta, row_offsets, state_slots, state, out, ring_slots,
                    ring)
    _gdn.recurrence_verify_ring(cfg, *t, s)


def recurrence_fwd_gates(cfg, qkv, a, b, A_log, dt_bias, row_offsets, state_slots, state, out, *,
                         stream=None):
    """:func:`recurrence_fwd` with raw gates: the kernel computes decay and beta
    from ``a``, ``b`` (per token, the dtype of qkv) and ``A_log``, ``dt_bias``
    (per value head, float32)."""
    s, t = _prepare(stream, qkv, a, b, A_log, dt_bias, row_offsets, state_slots, state, out)
    _gdn.recurrence_fwd_gates(cfg, *t, s)


def recurrence_verify_ring_gates(cfg, qkv, a, b, A_log, dt_bias, row_offsets, state_slots, state,
                                 out, ring_slots, ring, *, stream=None):
    """:func:`recurrence_verify_ring` with raw gates (as :func:`recurrence_fwd_gates`); the
    records hold the decays the kernel computed, so the fold stays exact."""
    s, t = _prepare(stream, qkv, a, b, A_log, dt_bias, row_offsets, state_slots, state, out,
                    ring_slots, ring)
    _gdn.recurrence_verify_ring_gates(cfg, *t, s)


def state_fold(cfg, state_rows, state, ring_rows, ring, num_accepted, *, conv_state=None,
               conv_ring=None, stream=None):
    """Commit the first ``num_accepted[b]`` ring records of every sequence into
    the state, for all L layers in one launch.

    Layer l, sequence b: pool row ``state_rows[l, b]``, ring row
    ``ring_rows[l, b]``. Rows with ``num_accepted[b] == 0`` or ``> RING_LEN``,
    and entries where either table holds -1 (``pad_slot``), are not touched. With a float32 ring the result equals, bit for bit, a
    forward over the accepted tokens.

    With ``conv_state`` ``[slots, conv_dim, W-1]`` and ``conv_ring``
    ``[ring_rows, RING_LEN, >= conv_dim]`` (both or neither; one dtype, float32
    or bfloat16) the same call also commits the conv states: conv state row
    ``state_rows[l, b]`` becomes the last W-1 inputs of (that row, the first
    ``num_accepted[b]`` inputs ``conv1d_verify_ring`` recorded in
    ``conv_ring[ring_rows[l, b]]``), bit for bit what :func:`conv1d_fwd` over
    the accepted tokens leaves, in the same launch. Every argument is checked first.
    """
    s, t = _prepare(stream, state_rows, state, ring_rows, ring, num_accepted, conv_state,
                    conv_ring)
    _gdn.state_fold(cfg, *t, s)


def conv1d_fwd(cfg, qkv, weight, bias, row_offsets, state_slots, conv_state, out, *, stream=None):
    """Run the causal depthwise conv1d with SiLU over every token of every sequence and
    commit the conv state.

    Channel c of sequence b sees the history ``h = (conv_state[state_slots[b], c, :],
    qkv[row_offsets[b]:row_offsets[b+1], c])`` (oldest first) and token p gets, in float32,
    ``acc = bias[c]`` (0 when ``bias`` is None), ``acc = fma(weight[c, j], h[p + j], acc)``
    for j = 0 .. W-1, ``out[t, c] = acc / (1 + exp(-acc))``: tap W-1 multiplies the current
    token (PyTorch's Conv1d weight ``[conv_dim, 1, W]`` without its middle axis). The row
    is left holding the last W-1 inputs of (old row, the sequence's tokens).

    ``cfg``: a :class:`HeadConfig` (only ``conv_dim`` is used). ``out`` is float32 or
    bfloat16 and must not overlap ``qkv``. Returns None (``out`` and ``conv_state`` are
    written in place).
    """
    s, t = _prepare(stream, qkv, weight, bias, row_offsets, state_slots, conv_state, out)
    _gdn.conv1d_fwd(cfg, *t, s)


def conv1d_verify_ring(cfg, qkv, weight, bias, row_offsets, state_slots, conv_state, out,
                       ring_slots, conv_ring, *, stream=None):
    """The conv over a drafted window: write ``out`` (bit-identical to
    :func:`conv1d_fwd`'s) and record the pre-conv inputs instead of committing the
    conv state.

    A sequence of length 0 < L <= RING_LEN (``conv_ring.shape[1]``) leaves its conv
    state row untouched and writes ``conv_ring[ring_slots[b], :L, :conv_dim]`` = its
    qkv rows; a longer one records nothing and commits its conv state as the forward
    does. :func:`state_fold` with ``conv_state=``, ``conv_ring=`` commits the accepted
    prefix.
    """
    s, t = _prepare(stream, qkv, weight, bias, row_offsets, state_slots, conv_state, out,
                    ring_slots, conv_ring)
    _gdn.conv1d_verify_ring(cfg, *t, s)


def recurrence_verify_lazy(cfg, qkv, decay, beta, row_offsets, state_slots, state, out,
                           ring_slots, history, ledger, *, stream=None):
    """Lazy commit: verify a drafted window from the state advanced over the
    slot's pending records, and record the window behind them.

    ``history`` ``[ring_rows, nk, capacity, record_stride]`` (float32 keeps the
    flow exact, or bfloat16) and ``ledger`` ``[ring_rows, lazy_ledger_words(capacity)]``
    (int32 or uint32, zero-filled at the start: nothing pending) form the lazy
    ring (docs/api.md, "Lazy commit"). Row b with c pending records in
    ``history[ring_slots[b]]`` folds them into its state in registers and
    writes its window's records at positions c..c+L-1; ``out`` is bit for bit
    what the eager flow (``recurrence_verify_ring`` then ``state_fold`` every
    step) writes. If c + L > capacity the c records are committed first and
    the window goes to positions 0..L-1. No host synchronisation.
    """
    s, t = _prepare(stream, qkv, decay, beta, row_offsets, state_slots, state, out, ring_slots,
                    history, ledger)
    _gdn.recurrence_verify_lazy(cfg, *t, s)


def recurrence_verify_lazy_gates(cfg, qkv, a, b, A_log, dt_bias, row_offsets, state_slots, state,
                                 out, ring_slots, history, ledger, *, stream=None):
    """:func:`recurrence_verify_lazy` with raw gates (as :func:`recurrence_fwd_gates`)."""
    s, t = _prepare(stream, qkv, a, b, A_log, dt_bias, row_offsets, state_slots, state, out,
                    ring_slots, history, ledger)
    _gdn.recurrence_verify_lazy_gates(cfg, *t, s)


def conv1d_verify_lazy(cfg, qkv, weight, bias, row_offsets, state_slots, conv_state, out,
                       ring_slots, conv_history, history, ledger, *, stream=None):
    """Lazy commit of the conv state: the conv over a drafted window from the
    conv state advanced over the row's pending inputs (``conv_history``
    ``[ring_rows, capacity, >= conv_dim]``, the dtype of qkv), recording the
    window's inputs behind them. ``history`` and ``ledger``: the layer's lazy
    ring (its ledger is read; call this before the layer's
    :func:`recurrence_verify_lazy`, which clears the rows it commits). ``out``
    is what :func:`conv1d_verify_ring` writes in the eager flow.
    """
    s, t = _prepare(stream, qkv, weight, bias, row_offsets, state_slots, conv_state, out,
                    ring_slots, conv_history, history, ledger)
    _gdn.conv1d_verify_lazy(cfg, *t, s)


def lazy_accept(ring_rows, history, ledger, num_accepted, *, stream=None):
    """Lazy commit: the first ``num_accepted[b]`` records of the last window of
    history row ``ring_rows[l, b]`` become pending, for all layers in one
    launch, on the device. ``n == 0`` changes nothing; pass ``n > capacity``
    for a row the verify committed."""
    s, t = _prepare(stream, ring_rows, history, ledger, num_accepted)
    _gdn.lazy_accept(*t, s)


def state_flush(cfg, state_rows, state, ring_rows, history, ledger, *, conv_state=None,
                conv_history=None, stream=None):
    """Lazy commit: fold every pending record of history row ``ring_rows[l, b]``
    into pool row ``state_rows[l, b]`` (all layers in one launch) and clear the
    ledger rows; the states are then the eager flow's, bit for bit. Entries
    with -1 in either table are skipped. With ``conv_state`` and
    ``conv_history`` the conv states are committed in the same launch."""
    s, t = _prepare(stream, state_rows, state, ring_rows, history, ledger, conv_state,
                    conv_history)
    _gdn.state_flush(cfg, *t, s)


def lazy_drop(ring_rows, history, ledger, *, stream=None):
    """Lazy commit: discard the pending records of history rows ``ring_rows[l, b]``
    (their ledger rows are cleared; the states keep their last committed value)."""
    s, t = _prepare(stream, ring_rows, history, ledger)
    _gdn.lazy_drop(*t, s)


def prepare_stream(stream=None):
    """Create gdn's Kokkos execution space instance for a CUDA stream now.

    gdn makes one instance per stream on the stream's first use, which
    synchronizes the device: a CUDA graph capture forbids that, so call this
    (or make any gdn call on the stream) before capturing on a stream.
    ``stream``: a torch.cuda.Stream or a cudaStream_t handle; default torch's
    current stream.
    """
    if stream is None:
        import torch

        stream = torch.cuda.current_stream()
    handle = getattr(stream, "cuda_stream", stream)
    _gdn.prepare_stream(int(handle))
