"""The modulation host on every backbone: a description per backbone family of where its
transformer layer keeps its sub-layers, and :class:`HostedLayer`, which hosts the sites of
:mod:`nemot.modulation.base` on such a layer, reusing its own sub-layers and weights.

As the adapters library's model interface, a :class:`BackboneHost` names each role by
the attribute path of the sub-layer that plays it:

==============================  =====================  ================================  =========================
role                            NeMoT                  KerasHub BERT                     KerasHub T5
                                ``TransformerLayer``   (``TransformerEncoder``)          (``T5TransformerLayer``)
==============================  =====================  ================================  =========================
residual order                  either (attribute)     post-LN                           pre-LN (RMS norms)
``attention``                   ``self_attention``     ``_self_attention_layer``         ``self_attention``
``query`` / ``key`` / ``value``  ``….query_dense`` …    ``…._query_dense`` …              ``….query_projector`` …
``attention_norm``              ``self_attention_``    ``_self_attention_layer_norm``    ``self_attention_layer_``
                                ``layer_norm``                                           ``norm``
``attention_dropout``           (seeded function)      ``_self_attention_dropout``       ``self_attention_dropout``
``feedforward_norm``            ``feedforward_``       ``_feedforward_layer_norm``       ``layer_norm``
                                ``layer_norm``
``feedforward_intermediate_``   ``feedforward_``       ``_feedforward_intermediate_``    ``input_projector`` (its
``dense`` (its activation)      ``intermediate_dense`` ``dense``                         ``gate_projector``: v1.1)
``feedforward_output_dense``    ``feedforward_``       ``_feedforward_output_dense``     ``output_projector``
                                ``output_dense``
``feedforward_dropout``         (seeded function)      ``_feedforward_dropout``          ``dropout_layer`` (also
                                                                                         between the matrices)
==============================  =====================  ================================  =========================

NeMoT's :class:`nemot.layers.TransformerLayer` hosts the sites natively (its description
is for reading and tests). For a KerasHub layer, :func:`host_stack` builds one
:class:`HostedLayer` per layer of a stack from the ``[[model.modulation]]`` specs: an
unmodulated layer runs KerasHub's own ``call``; a modulated one runs the layer's own
sub-layers in the description's residual order, with

- ``parallel`` terms of the layer input (after the first norm in a pre-LN layer) added to
  the feed-forward residual sum (post-LN: inside the second norm);
- the ``activation`` modulation in place of the feed-forward nonlinearity (times T5
  v1.1's gate);
- ``dense`` modulations in place of named projections, reading the backbone's own kernel
  and bias (``source=``), and computing the attention from the projected heads with the
  attention layer's own pieces (:meth:`BackboneHost.attend`);
- ``output`` modulations applied to the layer's output.

The conditioning is the model's (``task_index``, ...) plus :data:`base.HOST_KEYS`:
``sequence``/``sequence_mask`` and, when a hosted modulation reads it, ``task_attention``:
the layer's self-attention, its weights unchanged, at a task token T (a learned
embedding per task, owned by the hosted layer) prepended to its input (HyperGrid's
T′ = MHSA([T; X])[0], eq. 6); T′ uses the unmodulated Q/K/V.

Adding a backbone: subclass :class:`BackboneHost`, name its roles in :attr:`parts`,
implement :meth:`attend` (and :meth:`heads` when its projections give [B, L, heads·size])
and :meth:`plain_call`; then write the model around it (embeddings, the stacks of
:func:`host_stack`, the head), as :mod:`nemot.hosts.bert` and :mod:`nemot.hosts.t5` do.
"""

import keras
from keras import ops

from nemot import dropout as drop
from nemot.modulation import modulation_class
from nemot.modulation.base import (HOST_KEYS, SEQUENCE_KEYS, TASK_ATTENTION_KEY, parallel_sum,
                                   require)
from nemot.modulation.stack import stack_modulations

ROLES = ("attention", "query", "key", "value", "attention_output", "attention_norm",
         "attention_dropout",
         "feedforward_norm", "feedforward_intermediate_dense", "feedforward_gate",
         "feedforward_inner_dropout", "feedforward_output_dense", "feedforward_dropout")


def mask_bias(mask):
    """Additive -1e9 where ``mask`` [B, q, k] is False: [B, 1, q, k]."""
    return (1.0 - ops.cast(mask, "float32")[:, None]) * -1e9


