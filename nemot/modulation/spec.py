"""``ModulationSpec``: one per-layer modulation named in a model config (no Keras here)."""

import dataclasses

# The sets of NeMoT that can host per-layer modulations; other hosts (a BERT stack)
# name their own.
LAYER_CHOICES = ("all", "top_half", "bottom_half")


@dataclasses.dataclass(frozen=True)
class ModulationSpec:
    """Which mechanism, in which sets and layers, with which options.

    Args:
        kind: a registered kind (:data:`nemot.modulation.KINDS`), e.g. ``"pals"``.
        sets: names of the hosting stacks (NeMoT: ``"vanilla"``, ``"neuromodulatory"``,
            ``"output"``).
        layers: ``"all"``, ``"top_half"``, ``"bottom_half"`` or a tuple of layer
            indices (0-based) of each hosting stack.
        options: the kind's own keyword arguments, as sorted ``(key, value)`` pairs
            (hashable); :attr:`kwargs` gives them as a dict.

    Example (TOML, in a run config)::

        [[model.modulation]]
        kind = "pals"
        sets = ["vanilla"]
        layers = "top_half"
        hidden_size = 276
    """

    kind: str
    sets: tuple = ("vanilla",)
    layers: object = "all"
    options: tuple = ()

    def __post_init__(self):
        if not isinstance(self.kind, str) or not self.kind:
            raise ValueError(f"modulation kind {self.kind!r}: expected a non-empty name")
        sets = (self.sets,) if isinstance(self.sets, str) else tuple(self.sets)
        if not sets:
            raise ValueError(f"modulation {self.kind!r}: sets is empty")
        layers = self.layers
        if isinstance(layers, (list, tuple)):
            layers = tuple(layers)
            if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in layers):
                raise ValueError(f"modulation {self.kind!r}: layers={list(layers)}: expected "
                                 "layer indices >= 0")
        elif layers not in LAYER_CHOICES:
            raise ValueError(f"modulation {self.kind!r}: layers={layers!r}: expected one of "
                             f"{LAYER_CHOICES} or a list of layer indices")
        options = self.options.items() if isinstance(self.options, dict) else self.options
        object.__setattr__(self, "sets", sets)
        object.__setattr__(self, "layers", layers)
        object.__setattr__(self, "options", tuple(sorted(
            (k, tuple(v) if isinstance(v, list) else v) for k, v in options)))

    @property
    def kwargs(self):
        return dict(self.options)

    def layer_indices(self, num_layers):
        """The 0-based indices of the hosting layers in a stack of ``num_layers``."""
        if self.layers == "all":
            return list(range(num_layers))
        if self.layers == "top_half":
            return list(range(num_layers // 2, num_layers))
        if self.layers == "bottom_half":
            return list(range(num_layers // 2))
        outside = [i for i in self.layers if i >= num_layers]
        if outside:
            raise ValueError(f"modulation {self.kind!r}: layers {outside} outside a stack of "
                             f"{num_layers} layers")
        return sorted(set(self.layers))

    def to_dict(self):
        out = {"kind": self.kind, "sets": list(self.sets),
               "layers": list(self.layers) if isinstance(self.layers, tuple) else self.layers}
        out.update((k, list(v) if isinstance(v, tuple) else v) for k, v in self.options)
        return out

    @classmethod
    def from_dict(cls, data, source="config"):
        """From a TOML table: ``kind``, ``sets``, ``layers``; every other key is an option."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict) or "kind" not in data:
            raise ValueError(f"{source}: a modulation must be a table with a 'kind' key, "
                             f"got {data!r}")
        data = dict(data)
        kind = data.pop("kind")
        sets = data.pop("sets", ("vanilla",))
        layers = data.pop("layers", "all")
        return cls(kind=kind, sets=sets, layers=layers, options=data)
