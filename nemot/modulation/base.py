"""The contract between a transformer layer and the modulations it hosts.

**Conditioning.** Every hosting stack passes its layers one dict, ``conditioning``,
with some of these keys (:data:`CONDITIONING_KEYS`):

- ``"task_index"``: int32 [batch], each example's task as an index into the host's
  task list (NeMoT: its output blocks, chosen by the task token);
- ``"context"``: float [batch, d], one vector per example (NeMoT's output set: the
  neuromodulatory output at the task token);
- ``"context_tokens"``: float [batch, n, d], one vector per position (NeMoT's output
  set: the neuromodulatory output at the text positions).

The hosts of KerasHub backbones (:mod:`nemot.modulation.host`) pass
``"task_index"`` and :data:`HOST_KEYS`: ``"sequence"`` and ``"sequence_mask"``, the
input of the sub-layer whose projection a modulation replaces (after its norm) and
the layer's attention mask; ``"task_attention"``, the layer's own self-attention
evaluated at a task token prepended to its input. A model may add its own
(:mod:`nemot.modulation.gating_block`: NGT's auxiliary tokens).

A modulation lists what it reads in :meth:`Modulation.needs`; a host that cannot give
it (NeMoT's vanilla set runs before the neuromodulatory set) refuses the config.

**Sites** (:attr:`Modulation.site`), as the hosting :class:`TransformerLayer` calls them:

- ``"parallel"``: ``term = m(h, conditioning=..., attention_mask=..., training=...)`` with
  ``h`` the layer input (after the layer's first LayerNorm in a pre-LN layer); the
  term joins the feed-forward residual sum (post-LN: ``LN(a + FFN(a) + term)``;
  pre-LN: ``a + FFN(LN(a)) + term``). Built with ``build(h_shape)``. A kind whose
  :attr:`Modulation.draws_dropout` is true also gets ``dropout_seed=``, its own seed
  in training (None otherwise), drawn by the host (:mod:`nemot.dropout`).
- ``"activation"``: ``y = m(h, x, conditioning=..., activation=..., training=...)`` replaces
  ``activation(h)`` between the two feed-forward matrices; ``h = x W1 + b1`` and ``x``
  is the feed-forward input. Built with ``build(h_shape, x_shape)``.
- ``"dense"``: the modulation *is* one of the layer's projections, named by
  :meth:`Modulation.replaces` (``"feedforward_intermediate_dense"``,
  ``"feedforward_output_dense"``, ``"query"``, ``"key"``, ``"value"``). The host
  constructs it with that projection's ``equation``/``output_shape``/``bias_axes`` and
  name, and calls ``y = m(x, conditioning)``. It owns ``kernel`` and ``bias`` of the
  plain projection's shapes, so pretrained weights copy into it unchanged; a host
  wrapping a pretrained backbone passes that projection as ``source=`` instead, and
  the modulation reads the backbone's own kernel and bias.
- ``"output"``: ``y = m(h, conditioning=..., attention_mask=..., training=...)``
  replaces the layer's output ``h`` (a sequential block after the layer: NGT's gating
  block). Built with ``build(h_shape)``.

**Sharing.** :meth:`Modulation.shared_layer` may return one layer per hosting stack
(PALs share their projections across the layers of a task); the host builds it once
and hands it to every instance as ``shared=``.
"""

import keras
import numpy as np
from keras import ops

from nemot import dropout as drop

SITES = ("parallel", "activation", "dense", "output")
DENSE_NAMES = ("query", "key", "value", "feedforward_intermediate_dense",
               "feedforward_output_dense")
CONDITIONING_KEYS = ("task_index", "context", "context_tokens")
SEQUENCE_KEYS = ("sequence", "sequence_mask")
TASK_ATTENTION_KEY = "task_attention"
HOST_KEYS = ("task_index", *SEQUENCE_KEYS, TASK_ATTENTION_KEY)


class Modulation(keras.layers.Layer):
    """Base of the per-layer, task-conditioned sub-layers (see the module docstring).

    Subclasses set :attr:`site` and implement ``build`` and ``call`` for it. A kind
    whose term mixes positions without a key/value cache of its own (PALs) sets
    :attr:`supports_cache` to False; its host refuses cached calls.

    Args:
        num_tasks: tasks the host distinguishes (rows of per-task weights).
        shared: the stack's :meth:`shared_layer`, when the kind has one.
    """

    site = None
    supports_cache = True

    def __init__(self, num_tasks=1, shared=None, **kwargs):
        super().__init__(**kwargs)
        self.num_tasks = int(num_tasks)
        self.shared = shared

    @property
    def draws_dropout(self):
        """Whether a training call needs a ``dropout_seed`` from its host."""
        return False

    @classmethod
    def needs(cls, options):
        """Conditioning keys this kind reads with ``options``."""
        return ("task_index",)

    @classmethod
    def replaces(cls, options):
        """Dense-site kinds: the names of the projections they replace."""
        return ()

    @classmethod
    def shared_layer(cls, num_tasks, d_model, name, dtype=None, **options):
        """A layer shared by every instance in one hosting stack, or None."""
        return None

    def get_config(self):
        config = super().get_config()
        config["num_tasks"] = self.num_tasks
        return config


