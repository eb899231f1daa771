"""HyperGrid T5: KerasHub's ``T5Backbone`` with a HyperGrid in every layer (paper s.2.2).

KerasHub's T5 layers call their feed-forward projections internally, so the forward
pass is written here once more, reusing the backbone's sub-layers and weights
(embedding, attention projections and relative position bias, RMS norms, dropouts,
feed-forward kernels); only the modulated projections are computed differently.
Reading order, per stack::

    x = dropout(embed(ids))
    for each layer:
        h = norm1(x);  x = x + dropout(self_attention(h))       # Q/K/V: HyperGrid with "qkv"
        (decoder)      x = x + dropout(cross_attention(norm2(x), encoder_output))
        h = norm3(x);  x = x + dropout(W_o(dropout(relu(W_i h))))  # W_o: HyperGrid (ffn2)
    x = dropout(final_norm(x))
    logits = embedding^T (x · d^-0.5)                            # tied head, as T5 v1.0

With ``hypergrid=None`` this is exactly ``T5Backbone`` (the paper's "Single Model"
baseline; a test checks it against ``T5Backbone``'s output). Otherwise each modulated
projection gets its own :class:`nemot.modulation.hypergrid.HyperGrid` (grid weights;
with ``"mhsa"`` also a task embedding and an attention of its own) and is computed with
:func:`~nemot.modulation.hypergrid.grid_product` from the backbone's own kernel, so the
pretrained weights stay where KerasHub loads them. ``mode = "OG"`` is the output-gating
ablation (:class:`~nemot.modulation.hypergrid.OutputGate` on the feed-forward activation).

Conditioning T′ = MHSA([T; X])[0] (eq. 6):

- ``"self_attention"`` (the default): the layer's own self-attention, with its
  pretrained Q, K, V, O and relative position bias and no new weights, evaluated at a
  task token T (a learned embedding per task and layer) prepended to the layer input
  (T goes through the layer's first norm as every token; it sits at position 0, so X
  keeps its relative positions). X's own outputs are unchanged: only T's row is
  added, and the layer's grids all read its T′. The paper's parameter counts
  (LG ``d_m·d_r + d_c`` per layer, "negligible") leave no room for a new attention.
  With HyperGrid on Q/K/V (``"qkv"``, ``"all"``) T′ uses the unmodulated Q/K/V, since
  the grid that modulates them is computed from T′.
- ``"mhsa"``: an attention of its own per modulated projection (``heads``,
  ``key_dim``) over [T; X], X the sub-layer's input after its norm (4d² + 4d weights per
  projection; a small ``key_dim`` makes it light).

In the encoder T′ is one vector per example; in the decoder T at position i attends
to T and the decoder positions up to i only (a causal decoder must not read later
target tokens; the paper does not say what it did there), so the decoder's grids are
per position. ``"task"`` uses the task embedding alone. Decoding reruns the decoder over
the target prefix (no key/value cache), which the short GLUE/SuperGLUE targets allow.

Example:
    >>> backbone = keras_hub.models.T5Backbone.from_preset("t5_base_multi")
    >>> model = HyperGridT5(backbone, num_tasks=16,
    ...                     hypergrid={"mode": "LG", "grid": [32, 128]})
    >>> logits = model({"encoder_token_ids": ..., "encoder_padding_mask": ...,
    ...                 "decoder_token_ids": ..., "decoder_padding_mask": ...,
    ...                 "task_index": ...})
"""

import math

import keras
from keras import ops

from nemot.modulation.hypergrid import (PLACEMENTS, TASK_ATTENTION_KEY, HyperGrid, OutputGate,
                                        check_divides, grid_product)

HYPERGRID_OPTIONS = ("mode", "grid", "placement", "conditioning", "heads", "key_dim", "scalar",
                     "materialise", "residual", "initializer", "orientation")
OG_OPTIONS = ("mode", "gates", "conditioning", "heads", "key_dim")
ATTENTION = {"query": "query_projector", "key": "key_projector", "value": "value_projector"}
FEEDFORWARD = ("feedforward_intermediate_dense", "feedforward_output_dense")
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


