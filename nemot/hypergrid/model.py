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
projection gets its own :class:`nemot.modulation.hypergrid.HyperGrid` (task embedding,
conditioning MHSA, grid weights) and is computed with
:func:`~nemot.modulation.hypergrid.grid_product` from the backbone's own kernel, so the
pretrained weights stay where KerasHub loads them. ``mode = "OG"`` is the output-gating
ablation (:class:`~nemot.modulation.hypergrid.OutputGate` on the feed-forward activation).

Conditioning T′ (``conditioning = "mhsa"``, the paper): the attention reads the
sub-layer's input (after its norm). In the encoder it is the paper's
``MHSA([T; X])[0]``, one vector per example; in the decoder each position attends to
T and the decoder positions up to itself only (a causal decoder must not read later
target tokens; the paper does not say what it did there), so the decoder's grids are
per position. ``"task"`` uses the task embedding alone. Decoding reruns the decoder over
the target prefix (no key/value cache), which the short GLUE/SuperGLUE targets allow.

Example:
    >>> backbone = keras_hub.models.T5Backbone.from_preset("t5_base_multi")
    >>> model = HyperGridT5(backbone, num_tasks=16,
    ...                     hypergrid={"mode": "LG", "grid": [32, 128], "heads": 12})
    >>> logits = model({"encoder_token_ids": ..., "encoder_padding_mask": ...,
    ...                 "decoder_token_ids": ..., "decoder_padding_mask": ...,
    ...                 "task_index": ...})