class BackboneHost:
    """Where a backbone family's transformer layer keeps its sub-layers (module docstring).

    Attributes:
        name: the family.
        normalize_first: True: pre-LN (``x + f(LN(x))``); False: post-LN (``LN(x + f(x))``).
        parts: ``{role: attribute path on the layer}`` for the roles of :data:`ROLES` it has.
    """

    name = ""
    normalize_first = False
    parts = {}

    def pre_ln(self, layer):
        """Whether ``layer`` normalises first (pre-LN) or last (post-LN)."""
        return self.normalize_first

    def part(self, layer, role):
        """The sub-layer of ``layer`` playing ``role`` (None if the layer has none)."""
        target = layer
        for attribute in self.parts.get(role, "").split(".") if role in self.parts else ():
            target = getattr(target, attribute, None)
        return None if target is layer else target

    def heads(self, attention, y):
        """A Q/K/V projection's output as [B, L, heads, size]."""
        return y

    def attend(self, attention, q, k, v, mask, training, position_bias=None):
        """The attention's output from projected heads: [B, Lq, d]."""
        raise NotImplementedError

    def plain_call(self, layer, x, mask, training, stack):
        """The layer's own ``call``: no modulation."""
        raise NotImplementedError

    def cross_attention(self, layer, x, training, stack):
        """A decoder layer's cross-attention block (residual included); others: ``x``."""
        return x


class NeMoTHost(BackboneHost):
    """:class:`nemot.layers.TransformerLayer`: hosts the sites itself."""

    name = "nemot"
    parts = {"attention": "self_attention", "query": "self_attention.query_dense",
             "key": "self_attention.key_dense", "value": "self_attention.value_dense",
             "attention_output": "self_attention.output_dense",
             "attention_norm": "self_attention_layer_norm",
             "feedforward_norm": "feedforward_layer_norm",
             "feedforward_intermediate_dense": "feedforward_intermediate_dense",
             "feedforward_output_dense": "feedforward_output_dense"}

    def pre_ln(self, layer):
        return layer.normalize_first


class BertHost(BackboneHost):
    """KerasHub's ``TransformerEncoder`` as ``BertBackbone`` builds it (post-LN)."""

    name = "bert"
    normalize_first = False
    parts = {"attention": "_self_attention_layer",
             "query": "_self_attention_layer._query_dense",
             "key": "_self_attention_layer._key_dense",
             "value": "_self_attention_layer._value_dense",
             "attention_output": "_self_attention_layer._output_dense",
             "attention_norm": "_self_attention_layer_norm",
             "attention_dropout": "_self_attention_dropout",
             "feedforward_norm": "_feedforward_layer_norm",
             "feedforward_intermediate_dense": "_feedforward_intermediate_dense",
             "feedforward_output_dense": "_feedforward_output_dense",
             "feedforward_dropout": "_feedforward_dropout"}

    def attend(self, attention, q, k, v, mask, training, position_bias=None):
        # Keras' MultiHeadAttention: its own scaled, masked softmax, dropout and output.
        out, _ = attention._compute_attention(q, k, v, ops.cast(mask, "bool"), training)
        return attention._output_dense(out)

    def plain_call(self, layer, x, mask, training, stack):
        return layer(x, attention_mask=mask, training=training)


