"""Building a stack's modulations from its specs: what every hosting stack shares."""

import functools

from nemot.modulation import modulation_class
from nemot.modulation.base import CONDITIONING_KEYS


def stack_modulations(specs, stack, num_layers, num_tasks, d_model,
                      available=CONDITIONING_KEYS, dtype=None):
    """The modulations of the ``specs`` that name ``stack``, layer by layer.

    Args:
        specs: :class:`nemot.modulation.ModulationSpec` s (the others' stacks are skipped).
        stack: this stack's name (``"vanilla"``, ``"output"``, ...).
        num_layers: layers in the stack.
        num_tasks: tasks the host distinguishes (rows of per-task weights).
        d_model: the stack's width (shared layers are built on it).
        available: conditioning keys the stack can pass; a spec needing another is an error.
        dtype: the host's dtype policy.

    Returns:
        ``(per_layer, shared)``: ``per_layer[i] = (modulations, dense_replacements)`` for
        :class:`nemot.layers.TransformerLayer` ``i``, and the built shared layers, which
        the host must hold as attributes.
    """
    per_layer = [([], {}) for _ in range(num_layers)]
    shared_layers = []
    chosen = [spec for spec in specs if stack in spec.sets]
    kinds = [spec.kind for spec in chosen]
    for k, spec in enumerate(chosen):
        cls = modulation_class(spec.kind)
        options = spec.kwargs
        missing = sorted(set(cls.needs(options)) - set(available))
        if missing:
            raise ValueError(f"modulation {spec.kind!r} in the {stack} set needs conditioning "
                             f"{missing}, which that set cannot give (it has {list(available)})")
        name = spec.kind if kinds.count(spec.kind) == 1 else f"{spec.kind}_{k}"
        try:
            shared = cls.shared_layer(num_tasks=num_tasks, d_model=d_model,
                                      name=f"{name}_shared", dtype=dtype, **options)
            if shared is not None:
                shared.build((None, None, d_model))
                shared_layers.append(shared)
            for i in spec.layer_indices(num_layers):
                if cls.site == "dense":
                    for target in cls.replaces(options):
                        if target in per_layer[i][1]:
                            raise ValueError(f"two modulations replace {target} in layer {i}")
                        per_layer[i][1][target] = functools.partial(
                            cls, num_tasks=num_tasks, shared=shared, **options)
                else:
                    per_layer[i][0].append(cls(num_tasks=num_tasks, shared=shared, name=name,
                                               dtype=dtype, **options))
        except (TypeError, ValueError) as error:
            raise ValueError(f"modulation {spec.kind!r} ({cls.__name__}): bad options "
                             f"{options}: {error}") from error
    return per_layer, shared_layers
