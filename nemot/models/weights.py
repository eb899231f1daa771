"""Moving weights between models by name: counts, partial loading, pretrained starts.

Weights are matched by their path (:func:`weight_key`) and
grouped by **component**, the model's top-level layer a weight belongs to
(``vanilla_set``, ``neuromodulatory_set``, ``output_set``, ``head``, ``vanilla_head``,
``aux_embedding``, ``reading_strategies`` ...), so that a partial start reports and refuses
per component rather than weight by weight.
"""

import dataclasses

import warnings

import keras
import numpy as np

from nemot.models.heads import VocabularyHead


def count_weights(layer):
    """Parameters of ``layer`` (each weight once)."""
    return int(sum(np.prod(w.shape) for w in layer.weights))


def weight_key(variable):
    """A variable's path (``vanilla_set/transformer_layer_0/.../kernel``): the layers of
    nemot's backbones and heads have fixed names, and a functional model's paths start at
    its layers, so the same weight has the same key in two instances."""
    return variable.path


def component(key):
    """The component of a weight key: its top-level layer (``"vanilla_set"`` ...)."""
    return key.split("/", 1)[0]


@dataclasses.dataclass
class ComponentMatch:
    """How one component's weights pair up between a source and a target model.

    ``pairs`` are ``(source value, target variable)`` of one key and shape (a vocabulary
    head's columns fitted to the target's padding, :class:`VocabularyHead`); ``reshaped``
    the keys both have with other shapes, as ``(key, target shape, source shape)``; ``fresh``
    the target's keys the source lacks; ``unplaced`` the source's keys the target lacks.
    """

    pairs: list = dataclasses.field(default_factory=list)
    reshaped: list = dataclasses.field(default_factory=list)
    fresh: list = dataclasses.field(default_factory=list)
    unplaced: list = dataclasses.field(default_factory=list)

    @property
    def in_target(self):
        return len(self.pairs) + len(self.reshaped) + len(self.fresh)

    @property
    def in_source(self):
        return len(self.pairs) + len(self.reshaped) + len(self.unplaced)

    def mismatch(self):
        """Why this component of the source does not fit the target (None when it fits):
        weights of other shapes, or weights the target has no place for (fewer layers or
        blocks). Weights only the target has (new blocks, reading strategies,
        modulations) are no mismatch: they keep their initial values."""
        if not self.in_target or not self.in_source:
            return None
        if self.reshaped:
            key, here, saved = self.reshaped[0]
            return (f"{len(self.reshaped)} weight(s) of other shapes, e.g. {key} "
                    f"{tuple(saved)} saved vs {tuple(here)} here")
        if self.unplaced:
            return (f"{len(self.unplaced)} saved weight(s) with no place here, "
                    f"e.g. {self.unplaced[0]}")
        return None


def match_weights(source, target):
    """``{component: ComponentMatch}`` over the components of both models."""
    values = {weight_key(v): v for v in source.weights}
    heads = {weight_key(v): layer for layer in target._flatten_layers()
             if isinstance(layer, VocabularyHead) for v in layer.weights}
    parts = {}
    for variable in target.weights:
        key = weight_key(variable)
        part = parts.setdefault(component(key), ComponentMatch())
        match = values.pop(key, None)
        fitted = None if match is None else _fitted(match, variable, heads.get(key))
        if match is None:
            part.fresh.append(key)
        elif fitted is not None:
            part.pairs.append((fitted, variable))
        else:
            part.reshaped.append((key, tuple(variable.shape), tuple(match.shape)))
    for key in sorted(values):
        parts.setdefault(component(key), ComponentMatch()).unplaced.append(key)
    return parts


def _fitted(source_variable, variable, head):
    """The value of ``source_variable`` for ``variable`` (None if it has no place there):
    itself at the same shape, or a vocabulary head's columns at another padded width."""
    if tuple(source_variable.shape) == tuple(variable.shape):
        return source_variable.value
    if head is None or tuple(source_variable.shape[:-1]) != tuple(variable.shape[:-1]):
        return None
    try:
        return head.fit_columns(source_variable.value)
    except ValueError:
        return None