class T5Host(BackboneHost):
    """KerasHub's ``T5TransformerLayer`` (pre-LN with RMS norms; relative position bias
    from the stack, ``stack["position_bias"]``; decoders: cross-attention over
    ``stack["encoder_output"]`` with ``stack["encoder_mask"]``)."""

    name = "t5"
    normalize_first = True
    parts = {"attention": "self_attention", "query": "self_attention.query_projector",
             "key": "self_attention.key_projector", "value": "self_attention.value_projector",
             "attention_output": "self_attention.output_projector",
             "attention_norm": "self_attention_layer_norm",
             "attention_dropout": "self_attention_dropout", "feedforward_norm": "layer_norm",
             "feedforward_intermediate_dense": "input_projector",
             "feedforward_gate": "gate_projector", "feedforward_inner_dropout": "dropout_layer",
             "feedforward_output_dense": "output_projector",
             "feedforward_dropout": "dropout_layer"}

    def heads(self, attention, y):
        return ops.reshape(y, (ops.shape(y)[0], ops.shape(y)[1], attention.num_heads,
                               attention.key_value_dim))

    def attend(self, attention, q, k, v, mask, training, position_bias=None):
        # T5MultiHeadAttention's computation (no 1/sqrt(d) scaling); KerasHub gives no
        # method that starts from projected heads.
        bias = mask_bias(mask) if position_bias is None else position_bias + mask_bias(mask)
        scores = ops.einsum("bqnd,bknd->bnqk", q, k) + ops.cast(bias, q.dtype)
        weights = attention.dropout_layer(ops.nn.softmax(scores, axis=-1), training=training)
        out = ops.einsum("bnqk,bknd->bqnd", weights, v)
        shape = ops.shape(out)
        return attention.output_projector(ops.reshape(out, (shape[0], shape[1], -1)))

    def plain_call(self, layer, x, mask, training, stack):
        return layer(x, position_bias=stack["position_bias"] + mask_bias(mask),
                     encoder_hidden_states=stack.get("encoder_output"),
                     encoder_attention_mask=stack.get("encoder_mask"), training=training)[0]

    def cross_attention(self, layer, x, training, stack):
        if not layer.is_decoder:
            return x
        attended, _, _ = layer.cross_attention(
            layer.cross_attention_layer_norm(x), key_value_states=stack["encoder_output"],
            mask=stack["encoder_mask"], training=training)
        return x + layer.cross_attention_dropout(attended, training=training)


NEMOT, BERT, T5 = NeMoTHost(), BertHost(), T5Host()


def _projection_args(dense):
    """The ``DenseModulation`` arguments that mirror a Keras ``Dense``/``EinsumDense``."""
    if isinstance(dense, keras.layers.EinsumDense):
        return dict(equation=dense.equation, output_shape=(None, *dense.full_output_shape[2:]),
                    bias_axes=dense.bias_axes)
    return dict(equation="abc,cd->abd", output_shape=(None, dense.units),
                bias_axes="d" if dense.use_bias else None)


def _linear(dense, x):
    """``dense(x)`` without its activation (a Keras ``Dense``)."""
    y = ops.matmul(x, ops.cast(dense.kernel, x.dtype))
    return y if dense.bias is None else ops.add(y, ops.cast(dense.bias, x.dtype))