def stack_modulations(hypergrid, num_tasks, stack, num_layers, hidden_dim, shapes, gated=False):
    """The built HyperGrids of one T5 stack: per layer ``{projection name: HyperGrid}`` or
    ``{"og": OutputGate}``. ``shapes``: each projection's kernel ``(n_in, n_out)``."""
    options = dict(hypergrid)
    _check_options(options)
    common = dict(conditioning=options.get("conditioning", CONDITIONING),
                  heads=options.get("heads", 1), key_dim=options.get("key_dim"))
    out = []
    for i in range(num_layers):
        if options.get("mode") == "OG":
            gate = OutputGate(options.get("gates"), num_tasks=num_tasks, name=f"{stack}_{i}_og",
                              **common)
            gate.build((None, None, shapes[FEEDFORWARD[0]][1]), (None, None, hidden_dim))
            out.append({"og": gate})
            continue
        placement = options.get("placement", "ffn2")
        if placement not in PLACEMENTS:
            raise ValueError(f"placement={placement!r}: expected one of {tuple(PLACEMENTS)}")
        grids = {}
        for name in PLACEMENTS[placement]:
            if name == FEEDFORWARD[0] and gated:
                raise ValueError("placement 'ffn1' on a gated T5 (v1.1: two first "
                                 "matrices) is not supported; the paper's T5 is v1.0")
            hg = HyperGrid(options.get("grid", (32, 128)), options.get("mode", "LG"),
                           num_tasks=num_tasks, scalar=options.get("scalar", False),
                           initializer=options.get("initializer"),
                           orientation=options.get("orientation", "fan"),
                           name=f"{stack}_{i}_{name}", **common)
            check_divides(hg.grid_shape, *shapes[name], who=f"HyperGrid {hg.name!r}",
                          orientation=hg.orientation)
            hg.build(hidden_dim)
            grids[name] = hg
        out.append(grids)
    return out


def task_tokens(hypergrid, num_tasks, stack, num_layers, hidden_dim):
    """Per layer the task embedding T prepended to its self-attention (conditioning
    ``"self_attention"``; uniform ±0.05 as the other task embeddings), else Nones."""
    if hypergrid is None or hypergrid.get("conditioning", CONDITIONING) != "self_attention":
        return [None] * num_layers
    tokens = []
    for i in range(num_layers):
        token = keras.layers.Embedding(num_tasks, hidden_dim, embeddings_initializer="uniform",
                                       name=f"{stack}_{i}_task_token")
        token.build((None,))
        tokens.append(token)
    return tokens


