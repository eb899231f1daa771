"""Projected attention layers (PALs; Stickland & Murray 2019, eqs. in s.4.3).

A PAL adds a task-specific term beside a transformer layer::

    h' = LN2(a + Drop(FFN(a)) + TS_t(h))          post-LN (BERT), a = LN1(h + Drop(MHA(h)))
    h' = a + Drop(FFN(LN2(a))) + TS_t(LN1(h))     pre-LN (NeMoT), a = h + Drop(MHA(LN1(h)))
    TS_t(h) = GELU(V^D_t MH_t(V^E_t h + b^E_t) + b^D_t)

``h`` is the layer input [B, L, d_m], not ``a`` (the host,
:class:`nemot.layers.TransformerLayer`, passes it; ``tests/modulation/
test_pals_placement.py`` pins both forms). What the paper leaves out follows the official
code (``AsaCooperStickland/Bert-n-Pals``; notes s.1(a)):

- ``V^E_t`` (d_m -> d_s) and ``V^D_t`` (d_s -> d_m), with biases, are **shared by every
  layer** of a stack (:class:`PALProjections`, the kind's ``shared_layer``); the
  attention's Q/K/V are per layer and per task (:class:`ProjectedAttentionAdapter`).
- ``MH`` has 6 heads and **no output projection**; **GELU after** ``V^D``; the term is
  added without dropout.
- ``MH`` is the official ``BERTSelfAttention``, so it has **dropout 0.1 on its attention
  probabilities** in training (``attention_dropout``; 0 switches it off). Its seed comes
  from the hosting layer (``dropout_seed=``, :mod:`nemot.dropout`).
- Weights N(0, 0.02), biases 0.

Per-task weights are stacked [tasks, ...] and each example takes its own rows with a
gather (:func:`nemot.modulation.base.per_task`), so a batch may mix tasks and a batch of
one task gives exactly zero gradient to the other tasks' PAL weights. Parameters per task:
``2 d_m d_s + d_m + d_s + n_layers 3 (d_s^2 + d_s)`` (1,819,836 for d_s = 204 in 12
layers, 1,801,116 for 276 in 6: :func:`pal_parameters`).

Cached decoding: a PAL attends over all positions and keeps no key/value cache of its
own, so it declares ``supports_cache = False`` and a hosting layer refuses a cached call
(decode a PAL model by recomputing the whole prefix).

Example (TOML, NeMoT's vanilla set; BERT stacks: :mod:`nemot.pals.model`)::

    [[model.modulation]]
    kind = "pals"
    sets = ["vanilla"]
    layers = "top_half"
    hidden_size = 276
"""

import math

import keras
from keras import ops

from nemot.dropout import dropout
from nemot.modulation.base import Modulation, per_task, require

INITIALIZERS = ("normal", "zeros")


def pal_parameters(d_model, hidden_size, num_layers):
    """PAL parameters per task: ``2 d_m d_s + d_m + d_s + n_layers 3 (d_s^2 + d_s)``.

    Example:
        >>> pal_parameters(768, 204, 12), pal_parameters(768, 276, 6)
        (1819836, 1801116)
    """
    d, s = d_model, hidden_size
    return 2 * d * s + d + s + num_layers * 3 * (s * s + s)


def _initializer():
    return keras.initializers.RandomNormal(stddev=0.02)


def _task_dense(x, kernels, biases):
    """``x W_t + b_t`` with each example's own task rows: x [B, L, i], kernels [B, i, o]."""
    y = ops.einsum("bli,bio->blo", x, ops.cast(kernels, x.dtype))
    return y + ops.cast(biases, x.dtype)[:, None, :]


@keras.saving.register_keras_serializable(package="nemot")
class PALProjections(keras.layers.Layer):
    """The encoder ``V^E`` and decoder ``V^D`` of every task, shared by a stack's PALs.

    Args:
        num_tasks: tasks (rows of the stacked weights).
        hidden_size: d_s, the projected width.
        decoder_init: ``"normal"`` (N(0, 0.02), the official code) or ``"zeros"`` (every
            PAL starts as the plain layer, since GELU(0) = 0).

    Example:
        >>> proj = PALProjections(num_tasks=2, hidden_size=4)
        >>> proj.build((None, None, 8))
        >>> z = proj.encode(ops.ones((3, 5, 8)), ops.array([0, 1, 1]))   # [3, 5, 4]
    """

    def __init__(self, num_tasks, hidden_size=204, decoder_init="normal", **kwargs):
        super().__init__(**kwargs)
        if decoder_init not in INITIALIZERS:
            raise ValueError(f"decoder_init={decoder_init!r}: expected one of {INITIALIZERS}")
        self.num_tasks = int(num_tasks)
        self.hidden_size = int(hidden_size)
        self.decoder_init = decoder_init

    def build(self, input_shape):
        d, s, t = int(input_shape[-1]), self.hidden_size, self.num_tasks
        decoder = _initializer() if self.decoder_init == "normal" else "zeros"
        self.encoder_kernel = self.add_weight((t, d, s), _initializer(), name="encoder_kernel")
        self.encoder_bias = self.add_weight((t, s), "zeros", name="encoder_bias")
        self.decoder_kernel = self.add_weight((t, s, d), decoder, name="decoder_kernel")
        self.decoder_bias = self.add_weight((t, d), "zeros", name="decoder_bias")

    def encode(self, h, task_index):
        """``V^E_t h + b^E_t``: [B, L, d_m] -> [B, L, d_s]."""
        return _task_dense(h, per_task(self.encoder_kernel, task_index),
                           per_task(self.encoder_bias, task_index))

    def decode(self, z, task_index):
        """``GELU(V^D_t z + b^D_t)``: [B, L, d_s] -> [B, L, d_m]."""
        y = _task_dense(z, per_task(self.decoder_kernel, task_index),
                        per_task(self.decoder_bias, task_index))
        return keras.activations.gelu(y, approximate=False)

    def get_config(self):
        config = super().get_config()
        config.update(num_tasks=self.num_tasks, hidden_size=self.hidden_size,
                      decoder_init=self.decoder_init)
        return config