class HostedLayer(keras.layers.Layer):
    """A backbone's transformer layer hosting modulations (see the module docstring).

    The wrapped layer is not tracked here: its weights stay the backbone's, which the model
    holds. This layer owns the modulations (and a task token when one reads
    ``task_attention``).

    Args:
        layer: the backbone's layer.
        host: its :class:`BackboneHost`.
        modulations: ``parallel``, ``activation`` and ``output`` modulations.
        dense_replacements: ``{role: factory}`` of the dense-site ones
            (:func:`nemot.modulation.stack.stack_modulations`).
        num_tasks: rows of the task token.
        task_token: give the modulations ``task_attention``.
        activation: the feed-forward nonlinearity, in place of the layer's own (None: its
            own).

    Call it on ``x`` [B, L, d] and a bool ``attention_mask`` ([B, 1, L]: a key mask,
    bidirectional; [B, L, L]: causal), with the model's ``conditioning`` and the stack's
    tensors ``stack`` (T5: position bias, encoder output).
    """

    def __init__(self, layer, host, modulations=(), dense_replacements=None, num_tasks=1,
                 task_token=False, activation=None, **kwargs):
        super().__init__(dtype=layer.dtype_policy, **kwargs)
        object.__setattr__(self, "layer", layer)  # not tracked: the backbone's
        self.host = host
        modulations = list(modulations)
        if sum(m.site == "activation" for m in modulations) > 1:
            raise ValueError(f"{self.name}: at most one activation modulation per layer")
        self.parallel = [m for m in modulations if m.site == "parallel"]
        self.activation_modulation = next(
            (m for m in modulations if m.site == "activation"), None)
        self.output_modulations = [m for m in modulations if m.site == "output"]
        self.dense_replacements = dict(dense_replacements or {})
        self.num_tasks = int(num_tasks)
        self.wants_task_token = bool(task_token)
        self.task_token = None
        self.activation = activation
        self.plain = not (self.parallel or self.activation_modulation or task_token
                          or self.dense_replacements or activation is not None)
        self.seed_generator = drop.seed_generator(any(m.draws_dropout for m in self.parallel))

    def part(self, role):
        return self.host.part(self.layer, role)

    def build(self, input_shape):
        d_ff = int(self.part("feedforward_intermediate_dense").kernel.shape[-1])
        self.dense = {}
        for role, make in self.dense_replacements.items():
            plain = self.part(role)
            if plain is None:
                raise ValueError(f"{self.name}: the {self.host.name} layer has no projection "
                                 f"{role!r} to replace")
            if role == "feedforward_intermediate_dense" and self.part("feedforward_gate"):
                raise ValueError(f"{self.name}: replacing feedforward_intermediate_dense of a "
                                 "gated feed-forward ('ffn1' on a gated T5, v1.1: two first "
                                 "matrices) is not supported; the paper's T5 is v1.0")
            modulation = make(**_projection_args(plain), name=role, source=plain,
                              dtype=self.dtype_policy)
            modulation.build((None, None, int(plain.kernel.shape[0])))
            self.dense[role] = modulation
        for modulation in self.parallel + self.output_modulations:
            modulation.build(input_shape)
        if self.activation_modulation is not None:
            self.activation_modulation.build(tuple(input_shape[:-1]) + (d_ff,), input_shape)
        if self.wants_task_token:  # uniform ±0.05, as the other task embeddings
            self.task_token = keras.layers.Embedding(
                self.num_tasks, int(input_shape[-1]), embeddings_initializer="uniform",
                name="task_token", dtype=self.dtype_policy)
            self.task_token.build((None,))
        self.built = True

    # ------------------------------------------------------------------ sub-layers

    def _project(self, role, x, conditioning):
        """Projection ``role`` of ``x``: the hosted modulation, else the plain layer."""
        if role in self.dense:
            return self.dense[role](x, conditioning=conditioning)
        return self.part(role)(x)

    def _heads(self, role, x, conditioning):
        return self.host.heads(self.part("attention"), self._project(role, x, conditioning))

    def _plain_heads(self, role, x):
        return self.host.heads(self.part("attention"), self.part(role)(x))

    def _self_attention(self, h, mask, conditioning, keys, training, stack):
        """The self-attention of ``h``, Q/K/V modulated where hosted; ``keys``: the
        unmodulated keys and values of ``h`` if already computed."""
        projected = {role: keys[role] if keys and role in keys and role not in self.dense
                     else self._heads(role, h, conditioning) for role in ("query", "key", "value")}
        return self.host.attend(self.part("attention"), projected["query"], projected["key"],
                                projected["value"], mask, training, stack.get("position_bias"))

    def task_attention(self, task, h, mask, training=None, stack=None, keys=None):
        """T′: the layer's self-attention, unmodulated, at the task token ``task`` [B, d]
        prepended to the attention input ``h`` ([B, d] for a key mask, [B, L, d] for a
        causal one: T at position i sees T and positions <= i). T goes through the
        first norm of a pre-LN layer like every token; ``stack["task_bias"]``: T5's
        relative position bias of position 0 over positions 0..L."""
        stack = stack or {}
        keys = keys or {role: self._plain_heads(role, h) for role in ("key", "value")}
        t = ops.cast(task, h.dtype)[:, None, :]
        if self.host.pre_ln(self.layer):
            t = self.part("attention_norm")(t)
        q, k, v = (self._plain_heads(role, t) for role in ("query", "key", "value"))
        visible = ops.concatenate([ops.ones_like(mask[..., :1]), mask], axis=-1)
        q = ops.broadcast_to(q, (ops.shape(q)[0], ops.shape(mask)[1], *q.shape[2:]))
        out = self.host.attend(self.part("attention"), q,
                               ops.concatenate([k, keys["key"]], axis=1),
                               ops.concatenate([v, keys["value"]], axis=1), visible, training,
                               stack.get("task_bias"))
        return out[:, 0] if mask.shape[1] == 1 else out

    def _feedforward(self, x, conditioning, training):
        gate = self.part("feedforward_gate")
        activation = self.activation or self.part("feedforward_intermediate_dense").activation

        def phi(h):  # the nonlinearity between the two matrices (T5 v1.1: times its gate)
            h = activation(h)
            return h * gate(x) if gate is not None else h

        if "feedforward_intermediate_dense" in self.dense:
            h = self.dense["feedforward_intermediate_dense"](x, conditioning=conditioning)
        else:
            h = _linear(self.part("feedforward_intermediate_dense"), x)
        if self.activation_modulation is None:
            h = phi(h)
        else:
            h = self.activation_modulation(h, x, conditioning=conditioning, activation=phi,
                                           training=training)
        inner = self.part("feedforward_inner_dropout")
        if inner is not None:
            h = inner(h, training=training)
        return self._project("feedforward_output_dense", h, conditioning)

    # ------------------------------------------------------------------ forward

    def call(self, x, attention_mask, conditioning=None, training=None, stack=None):
        stack = stack or {}
        if self.plain:
            y = self.host.plain_call(self.layer, x, attention_mask, training, stack)
        else:
            y = self._modulated(x, attention_mask, dict(conditioning or {}), training, stack)
        for modulation in self.output_modulations:
            y = modulation(y, conditioning=conditioning, attention_mask=attention_mask,
                           training=training)
        return y

    def _modulated(self, x, mask, conditioning, training, stack):
        pre_ln = self.host.pre_ln(self.layer)
        seed = drop.draw_seed(self.seed_generator, training)
        h = self.part("attention_norm")(x) if pre_ln else x
        keys = None
        if self.task_token is not None:
            keys = {role: self._plain_heads(role, h) for role in ("key", "value")}
            task = self.task_token(require(conditioning, "task_index", self.name))
            conditioning[TASK_ATTENTION_KEY] = self.task_attention(task, h, mask, training,
                                                                   stack, keys)
        attended = self._self_attention(h, mask, {**conditioning, **_sequence(h, mask)},
                                        keys, training, stack)
        a = x + self.part("attention_dropout")(attended, training=training)
        if not pre_ln:
            a = self.part("attention_norm")(a)
        a = self.host.cross_attention(self.layer, a, training, stack)
        inner = self.part("feedforward_norm")(a) if pre_ln else a
        y = a + self.part("feedforward_dropout")(
            self._feedforward(inner, {**conditioning, **_sequence(inner, mask)}, training),
            training=training)
        extra = parallel_sum(self.parallel, h, conditioning, mask, training, seed)
        y = y if extra is None else y + extra
        return y if pre_ln else self.part("feedforward_norm")(y)

    def compute_output_spec(self, x, attention_mask, conditioning=None, training=None,
                            stack=None):
        return keras.KerasTensor(x.shape, dtype=self.compute_dtype)


