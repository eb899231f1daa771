"""HyperGrid T5 (paper s.2.2): KerasHub's ``T5Backbone`` with a HyperGrid in every layer,
as ``[[model.modulation]]`` specs on :class:`nemot.hosts.t5.ModulatedT5`.

The paper's options (``hypergrid`` in the configs) become one spec for both stacks:
kind ``"hypergrid"`` (:class:`nemot.modulation.hypergrid.HyperGridDense`: Q/K/V and the
feed-forward matrices of every layer, by ``placement``), or ``"hypergrid_og"`` for
``mode = "OG"``, the output-gating ablation (:class:`~nemot.modulation.hypergrid.
OutputGate` on the feed-forward activation). Each modulated projection reads the
backbone's own kernel (pretrained weights stay where KerasHub loads them) and adds only
its grid weights. With ``hypergrid=None`` the model is ``T5Backbone`` (the "Single
Model" baseline).

Conditioning T′ = MHSA([T; X])[0] (eq. 6), ``conditioning``:

- ``"self_attention"`` (the default): the layer's own self-attention, its pretrained
  Q, K, V, O and relative position bias and no new weights, at a task token T (a learned
  embedding per task and layer) prepended to the layer input (T goes through the
  layer's first norm as every token; it sits at position 0, so X keeps its relative
  positions); X's own outputs are unchanged and all the layer's grids read T′. The
  paper's parameter counts (LG ``d_m·d_r + d_c`` per layer, "negligible") leave no room
  for a new attention. With HyperGrid on Q/K/V T′ uses the unmodulated Q/K/V.
- ``"mhsa"``: an attention of its own per modulated projection (``heads``, ``key_dim``)
  over [T; X], X the sub-layer's input after its norm (4d² + 4d weights per
  projection; a small ``key_dim`` makes it light).
- ``"task"``: the task embedding alone.

In the encoder T′ is one vector per example; in the decoder T at position i attends to
T and the decoder positions up to i only (a causal decoder must not read later target
tokens; the paper does not say what it did there), so the decoder's grids are per
position. Decoding reruns the decoder over the target prefix (no key/value cache),
which the short GLUE/SuperGLUE targets allow.

Example:
    >>> backbone = keras_hub.models.T5Backbone.from_preset("t5_base_multi")
    >>> model = HyperGridT5(backbone, num_tasks=16,
    ...                     hypergrid={"mode": "LG", "grid": [32, 128]})
"""

import math

import keras

from nemot.hosts.t5 import ModulatedT5
from nemot.modulation.base import HOST_KEYS
from nemot.modulation.hypergrid import HyperGridDense
from nemot.modulation.spec import ModulationSpec
from nemot.modulation.stack import stack_modulations

HYPERGRID_OPTIONS = ("mode", "grid", "placement", "conditioning", "heads", "key_dim", "scalar",
                     "materialise", "residual", "initializer", "orientation")
OG_OPTIONS = ("mode", "gates", "conditioning", "heads", "key_dim")
STACKS = ("encoder", "decoder")
CONDITIONING = "self_attention"  # the default: the layer's own self-attention (eq. 6)


def _check_options(hypergrid):
    allowed = OG_OPTIONS if hypergrid.get("mode") == "OG" else HYPERGRID_OPTIONS
    unknown = sorted(set(hypergrid) - set(allowed))
    if unknown:
        raise ValueError(f"hypergrid options {unknown}: expected some of {list(allowed)} "
                         f"(mode {hypergrid.get('mode', 'LG')!r})")
    conditioning = hypergrid.get("conditioning", CONDITIONING)
    if conditioning == "context":
        raise ValueError("hypergrid conditioning='context' needs NeMoT's neuromodulatory "
                         "output; T5 offers 'self_attention', 'mhsa' or 'task'")
    sizes = sorted({"heads", "key_dim"} & set(hypergrid))
    if sizes and conditioning != "mhsa":
        raise ValueError(f"hypergrid options {sizes} size the separate attention of "
                         f"conditioning='mhsa'; conditioning={conditioning!r} has none")


def hypergrid_spec(hypergrid):
    """The :class:`ModulationSpec` of the paper's ``hypergrid`` options (None: none)."""
    if hypergrid is None:
        return None
    options = dict(hypergrid)
    _check_options(options)
    options = {"conditioning": CONDITIONING, **options}
    if options.pop("mode", "LG") == "OG":
        return ModulationSpec("hypergrid_og", sets=STACKS, options=options)
    return ModulationSpec("hypergrid", sets=STACKS,
                          options={"mode": hypergrid.get("mode", "LG"), "grid": (32, 128),
                                   **options})


