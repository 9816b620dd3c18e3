"""gdn's calls as torch custom operators, for ``torch.compile``d models.

``import gdn.ops`` registers every call of :mod:`gdn` as an operator ``torch.ops.gdn.<name>``
(torch >= 2.4; with an older torch the import raises ImportError and the functions of
:mod:`gdn` work as they are). Each operator takes the same tensors in the same order as the
function of the same name, with two differences:

- the head geometry is ``head = [num_key_heads, num_value_heads, key_head_dim,
  value_head_dim]`` (a list of ints, :func:`head_of` makes it from a :class:`gdn.HeadConfig`)
  instead of a ``HeadConfig``; ``lazy_accept`` and ``lazy_drop`` take none, as their
  functions;
- there is no ``stream`` argument: the call runs on torch's current stream of the tensors'
  device (CUDA) or on the host (CPU tensors).

The schema of each operator names the tensors the call writes (``mutates_args``: the state,
ring, history, ledger and conv pools it may write, and ``out``); the call returns nothing.
The fake (meta) implementation does nothing, so tracing needs no device work, and
``torch.compile(fullgraph=True)`` of a module that calls these operators compiles without a
graph break. The bits are those of the eager functions; errors are theirs too.

Example::

    import gdn, gdn.ops
    head = gdn.ops.head_of(cfg)
    torch.ops.gdn.recurrence_verify_ring(head, qkv, decay, beta, row_offsets, state_slots,
                                         state, out, ring_slots, ring)
    torch.ops.gdn.state_fold(head, state_rows, state, ring_rows, ring, num_accepted)
"""

import torch

import gdn

if not hasattr(torch.library, "register_fake"):
    raise ImportError(
        "gdn.ops needs torch >= 2.4 (torch.library.register_fake); this torch is "
        f"{torch.__version__}. The functions of the gdn module work without it.")

__all__ = ["head_of", "OPERATORS"]

# name: (the schema's arguments, the call: (head or None, *tensors) -> None). The
# annotations (x!) mark the tensors a call writes; every alias set is its own letter.
_TOKENS = "Tensor row_offsets, Tensor state_slots"
_GIVEN = "Tensor qkv, Tensor decay, Tensor beta, " + _TOKENS
_RAW = "Tensor qkv, Tensor a, Tensor b, Tensor A_log, Tensor dt_bias, " + _TOKENS
_CONV = "Tensor qkv, Tensor weight, Tensor? bias, " + _TOKENS
OPERATORS = {
    "recurrence_fwd":
        f"int[] head, {_GIVEN}, Tensor(a!) state, Tensor(b!) out",
    "recurrence_fwd_gates":
        f"int[] head, {_RAW}, Tensor(a!) state, Tensor(b!) out",
    "recurrence_verify_ring":
        f"int[] head, {_GIVEN}, Tensor(a!) state, Tensor(b!) out, Tensor ring_slots, "
        "Tensor(c!) ring",
    "recurrence_verify_ring_gates":
        f"int[] head, {_RAW}, Tensor(a!) state, Tensor(b!) out, Tensor ring_slots, "
        "Tensor(c!) ring",
    "recurrence_prefill":
        f"int[] head, {_GIVEN}, Tensor(a!) state, Tensor(b!) out, Tensor(c!)? workspace=None, "
        "str precision='tf32x3'",
    "recurrence_prefill_gates":
        f"int[] head, {_RAW}, Tensor(a!) state, Tensor(b!) out, Tensor(c!)? workspace=None, "
        "str precision='tf32x3'",
    "state_fold":
        "int[] head, Tensor state_rows, Tensor(a!) state, Tensor ring_rows, Tensor ring, "
        "Tensor num_accepted, Tensor(b!)? conv_state=None, Tensor? conv_ring=None",
    "conv1d_fwd": f"int[] head, {_CONV}, Tensor(a!) conv_state, Tensor(b!) out",
    "conv1d_verify_ring":
        f"int[] head, {_CONV}, Tensor(a!) conv_state, Tensor(b!) out, Tensor ring_slots, "
        "Tensor(c!) conv_ring",
    "recurrence_verify_lazy":
        f"int[] head, {_GIVEN}, Tensor(a!) state, Tensor(b!) out, Tensor ring_slots, "
        "Tensor(c!) history, Tensor(d!) ledger",
    "recurrence_verify_lazy_gates":
        f"int[] head, {_RAW}, Tensor(a!) state, Tensor(b!) out, Tensor ring_slots, "
        "Tensor(c!) history, Tensor(d!) ledger",
    "conv1d_verify_lazy":
        f"int[] head, {_CONV}, Tensor(a!) conv_state, Tensor(b!) out, Tensor ring_slots, "
        "Tensor(c!) conv_history, Tensor history, Tensor ledger",
    "lazy_accept": "Tensor ring_rows, Tensor history, Tensor(a!) ledger, Tensor num_accepted",
    "state_flush":
        "int[] head, Tensor state_rows, Tensor(a!) state, Tensor ring_rows, Tensor history, "
        "Tensor(b!) ledger, Tensor(c!)? conv_state=None, Tensor? conv_history=None",
    "lazy_drop": "Tensor ring_rows, Tensor history, Tensor(a!) ledger",
}
def head_of(cfg):
    """``[num_key_heads, num_value_heads, key_head_dim, value_head_dim]`` of a HeadConfig."""
    return [cfg.num_key_heads, cfg.num_value_heads, cfg.key_head_dim, cfg.value_head_dim]


def _config(name, head):
    if len(head) != 4:
        raise ValueError(f"torch.ops.gdn.{name}: 'head' must be [num_key_heads, "
                         f"num_value_heads, key_head_dim, value_head_dim], got {list(head)}")
    return gdn.HeadConfig(*head)


def _argument_names(args):
    """The argument names of a schema's argument list, in order."""
    return [a.split("=")[0].split()[-1] for a in args.split(",")]


def _kernel(name):
    """The eager implementation of operator `name`: the gdn function of that name, with the
    head geometry as a HeadConfig and every argument by name (the dispatcher passes the
    arguments that were given, positionally or by name; the optional tensors default to
    None)."""
    fn = getattr(gdn, name)
    names = _argument_names(OPERATORS[name])

    def run(*args, **kwargs):
        kwargs.update(zip(names, args))
        if "head" in kwargs:
            kwargs["cfg"] = _config(name, kwargs.pop("head"))
        fn(**kwargs)

    run.__name__ = name
    return run


def _fake(*args):
    """Tracing: the call writes only tensors it was given and returns nothing."""
    return None


def _define(lib, register_fake):
    """Define every operator of OPERATORS in `lib` (a torch.library.Library of kind "DEF"):
    its schema, the eager kernel for every device (CompositeExplicitAutograd) and, with
    `register_fake`, the fake implementation."""
    for name, args in OPERATORS.items():
        lib.define(f"{name}({args}) -> ()")
        lib.impl(name, _kernel(name), "CompositeExplicitAutograd")
        if register_fake is not None:
            register_fake(f"{lib.ns}::{name}", _fake, lib=lib)


_lib = torch.library.Library("gdn", "DEF")
_define(_lib, torch.library.register_fake)