def _sequence(h, mask):
    return dict(zip(SEQUENCE_KEYS, (h, mask)))


def host_stack(host, layers, specs, stack, num_tasks, available=HOST_KEYS, activation=None,
               dtype=None):
    """The :class:`HostedLayer` s of a backbone's stack ``layers`` hosting the ``specs``
    that name ``stack``, and the stack's shared layers (the model holds both).

    Args:
        host: the layers' :class:`BackboneHost`.
        layers: the backbone's transformer layers of the stack.
        specs: :class:`nemot.modulation.ModulationSpec` s.
        stack: this stack's name in the specs' ``sets``.
        num_tasks: tasks the model distinguishes.
        available: conditioning keys the model passes (plus the host's own).
        activation: the feed-forward nonlinearity in place of the layers' own.
        dtype: the backbone's dtype policy.
    """
    d_model = int(host.part(layers[0], "feedforward_output_dense").kernel.shape[-1])
    per_layer, shared = stack_modulations(specs, stack, len(layers), num_tasks, d_model,
                                          available=available, dtype=dtype)
    reads_task_attention = set()
    for spec in specs:
        if stack in spec.sets and TASK_ATTENTION_KEY in modulation_class(spec.kind).needs(
                spec.kwargs):
            reads_task_attention.update(spec.layer_indices(len(layers)))
    hosted = []
    for i, (layer, (modulations, replacements)) in enumerate(zip(layers, per_layer)):
        hosted_layer = HostedLayer(layer, host, modulations, replacements, num_tasks,
                                   task_token=i in reads_task_attention, activation=activation,
                                   name=f"{stack}_layer_{i}")
        hosted_layer.build((None, None, d_model))
        hosted.append(hosted_layer)
    return hosted, shared