class DenseModulation(Modulation):
    """Base of the dense-site kinds: owns ``kernel`` and ``bias`` exactly as the
    ``EinsumDense`` it replaces (``"abc,cd->abd"``: kernel [in, out]; ``"abc,cde->abde"``:
    kernel [in, heads, head_dim]), under the same path, so pretrained weights load; or,
    given ``source`` (the plain projection of a pretrained backbone), reads that
    projection's kernel and bias and owns none.

    :meth:`kernel_matrix` is the kernel as [in, out] and :meth:`plain` the unmodulated
    product; subclasses implement ``call(x, conditioning=None)``.
    """

    site = "dense"
    EQUATIONS = ("abc,cd->abd", "abc,cde->abde")

    def __init__(self, equation, output_shape, bias_axes=None, kernel_regularizer=None,
                 source=None, **kwargs):
        super().__init__(**kwargs)
        if equation not in self.EQUATIONS:
            raise ValueError(f"{type(self).__name__}: equation {equation!r}: expected one of "
                             f"{self.EQUATIONS}")
        self.equation = equation
        self.output_dims = tuple(output_shape[1:])
        self.use_bias = bool(bias_axes)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        # Not tracked as a sub-layer: its weights belong to the backbone that holds it.
        object.__setattr__(self, "source", source)

    @property
    def units(self):
        return int(np.prod(self.output_dims))

    @property
    def kernel(self):
        return self._kernel if self.source is None else self.source.kernel

    @property
    def bias(self):
        if self.source is not None:
            return getattr(self.source, "bias", None)
        return self._bias

    def build(self, input_shape):
        self.input_dim = int(input_shape[-1])
        shape = (self.input_dim, *self.output_dims)
        if self.source is not None:
            if tuple(self.source.kernel.shape) != shape:
                raise ValueError(f"{self.name}: the source projection's kernel has shape "
                                 f"{tuple(self.source.kernel.shape)}, expected {shape}")
            return
        self._kernel = self.add_weight(shape, name="kernel", initializer="glorot_uniform",
                                       regularizer=self.kernel_regularizer)
        self._bias = self.add_weight(self.output_dims, name="bias", initializer="zeros") \
            if self.use_bias else None

    def kernel_matrix(self):
        return ops.reshape(self.kernel, (self.input_dim, self.units))

    def to_output(self, y):
        """[..., units] -> the projection's output shape (heads split for Q/K/V)."""
        return ops.reshape(y, (*ops.shape(y)[:-1], *self.output_dims))

    def add_bias(self, y):
        return y if self.bias is None else y + ops.cast(self.bias, y.dtype)

    def plain(self, x):
        """The unmodulated projection ``x W + b``."""
        kernel = ops.cast(self.kernel, x.dtype)
        return self.add_bias(ops.einsum(self.equation, x, kernel))


def require(conditioning, key, who):
    """``conditioning[key]``, or a clear error naming the modulation that needed it."""
    if not conditioning or conditioning.get(key) is None:
        raise ValueError(f"{who} needs conditioning[{key!r}] ({', '.join(CONDITIONING_KEYS)}); "
                         f"the host passed {sorted(conditioning or {})}")
    return conditioning[key]


def task_index(task_ids, task_token_ids):
    """int32 [batch]: the position of each ``task_ids`` entry in ``task_token_ids``.

    Ids not in the list get index 0; hosts check their task tokens before calling
    (``nemot.vocab.check_aux_tokens``).
    """
    table = ops.convert_to_tensor(list(task_token_ids), "int32")
    hits = ops.equal(ops.cast(task_ids, "int32")[:, None], table[None, :])
    return ops.cast(ops.argmax(ops.cast(hits, "int32"), axis=-1), "int32")


def per_task(weights, index):
    """Rows of per-task ``weights`` [tasks, ...] for each example: [batch, ...].

    A gather, so a batch of one task gives exactly zero gradient to the others' rows.
    """
    return ops.take(weights, index, axis=0)


def task_dense(x, kernels, biases):
    """``x W_t + b_t`` with each example's own task rows (from :func:`per_task`):
    x [B, L, i], kernels [B, i, o], biases [B, o] -> [B, L, o]."""
    y = ops.einsum("bli,bio->blo", x, ops.cast(kernels, x.dtype))
    return y + ops.cast(biases, x.dtype)[:, None, :]


def dense_or_modulated(name, equation, output_shape, bias_axes, input_shape, replacements,
                       kernel_regularizer=None, dtype=None):
    """The projection ``name``: a built ``EinsumDense``, or the dense-site modulation
    that replaces it (built on the same input, with the same kernel and bias shapes)."""
    args = dict(equation=equation, output_shape=output_shape, bias_axes=bias_axes,
                kernel_regularizer=kernel_regularizer, name=name, dtype=dtype)
    make = replacements.get(name)
    layer = make(**args) if make is not None else keras.layers.EinsumDense(**args)
    layer.build(input_shape)
    return layer


def call_dense(layer, x, conditioning):
    """Call a projection, passing the conditioning only to a modulated one."""
    if isinstance(layer, Modulation):
        return layer(x, conditioning=conditioning)
    return layer(x)


def parallel_sum(modulations, h, conditioning, attention_mask, training, seed):
    """The sum of the ``parallel`` terms of ``h`` (None without any); term ``i`` that drops
    out draws with salt ``3 + i`` of the layer's ``seed`` (salts 0-2: the layer's own)."""
    terms = []
    for i, m in enumerate(modulations):
        seeded = {"dropout_seed": drop.salted(seed, 3 + i)} if m.draws_dropout else {}
        terms.append(m(h, conditioning=conditioning, attention_mask=attention_mask,
                       training=training, **seeded))
    return sum(terms[1:], terms[0]) if terms else None
