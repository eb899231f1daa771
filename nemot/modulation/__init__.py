"""Task-conditioned computation: the one place where a transformer is modulated.

NeMoT gates activations after its vanilla set (:class:`Gate`), NGT gates a BERT
layer's output (:class:`GatingBlock`), and per-layer mechanisms plug into any
:class:`nemot.layers.TransformerLayer` at one of three sites (:mod:`.base`):

====================  ==================================================  ===============
site                  what the sub-layer does                             example
====================  ==================================================  ===============
``parallel``          adds a term, computed from the layer input, to the  PALs
                      feed-forward residual sum
``activation``        replaces the feed-forward nonlinearity ``phi(h)``   modulated
                      with a modulated one (gain before or gate after)    activations
``dense:<name>``      replaces one of the layer's dense projections       HyperGrid
                      (same ``kernel``/``bias``, so pretrained weights
                      load), computing a modulated product
====================  ==================================================  ===============

A model names its per-layer modulations in its config (``NeMoTConfig.modulation``, a
tuple of :class:`ModulationSpec`, TOML ``[[model.modulation]]`` tables); the sets build
one sub-layer per spec in each chosen layer and pass every layer the conditioning
(:data:`base.CONDITIONING_KEYS`: task index, and NeMoT's neuromodulatory output where
the set runs after it).

Adding a mechanism: subclass :class:`Modulation` in a module of this package and add
its ``kind`` to :data:`KINDS` (or call :func:`register` from your own code).

This package's ``__init__`` imports no Keras: configs name kinds without loading
TensorFlow; the classes load on first use.
"""

import importlib

from nemot.modulation.spec import ModulationSpec

# kind -> "module:Class" of its Modulation subclass.
KINDS = {
    "pals": "nemot.modulation.pals:ProjectedAttentionAdapter",
    "modulated_ffn": "nemot.modulation.activation:ModulatedFFN",
    "hypergrid": "nemot.modulation.hypergrid:HyperGridDense",
    "hypergrid_og": "nemot.modulation.hypergrid:OutputGate",
    "gating_block": "nemot.modulation.gating_block:GatingBlock",
}

_LAZY = {
    "Modulation": "nemot.modulation.base",
    "Gate": "nemot.modulation.gate",
    "GatingBlock": "nemot.modulation.gating_block",
}

__all__ = ["KINDS", "ModulationSpec", "modulation_class", "register", *_LAZY]


def register(kind, target):
    """Make ``kind`` available to configs: ``target`` is a class or ``"module:Class"``."""
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"modulation kind {kind!r}: expected a non-empty name")
    KINDS[kind] = target


def modulation_class(kind):
    """The :class:`Modulation` subclass registered as ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"modulation kind {kind!r}: expected one of {sorted(KINDS)}")
    target = KINDS[kind]
    if isinstance(target, str):
        module, name = target.split(":")
        target = getattr(importlib.import_module(module), name)
    return target


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'nemot.modulation' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