@keras.saving.register_keras_serializable(package="nemot")
class ProjectedAttentionAdapter(Modulation):
    """One layer's PAL, kind ``"pals"`` at site ``"parallel"``: ``TS_t(h)``.

    ``V^E``/``V^D`` come from the stack's :class:`PALProjections` (``shared``); this
    layer owns the per-task Q, K, V ([tasks, d_s, d_s] and biases) of its multi-head
    attention over the projected sequence, masked like the host layer.

    Args:
        num_tasks: tasks (rows of the stacked weights).
        hidden_size: d_s (paper: 204 in all 12 layers, 276 in the top 6).
        num_heads: heads of the projected attention (official code: 6).
        attention_dropout: dropout on the projected attention's probabilities in training
            (official code: 0.1, BERT's ``attention_probs_dropout_prob``; 0: none).
        decoder_init: see :class:`PALProjections` (read by the shared layer).
        shared: the stack's :class:`PALProjections`.

    Example:
        >>> proj = PALProjections(2, hidden_size=6); proj.build((None, None, 8))
        >>> pal = ProjectedAttentionAdapter(2, hidden_size=6, num_heads=2, shared=proj)
        >>> term = pal(ops.ones((1, 5, 8)), conditioning={"task_index": ops.array([1])},
        ...            attention_mask=ops.ones((1, 5, 5), "bool"))          # [1, 5, 8]
    """

    site = "parallel"
    supports_cache = False

    def __init__(self, num_tasks=1, hidden_size=204, num_heads=6, attention_dropout=0.1,
                 decoder_init="normal", shared=None, **kwargs):
        super().__init__(num_tasks=num_tasks, shared=shared, **kwargs)
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size={hidden_size} is not divisible by "
                             f"num_heads={num_heads}")
        if not 0 <= attention_dropout < 1:
            raise ValueError(f"attention_dropout={attention_dropout!r}: expected a rate in "
                             "[0, 1)")
        if shared is None:
            raise ValueError("ProjectedAttentionAdapter needs the stack's PALProjections "
                             "(shared=); build PALs with nemot.modulation.stack_modulations")
        if shared.hidden_size != hidden_size or shared.num_tasks != self.num_tasks:
            raise ValueError(f"shared projections have hidden_size={shared.hidden_size}, "
                             f"num_tasks={shared.num_tasks}; this PAL has {hidden_size}, "
                             f"{self.num_tasks}")
        self.hidden_size = int(hidden_size)
        self.num_heads = int(num_heads)
        self.attention_dropout = float(attention_dropout)
        self.decoder_init = decoder_init

    @property
    def draws_dropout(self):
        return self.attention_dropout > 0

    @classmethod
    def shared_layer(cls, num_tasks, d_model, name, dtype=None, hidden_size=204, num_heads=6,
                     attention_dropout=0.1, decoder_init="normal"):
        return PALProjections(num_tasks, hidden_size=hidden_size, decoder_init=decoder_init,
                              name=name, dtype=dtype)

    def build(self, input_shape):
        t, s = self.num_tasks, self.hidden_size
        for name in ("query", "key", "value"):
            setattr(self, f"{name}_kernel",
                    self.add_weight((t, s, s), _initializer(), name=f"{name}_kernel"))
            setattr(self, f"{name}_bias", self.add_weight((t, s), "zeros", name=f"{name}_bias"))

    def _heads(self, z, name, index):
        y = _task_dense(z, per_task(getattr(self, f"{name}_kernel"), index),
                        per_task(getattr(self, f"{name}_bias"), index))
        return ops.reshape(y, (ops.shape(y)[0], ops.shape(y)[1], self.num_heads,
                               self.hidden_size // self.num_heads))

    def call(self, h, conditioning=None, attention_mask=None, training=None,
             dropout_seed=None):
        """``h`` [B, L, d_m], ``attention_mask`` bool [B, L, L] (True = may attend);
        ``dropout_seed``: seed [2] of the probability dropout (training only)."""
        drop = bool(training) and self.attention_dropout > 0
        if drop and dropout_seed is None:
            raise ValueError(f"{self.name}: training with attention_dropout="
                             f"{self.attention_dropout} needs dropout_seed= from the host")
        index = require(conditioning, "task_index", "ProjectedAttentionAdapter")
        z = self.shared.encode(h, index)
        query, key, value = (self._heads(z, name, index) for name in ("query", "key", "value"))
        scores = ops.einsum("bqhd,bkhd->bhqk", query, key)
        scores = ops.cast(scores, "float32") / math.sqrt(self.hidden_size // self.num_heads)
        scores = ops.where(ops.expand_dims(attention_mask, 1), scores, -1e9)
        probs = ops.cast(ops.softmax(scores, axis=-1), z.dtype)
        probs = dropout(probs, self.attention_dropout, dropout_seed if drop else None)
        context = ops.einsum("bhqk,bkhd->bqhd", probs, value)
        context = ops.reshape(context, (ops.shape(z)[0], ops.shape(z)[1], self.hidden_size))
        return self.shared.decode(context, index)

    def compute_output_spec(self, h, conditioning=None, attention_mask=None, training=None,
                            dropout_seed=None):
        return keras.KerasTensor(h.shape, dtype=self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_heads=self.num_heads,
                      attention_dropout=self.attention_dropout, decoder_init=self.decoder_init)
        return config
