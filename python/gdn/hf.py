"""Hugging Face transformers: run the Gated DeltaNet layers of a loaded model on gdn.

``gdn.hf.use_gdn(model)`` switches every Gated DeltaNet layer of a transformers model
(Qwen3-Next's ``Qwen3NextGatedDeltaNet`` and the layers built like it) to gdn. Such a layer
calls two functions for its recurrence, fla's ``chunk_gated_delta_rule`` (prefill) and
``fused_recurrent_gated_delta_rule`` (decode) when fla is installed, torch loops otherwise;
``use_gdn`` points those calls at :mod:`gdn.fla`'s functions, which take the same arguments.
Where the layer keeps the two functions in its attributes ``chunk_gated_delta_rule`` and
``recurrent_gated_delta_rule`` (transformers up to 4.57 and early 5.x), the switch is per layer.
Where its ``forward`` calls them as globals of its modeling module (later 5.x releases, which
resolve fla or the torch fallback when that module is imported), those globals are replaced, so
the switch holds for every model of that class in the process. The convolution, the gates, the
norms and the projections stay the model's own. Returns the number of layers switched.
"""

import inspect
import sys

from . import fla

__all__ = ["use_gdn"]

_ATTRS = {"chunk_gated_delta_rule": fla.chunk_gated_delta_rule,
          "recurrent_gated_delta_rule": fla.fused_recurrent_gated_delta_rule}


def _is_gated_deltanet(module):
    return type(module).__name__.endswith("GatedDeltaNet") and hasattr(type(module), "forward")


def _global_targets(layer):
    """The module globals the layer's forward calls for its recurrence, as (module, {name: gdn
    function}), or None: the callable globals whose names contain 'gated_delta_rule', those with
    'chunk' (the prefill) and those with 'recurrent' (decode), at least one of each."""
    cls = type(layer)
    module = sys.modules.get(cls.__module__)
    code = getattr(inspect.unwrap(cls.forward), "__code__", None)  # through functools.wraps
    if module is None or code is None:
        return None
    names = [n for n in code.co_names
             if "gated_delta_rule" in n and callable(getattr(module, n, None))]
    chunk = [n for n in names if "chunk" in n]
    recurrent = [n for n in names if "recurrent" in n]
    if not chunk or not recurrent or set(chunk) & set(recurrent):
        return None
    names = {n: fla.chunk_gated_delta_rule for n in chunk}
    names.update({n: fla.fused_recurrent_gated_delta_rule for n in recurrent})
    return module, names


def use_gdn(model):
    """Make every Gated DeltaNet layer of ``model`` compute its recurrence with gdn; returns the
    number of layers switched. Raises ``ValueError`` if the model has none, or if a layer's
    recurrence functions cannot be found (neither in its attributes nor in the globals its
    ``forward`` calls)."""
    layers = [m for m in model.modules() if _is_gated_deltanet(m)]
    if not layers:
        raise ValueError("gdn.hf.use_gdn: the model has no Gated DeltaNet layer (a module whose "
                         "class name ends in 'GatedDeltaNet')")
    plans = []
    for m in layers:
        if all(hasattr(m, name) for name in _ATTRS):
            plans.append((m, None))
            continue
        targets = _global_targets(m)
        if targets is None:
            raise ValueError(f"gdn.hf.use_gdn: {type(m).__name__} has neither the attributes "
                             "chunk_gated_delta_rule and recurrent_gated_delta_rule nor a "
                             "forward calling chunk and recurrent *gated_delta_rule functions of "
                             "its module; this transformers version is not supported")
        plans.append((m, targets))
    for m, targets in plans:  # nothing is changed unless every layer can be switched
        if targets is None:
            for name, fn in _ATTRS.items():
                setattr(m, name, fn)
        else:
            module, names = targets
            for name, fn in names.items():
                setattr(module, name, fn)
    return len(layers)