def added_parameters(sizes, num_tasks, hypergrid):
    """The weights :class:`HyperGridT5` adds to a T5 of ``sizes`` (``T5Backbone``
    arguments), counted on its HyperGrid layers alone (no T5 is built; weights are not
    allocated): ``{"total", "grids" (L_r, L_c, G_r, G_c; OG: U), "task_embeddings",
    "attention" (the separate conditioning MHSA), "hypergrids"}``."""
    counts = dict(total=0, grids=0, task_embeddings=0, attention=0, hypergrids=0)
    spec = hypergrid_spec(hypergrid)
    if spec is None:
        return counts
    d, f, layers = sizes["hidden_dim"], sizes["intermediate_dim"], sizes["num_layers"]
    inner = sizes["num_heads"] * (sizes.get("key_value_dim") or d // sizes["num_heads"])
    shapes = {"query": (d, inner), "key": (d, inner), "value": (d, inner),
              "feedforward_intermediate_dense": (d, f), "feedforward_output_dense": (f, d)}
    with keras.StatelessScope():
        for stack in STACKS:
            per_layer, _ = stack_modulations([spec], stack, layers, num_tasks, d, HOST_KEYS)
            for modulations, replacements in per_layer:
                hosted = []
                for role, make in replacements.items():
                    dense = make(equation="abc,cd->abd", output_shape=(None, shapes[role][1]),
                                 name=role)
                    dense.build((None, None, shapes[role][0]))
                    hosted.append(dense.hypergrid)
                for gate in modulations:  # OG
                    gate.build((None, None, f), (None, None, d))
                    hosted.append(gate)
                for layer in hosted:
                    conditioning = layer.conditioning
                    attention = conditioning.attention.count_params() \
                        if conditioning.source == "mhsa" else 0
                    embedding = math.prod(conditioning.task_embedding.shape) \
                        if conditioning.source in ("mhsa", "task") else 0
                    counts["attention"] += attention
                    counts["task_embeddings"] += embedding
                    counts["grids"] += layer.count_params() - attention - embedding
                    counts["hypergrids"] += 1
            if spec.kwargs["conditioning"] == "self_attention":  # a task token per layer
                counts["task_embeddings"] += layers * num_tasks * d
    counts["total"] = counts["grids"] + counts["task_embeddings"] + counts["attention"]
    return counts


@keras.saving.register_keras_serializable(package="nemot.hypergrid")
class HyperGridT5(ModulatedT5):
    """T5 with HyperGrid weight gating, or plain T5 when ``hypergrid`` is None.

    Args:
        backbone: a ``keras_hub.models.T5Backbone`` (or its serialised config).
        num_tasks: tasks of the task embeddings (the mixture's tasks).
        hypergrid: None, or the options: ``mode`` (``"L2"``, ``"LG"``, ``"GL"``, ``"L"``, or
            ``"OG"`` for output gating), ``grid`` [d_r, d_c], ``placement`` (``"ffn2"``,
            ``"ffn1"``, ``"ffn"``, ``"qkv"``, ``"all"``; Q/K/V of the self-attentions),
            ``conditioning`` (``"self_attention"``, ``"mhsa"`` or ``"task"``), ``heads`` and
            ``key_dim`` (of the ``"mhsa"`` attention), ``scalar``, ``materialise``,
            ``residual``, ``initializer``, ``orientation`` (``"fan"`` or ``"eq3"``);
            OG: ``gates``, ``conditioning``, ``heads``, ``key_dim``.

    Inputs and output as :class:`nemot.hosts.t5.ModulatedT5`.
    """

    def __init__(self, backbone, num_tasks, hypergrid=None, **kwargs):
        spec = hypergrid_spec(hypergrid)
        super().__init__(backbone, num_tasks, [spec] if spec else [], **kwargs)
        self.hypergrid = dict(hypergrid) if hypergrid is not None else None

    def get_config(self):
        return {"backbone": keras.saving.serialize_keras_object(self.backbone),
                "num_tasks": self.num_tasks, "hypergrid": self.hypergrid, "name": self.name}