"""

import keras
from keras import ops

from nemot.modulation.hypergrid import (PLACEMENTS, HyperGrid, OutputGate, check_divides,
                                        grid_product)

HYPERGRID_OPTIONS = ("mode", "grid", "placement", "conditioning", "heads", "key_dim", "scalar",
                     "materialise", "residual", "initializer")
OG_OPTIONS = ("mode", "gates", "conditioning", "heads", "key_dim")
ATTENTION = {"query": "query_projector", "key": "key_projector", "value": "value_projector"}


def _check_options(hypergrid):
    allowed = OG_OPTIONS if hypergrid.get("mode") == "OG" else HYPERGRID_OPTIONS
    unknown = sorted(set(hypergrid) - set(allowed))
    if unknown:
        raise ValueError(f"hypergrid options {unknown}: expected some of {list(allowed)} "
                         f"(mode {hypergrid.get('mode', 'LG')!r})")
    if hypergrid.get("conditioning", "mhsa") == "context":
        raise ValueError("hypergrid conditioning='context' needs NeMoT's neuromodulatory "
                         "output; T5 offers 'mhsa' (the paper) or 'task'")


@keras.saving.register_keras_serializable(package="nemot.hypergrid")
class HyperGridT5(keras.Model):
    """T5 with HyperGrid weight gating, or plain T5 when ``hypergrid`` is None.

    Args:
        backbone: a ``keras_hub.models.T5Backbone`` (or its serialised config).
        num_tasks: tasks of the task embeddings (the mixture's tasks).
        hypergrid: None, or the options: ``mode`` (``"L2"``, ``"LG"``, ``"GL"``, ``"L"``, or
            ``"OG"`` for output gating), ``grid`` [d_r, d_c], ``placement`` (``"ffn2"``,
            ``"ffn1"``, ``"ffn"``, ``"qkv"``, ``"all"``; Q/K/V of the self-attentions),
            ``conditioning`` (``"mhsa"`` or ``"task"``), ``heads`` and ``key_dim`` (of the
            conditioning MHSA), ``scalar``, ``materialise``, ``residual``, ``initializer``;
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
        self.built = True  # every sub-layer is built: the backbone by KerasHub, the grids here

    def _modulations(self, stack, layers):
        """Per layer ``{projection name: HyperGrid}`` or ``{"og": OutputGate}``."""
        if self.hypergrid is None:
            return [{} for _ in layers]
        options = dict(self.hypergrid)
        _check_options(options)
        d = self.backbone.hidden_dim
        common = dict(conditioning=options.get("conditioning", "mhsa"),
                      heads=options.get("heads", 1), key_dim=options.get("key_dim"))
        out = []
        for i, layer in enumerate(layers):
            if options.get("mode") == "OG":
                gate = OutputGate(options.get("gates"), num_tasks=self.num_tasks,
                                  name=f"{stack}_{i}_og", **common)
                gate.build((None, None, layer.input_projector.units), (None, None, d))
                out.append({"og": gate})
                continue
            placement = options.get("placement", "ffn2")
            if placement not in PLACEMENTS:
                raise ValueError(f"placement={placement!r}: expected one of {tuple(PLACEMENTS)}")
            grids = {}
            for name in PLACEMENTS[placement]:
                if name == "feedforward_intermediate_dense" and self.backbone.use_gated_activation:
                    raise ValueError("placement 'ffn1' on a gated T5 (v1.1: two first "
                                     "matrices) is not supported; the paper's T5 is v1.0")
                n_in, n_out = self._dense(layer, name).kernel.shape
                hg = HyperGrid(options.get("grid", (32, 128)), options.get("mode", "LG"),
                               num_tasks=self.num_tasks, scalar=options.get("scalar", False),
                               initializer=options.get("initializer"),
                               name=f"{stack}_{i}_{name}", **common)
                check_divides(hg.grid_shape, n_in, n_out, who=f"HyperGrid {hg.name!r}")
                hg.build(d)
                grids[name] = hg
            out.append(grids)
        return out

    @staticmethod
    def _dense(layer, name):
        if name in ATTENTION:
            return getattr(layer.self_attention, ATTENTION[name])
        return layer.input_projector if name == "feedforward_intermediate_dense" \
            else layer.output_projector

    # ------------------------------------------------------------------ forward

    def _project(self, dense, grid_layer, x, conditioning):
        """``dense(x)`` without its activation; with HyperGrid when ``grid_layer`` is set."""
        if grid_layer is None:
            return ops.matmul(x, ops.cast(dense.kernel, x.dtype))
        return grid_product(x, dense.kernel, grid_layer.grid(conditioning),
                            self.hypergrid.get("residual", True),
                            self.hypergrid.get("materialise", False))

    @staticmethod
    def _mask_bias(mask):
        """Additive -1e9 where ``mask`` [B, q, k] is False: [B, 1, q, k]."""
        return (1.0 - ops.cast(mask, "float32")[:, None]) * -1e9

    def _attention(self, attention, x, kv, bias, grids, conditioning, training):
        """T5MultiHeadAttention's computation with optionally modulated Q/K/V."""
        heads, size = attention.num_heads, attention.key_value_dim
        batch = ops.shape(x)[0]

        def project(name, inputs):
            dense = getattr(attention, ATTENTION[name])
            y = self._project(dense, grids.get(name), inputs, conditioning) \
                if grids.get(name) is not None else dense(inputs)
            return ops.reshape(y, (batch, -1, heads, size))

        q, k, v = project("query", x), project("key", kv), project("value", kv)
        scores = ops.einsum("bqnd,bknd->bnqk", q, k) + ops.cast(bias, q.dtype)
        weights = attention.dropout_layer(ops.nn.softmax(scores, axis=-1), training=training)
        out = ops.reshape(ops.einsum("bnqk,bknd->bqnd", weights, v),
                          (batch, -1, heads * size))
        return attention.output_projector(out)

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

    def _layer(self, layer, mods, x, self_bias, mask, task_index, training, cross=None):
        def conditioning(sequence):
            return {"task_index": task_index, "sequence": sequence, "sequence_mask": mask}

        h = layer.self_attention_layer_norm(x)
        attended = self._attention(layer.self_attention, h, h, self_bias, mods, conditioning(h),
                                   training)
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

    def encode(self, token_ids, padding_mask, task_index, training=None):
        """The encoder output [B, L, d]."""
        bb = self.backbone
        mask = ops.cast(padding_mask, "bool")[:, None, :]  # [B, 1, L]: bidirectional
        x = bb.encoder_embedding_dropout(bb.token_embedding(token_ids), training=training)
        length = ops.shape(token_ids)[1]
        bias = bb.encoder_transformer_layers[0].self_attention.compute_bias(length, length) \
            + self._mask_bias(mask)
        for layer, mods in zip(bb.encoder_transformer_layers, self.encoder_modulations):
            x = self._layer(layer, mods, x, bias, mask, task_index, training)
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
        bias = bb.decoder_transformer_layers[0].self_attention.compute_bias(length, length) \
            + self._mask_bias(mask)
        cross = (encoder_output, self._mask_bias(encoder_mask))
        for layer, mods in zip(bb.decoder_transformer_layers, self.decoder_modulations):
            x = self._layer(layer, mods, x, bias, mask, task_index, training, cross)
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