def added_parameters(sizes, num_tasks, hypergrid):
    """The weights :class:`HyperGridT5` adds to a T5 of ``sizes`` (``T5Backbone``
    arguments), counted on its HyperGrid layers alone (no T5 is built; weights are not
    allocated): ``{"total", "grids" (L_r, L_c, G_r, G_c; OG: U), "task_embeddings",
    "attention" (the separate conditioning MHSA), "hypergrids"}``."""
    counts = dict(total=0, grids=0, task_embeddings=0, attention=0, hypergrids=0)
    if hypergrid is None:
        return counts
    d, layers = sizes["hidden_dim"], sizes["num_layers"]
    inner = sizes["num_heads"] * (sizes.get("key_value_dim") or d // sizes["num_heads"])
    shapes = {**{name: (d, inner) for name in ATTENTION},
              FEEDFORWARD[0]: (d, sizes["intermediate_dim"]),
              FEEDFORWARD[1]: (sizes["intermediate_dim"], d)}
    with keras.StatelessScope():
        for stack in ("encoder", "decoder"):
            for modulations in stack_modulations(hypergrid, num_tasks, stack, layers, d, shapes,
                                                 sizes.get("use_gated_activation", True)):
                for layer in modulations.values():
                    conditioning = layer.conditioning
                    attention = conditioning.attention.count_params() \
                        if conditioning.source == "mhsa" else 0
                    embedding = math.prod(conditioning.task_embedding.shape) \
                        if conditioning.source in ("mhsa", "task") else 0
                    counts["attention"] += attention
                    counts["task_embeddings"] += embedding
                    counts["grids"] += layer.count_params() - attention - embedding
                    counts["hypergrids"] += 1
            tokens = task_tokens(hypergrid, num_tasks, stack, layers, d)
            counts["task_embeddings"] += sum(t.count_params() for t in tokens if t is not None)
    counts["total"] = counts["grids"] + counts["task_embeddings"] + counts["attention"]
    return counts


@keras.saving.register_keras_serializable(package="nemot.hypergrid")
class HyperGridT5(keras.Model):
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

    Call it on ``encoder_token_ids``, ``encoder_padding_mask``, ``decoder_token_ids``,
    ``decoder_padding_mask`` (int [B, L]) and ``task_index`` (int [B]); it returns the
    logits [B, L_dec, vocab].
    """

    def __init__(self, backbone, num_tasks, hypergrid=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(backbone, dict):
            backbone = keras.saving.deserialize_keras_object(backbone)
        self.backbone = backbone
        self.num_tasks = int(num_tasks)
        self.hypergrid = dict(hypergrid) if hypergrid is not None else None
        self.encoder_modulations = self._modulations("encoder",
                                                     backbone.encoder_transformer_layers)
        self.decoder_modulations = self._modulations("decoder",
                                                     backbone.decoder_transformer_layers)
        self.encoder_task_tokens = self._task_tokens("encoder")
        self.decoder_task_tokens = self._task_tokens("decoder")
        self.built = True  # every sub-layer is built: the backbone by KerasHub, the grids here

    def _modulations(self, stack, layers):
        """Per layer ``{projection name: HyperGrid}`` or ``{"og": OutputGate}``."""
        if self.hypergrid is None:
            return [{} for _ in layers]
        shapes = {name: tuple(self._dense(layers[0], name).kernel.shape)
                  for name in (*ATTENTION, *FEEDFORWARD)}
        return stack_modulations(self.hypergrid, self.num_tasks, stack, len(layers),
                                 self.backbone.hidden_dim, shapes,
                                 self.backbone.use_gated_activation)

    def _task_tokens(self, stack):
        return task_tokens(self.hypergrid, self.num_tasks, stack, self.backbone.num_layers,
                           self.backbone.hidden_dim)

    def _conditioning(self):
        return None if self.hypergrid is None else \
            self.hypergrid.get("conditioning", CONDITIONING)

    @staticmethod
    def _dense(layer, name):
        if name in ATTENTION:
            return getattr(layer.self_attention, ATTENTION[name])
        return layer.input_projector if name == FEEDFORWARD[0] else layer.output_projector

    # ------------------------------------------------------------------ forward

    def _project(self, dense, grid_layer, x, conditioning):
        """``dense(x)`` without its activation; with HyperGrid when ``grid_layer`` is set."""
        if grid_layer is None:
            return ops.matmul(x, ops.cast(dense.kernel, x.dtype))
        return grid_product(x, dense.kernel, grid_layer.over_kernel(conditioning),
                            self.hypergrid.get("residual", True),
                            self.hypergrid.get("materialise", False))

    @staticmethod
    def _mask_bias(mask):
        """Additive -1e9 where ``mask`` [B, q, k] is False: [B, 1, q, k]."""
        return (1.0 - ops.cast(mask, "float32")[:, None]) * -1e9

    @staticmethod
    def _heads(attention, y):
        """[B, L, heads·size] -> [B, L, heads, size]."""
        return ops.reshape(y, (ops.shape(y)[0], -1, attention.num_heads,
                               attention.key_value_dim))

    @staticmethod
    def _attend(attention, q, k, v, bias, training):
        """softmax(q kᵀ + bias) v and the output projection (T5: no 1/√d scaling)."""
        scores = ops.einsum("bqnd,bknd->bnqk", q, k) + ops.cast(bias, q.dtype)
        weights = attention.dropout_layer(ops.nn.softmax(scores, axis=-1), training=training)
        out = ops.einsum("bnqk,bknd->bqnd", weights, v)
        shape = ops.shape(out)
        return attention.output_projector(ops.reshape(out, (shape[0], shape[1], -1)))

    def _attention(self, attention, x, kv, bias, grids, conditioning, training, plain=None):
        """T5MultiHeadAttention's computation with optionally modulated Q/K/V; ``plain``:
        unmodulated projections of ``kv`` already computed."""
        def project(name, inputs):
            if grids.get(name) is None and plain and name in plain:
                return plain[name]
            dense = getattr(attention, ATTENTION[name])
            y = self._project(dense, grids.get(name), inputs, conditioning) \
                if grids.get(name) is not None else dense(inputs)
            return self._heads(attention, y)

        q, k, v = project("query", x), project("key", kv), project("value", kv)
        return self._attend(attention, q, k, v, bias, training)

    def _plain_key_value(self, attention, h):
        """The unmodulated keys and values of ``h``: [B, L, heads, size] each."""
        return {name: self._heads(attention, self._project(getattr(attention, ATTENTION[name]),
                                                           None, h, None))
                for name in ("key", "value")}

    def _task_attention(self, layer, task, h, mask, task_bias, training, plain=None):
        """T′ = MHSA([T; X])[0] with the layer's own self-attention at the task token
        ``task`` [B, d] prepended to its input ``h`` (after the layer's norm; eq. 6,
        ``conditioning = "self_attention"``), unmodulated weights: [B, d] for a key mask
        ``mask`` [B, 1, L], [B, L, d] for a causal one.

        ``task_bias``: the relative position bias of position 0 over positions 0..L
        [1, heads, 1, L+1] (:meth:`_task_bias`); ``plain``: ``h``'s keys and values, if
        already computed.
        """
        attention = layer.self_attention
        plain = plain or self._plain_key_value(attention, h)
        t = layer.self_attention_layer_norm(ops.cast(task, h.dtype)[:, None, :])
        q, k, v = (self._heads(attention, self._project(getattr(attention, ATTENTION[name]),
                                                        None, t, None))
                   for name in ("query", "key", "value"))
        visible = ops.concatenate([ops.ones_like(mask[..., :1]), mask], axis=-1)
        q = ops.broadcast_to(q, (ops.shape(q)[0], ops.shape(mask)[1], *q.shape[2:]))
        out = self._attend(attention, q, ops.concatenate([k, plain["key"]], axis=1),
                           ops.concatenate([v, plain["value"]], axis=1),
                           task_bias + self._mask_bias(visible), training)
        return out[:, 0] if mask.shape[1] == 1 else out

    def _feedforward(self, layer, mods, x, conditioning, training):
        activation = layer.input_projector.activation
        if "og" in mods:
            def gated(h):
                h = activation(h)
                return h * layer.gate_projector(x) if layer.use_gated_activation else h
            h = mods["og"](self._project(layer.input_projector, None, x, None), x,
                           conditioning=conditioning, activation=gated, training=training)
        else:
            grid = mods.get("feedforward_intermediate_dense")
            h = layer.input_projector(x) if grid is None else activation(
                self._project(layer.input_projector, grid, x, conditioning))
            if layer.use_gated_activation:
                h = h * layer.gate_projector(x)
        h = layer.dropout_layer(h, training=training)
        grid = mods.get("feedforward_output_dense")
        return layer.output_projector(h) if grid is None else self._project(
            layer.output_projector, grid, h, conditioning)

    def _layer(self, layer, mods, x, self_bias, mask, task_index, training, cross=None,
               task_token=None, task_bias=None):
        h = layer.self_attention_layer_norm(x)
        attention, plain, shared = layer.self_attention, None, {}
        if task_token is not None:  # T′ from this layer's self-attention
            plain = self._plain_key_value(attention, h)
            shared[TASK_ATTENTION_KEY] = self._task_attention(
                layer, task_token(task_index), h, mask, task_bias, training, plain)

        def conditioning(sequence):
            return {"task_index": task_index, "sequence": sequence, "sequence_mask": mask,
                    **shared}

        attended = self._attention(attention, h, h, self_bias, mods, conditioning(h), training,
                                   plain)
        x = x + layer.self_attention_dropout(attended, training=training)
        if cross is not None:
            encoder_output, cross_bias = cross
            h = layer.cross_attention_layer_norm(x)
            attended = self._attention(layer.cross_attention, h, encoder_output, cross_bias, {},
                                       None, training)
            x = x + layer.cross_attention_dropout(attended, training=training)
        h = layer.layer_norm(x)
        return x + layer.dropout_layer(self._feedforward(layer, mods, h, conditioning(h), training),
                                       training=training)

    def _task_bias(self, attention, length):
        """Relative position bias of a task token at position 0 before ``length`` tokens
        [1, heads, 1, length + 1], or None when no grid reads the layer's self-attention."""
        if self._conditioning() != "self_attention":
            return None
        return attention.compute_bias(length + 1, length + 1)[:, :, :1, :]

    def encode(self, token_ids, padding_mask, task_index, training=None):
        """The encoder output [B, L, d]."""
        bb = self.backbone
        mask = ops.cast(padding_mask, "bool")[:, None, :]  # [B, 1, L]: bidirectional
        x = bb.encoder_embedding_dropout(bb.token_embedding(token_ids), training=training)
        length = ops.shape(token_ids)[1]
        first = bb.encoder_transformer_layers[0].self_attention
        bias = first.compute_bias(length, length) + self._mask_bias(mask)
        task_bias = self._task_bias(first, length)
        for layer, mods, token in zip(bb.encoder_transformer_layers, self.encoder_modulations,
                                      self.encoder_task_tokens):
            x = self._layer(layer, mods, x, bias, mask, task_index, training, None, token,
                            task_bias)
        return bb.encoder_dropout(bb.encoder_layer_norm(x), training=training)

    def decode(self, encoder_output, encoder_padding_mask, token_ids, padding_mask, task_index,
               training=None):
        """The decoder output [B, L_dec, d] (teacher forcing over ``token_ids``)."""
        bb = self.backbone
        length = ops.shape(token_ids)[1]
        positions = ops.arange(length)
        causal = positions[:, None] >= positions[None, :]
        mask = ops.logical_and(causal[None], ops.cast(padding_mask, "bool")[:, None, :])
        encoder_mask = ops.cast(encoder_padding_mask, "bool")[:, None, :]
        x = bb.decoder_embedding_dropout(bb.token_embedding(token_ids), training=training)
        first = bb.decoder_transformer_layers[0].self_attention
        bias = first.compute_bias(length, length) + self._mask_bias(mask)
        task_bias = self._task_bias(first, length)
        cross = (encoder_output, self._mask_bias(encoder_mask))
        for layer, mods, token in zip(bb.decoder_transformer_layers, self.decoder_modulations,
                                      self.decoder_task_tokens):
            x = self._layer(layer, mods, x, bias, mask, task_index, training, cross, token,
                            task_bias)
        return bb.decoder_dropout(bb.decoder_layer_norm(x), training=training)

    def logits(self, decoder_output):
        """The LM head (T5 rescales by d^-0.5 when the head is the tied embedding)."""
        bb = self.backbone
        if bb.tie_embedding_weights:
            decoder_output = decoder_output * ops.cast(bb.hidden_dim ** -0.5,
                                                       decoder_output.dtype)
        return bb.token_embedding(decoder_output, reverse=True)

    def call(self, inputs, training=None):
        task_index = ops.cast(inputs["task_index"], "int32")
        encoder_output = self.encode(inputs["encoder_token_ids"], inputs["encoder_padding_mask"],
                                     task_index, training)
        decoder_output = self.decode(encoder_output, inputs["encoder_padding_mask"],
                                     inputs["decoder_token_ids"], inputs["decoder_padding_mask"],
                                     task_index, training)
        return self.logits(decoder_output)

    def get_config(self):
        return {"backbone": keras.saving.serialize_keras_object(self.backbone),
                "num_tasks": self.num_tasks, "hypergrid": self.hypergrid, "name": self.name}