def transfer_weights(source, target):
    """Copy every weight of ``source`` into the weight of ``target`` with the same key
    and shape (a vocabulary head's also at another padded width of the same vocabulary).

    Returns:
        ``(copied, fresh, unplaced)``: the count copied, the paths of ``target``'s
        weights nothing was copied into, and the keys of ``source``'s weights that
        found no place.
    """
    copied, fresh, unplaced = 0, set(), []
    for part in match_weights(source, target).values():
        for value, dst in part.pairs:
            dst.assign(value)
        copied += len(part.pairs)
        reshaped = [key for key, _, _ in part.reshaped]
        fresh.update(part.fresh + reshaped)
        unplaced += part.unplaced + reshaped
    return (copied, [v.path for v in target.weights if weight_key(v) in fresh],
            sorted(unplaced))


class IncompatibleWeights(ValueError):
    """A saved model's components do not fit the model; ``mismatches`` is
    ``{component: why}``."""

    def __init__(self, path, mismatches):
        self.path, self.mismatches = str(path), dict(mismatches)
        self.details = "; ".join(f"{name} ({why})" for name, why in mismatches.items())
        super().__init__(f"{path}: the saved weights do not fit this model in {self.details}; "
                         f"start from a model of the same architecture, or skip "
                         f"{sorted(mismatches)} (they keep their initial values)")


@dataclasses.dataclass
class PretrainedStart:
    """What :func:`load_pretrained` copied: ``{component: (copied, weights)}`` of the
    model, the components skipped, and the saved components the model lacks
    (``{component: weights}``)."""

    path: str
    copied: dict
    skipped: tuple
    unused: dict

    def summary(self):
        """One line: ``copied n of N weights (vanilla_set 36/36, output_set 18/54, ...)``."""
        done = sum(c for c, _ in self.copied.values())
        total = sum(t for _, t in self.copied.values())
        parts = ", ".join(f"{name} {c}/{t}" + (" skipped" if name in self.skipped else "")
                          for name, (c, t) in self.copied.items())
        line = f"{self.path}: copied {done} of {total} weights ({parts})"
        if self.unused:
            line += "; saved but not in this model: " + ", ".join(
                f"{name} ({count})" for name, count in self.unused.items())
        return line


def load_pretrained(model, path, skip=()):
    """Copy the weights of a saved model (``.keras``) into ``model`` by name and shape
    (the heads' also at another ``vocab_padding``).

    Weights the saved model lacks (e.g. output blocks it did not have) keep their
    initial values. A component of both whose weights do not fit (another model size:
    other shapes, or more layers or blocks than ``model`` has) raises
    :class:`IncompatibleWeights` naming it, unless it is in ``skip``: the components
    kept at their initial values.

    Returns:
        A :class:`PretrainedStart` (its ``summary()`` is the line to log).

    Example:
        >>> start = load_pretrained(model, "checkpoints/pretrain/model_last.keras")
        >>> start.summary()
        'checkpoints/pretrain/model_last.keras: copied 127 of 127 weights (vanilla_set 36/36, ...)'
    """
    components = {component(weight_key(v)) for v in model.weights}
    unknown = sorted(set(skip) - components)
    if unknown:
        raise ValueError(f"skip {unknown}: no such component; the components are "
                         f"{sorted(components)}")
    source = load_uncompiled(path)
    parts = match_weights(source, model)
    mismatches = {name: part.mismatch() for name, part in parts.items()
                  if name not in skip and part.mismatch()}
    if mismatches:
        raise IncompatibleWeights(path, mismatches)
    copied = {}
    for name, part in parts.items():
        if part.in_target:
            pairs = [] if name in skip else part.pairs
            for value, dst in pairs:
                dst.assign(value)
            copied[name] = (len(pairs), part.in_target)
    if not any(c for c, _ in copied.values()):
        raise ValueError(f"{path}: no weight matches the model being trained (different "
                         "architecture?)")
    return PretrainedStart(str(path), copied, tuple(skip),
                           {name: part.in_source for name, part in parts.items()
                            if not part.in_target})


def load_uncompiled(path, **kwargs):
    """``keras.models.load_model(path, compile=False)`` without Keras' warning that the
    saved optimizer's variables are skipped: a task makes a default optimizer as it is
    built (as KerasHub's tasks do), and a load without compiling wants none of them."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Skipping variable loading for optimizer")
        return keras.models.load_model(path, compile=False, **kwargs)


def load_model(path, compile=True, **kwargs):
    """``nemot.load_model``: ``keras.models.load_model`` after registering nemot's Keras
    classes (without compiling: :func:`load_uncompiled`)."""
    from nemot import registration

    registration.register()
    if not compile:
        return load_uncompiled(path, **kwargs)
    return keras.models.load_model(path, compile=compile, **kwargs)
