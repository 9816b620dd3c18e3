"""Hugging Face transformers: run the Gated DeltaNet layers of a loaded model on gdn.

``gdn.hf.use_gdn(model)`` switches every Gated DeltaNet layer of a transformers model
(Qwen3-Next's ``Qwen3NextGatedDeltaNet`` and the layers built like it) to gdn: such a layer
keeps the two functions it calls for its recurrence in the attributes
``chunk_gated_delta_rule`` (prefill) and ``recurrent_gated_delta_rule`` (decode), chosen when it
is built (fla's kernels when fla is installed, torch loops otherwise); ``use_gdn`` sets them to
:mod:`gdn.fla`'s functions, which take the same arguments. The convolution, the gates, the
norms and the projections stay the model's own. Returns the number of layers switched.
"""

from . import fla

__all__ = ["use_gdn"]


def _is_gated_deltanet(module):
    return (type(module).__name__.endswith("GatedDeltaNet")
            and hasattr(module, "chunk_gated_delta_rule")
            and hasattr(module, "recurrent_gated_delta_rule"))


def use_gdn(model):
    """Make every Gated DeltaNet layer of ``model`` compute its recurrence with gdn; returns the
    number of layers switched. Raises ``ValueError`` if the model has none."""
    layers = [m for m in model.modules() if _is_gated_deltanet(m)]
    if not layers:
        raise ValueError("gdn.hf.use_gdn: the model has no Gated DeltaNet layer (a module whose "
                         "class name ends in 'GatedDeltaNet' with the attributes "
                         "chunk_gated_delta_rule and recurrent_gated_delta_rule)")
    for m in layers:
        m.chunk_gated_delta_rule = fla.chunk_gated_delta_rule
        m.recurrent_gated_delta_rule = fla.fused_recurrent_gated_delta_rule
    return len(layers)
