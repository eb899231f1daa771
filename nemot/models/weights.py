"""Moving weights between models by name: counts, partial loading, pretrained starts."""

import keras
import numpy as np


def count_weights(layer):
    """Parameters of ``layer`` (each weight once)."""
    return int(sum(np.prod(w.shape) for w in layer.weights))


def weight_key(variable):
    """A variable's path without the model's own name (``ne_mo_t``, ``ne_mo_t_1`` ...),
    so that the same weight matches across two instances."""
    return variable.path.split("/", 1)[-1]


def transfer_weights(source, target):
    """Copy every weight of ``source`` into the weight of ``target`` with the same key
    and shape.

    Returns:
        ``(copied, fresh, unplaced)``: the count copied, the paths of ``target``'s
        weights nothing was copied into, and the keys of ``source``'s weights that
        found no place.
    """
    values = {weight_key(v): v for v in source.weights}
    copied, fresh = 0, []
    for variable in target.weights:
        match = values.get(weight_key(variable))
        if match is not None and tuple(match.shape) == tuple(variable.shape):
            variable.assign(match.value)
            values.pop(weight_key(variable))
            copied += 1
        else:
            fresh.append(variable.path)
    return copied, fresh, sorted(values)


def load_pretrained(model, path):
    """Copy the weights of a saved model (``.keras``) into ``model`` by name and shape.

    Weights the saved model lacks (e.g. output blocks it did not have) keep their
    initial values. Returns ``(copied, missing)`` counts; an error when nothing matches.
    """
    source = keras.models.load_model(path, compile=False)
    copied, fresh, _ = transfer_weights(source, model)
    if not copied:
        raise ValueError(f"{path}: no weight matches the model being trained (different "
                         "architecture?)")
    return copied, len(fresh)
