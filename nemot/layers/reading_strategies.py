"""Reading strategies of NeMoT (thesis §3.4.3, Table 3.10; docs/spec.md section 7).

- :class:`AnswerOptionInteraction` (AOI, eq. 3.15) on the answer options of
  each example, the span from ``(1)`` up to ``<sep>``.
- :class:`Highlighting`: one learned vector per part-of-speech category added
  to every text position (tags come from the data pipeline, see
  :mod:`nemot.data.pos_tags`).
- :class:`ReadingStrategies`: the strategies of a ``NeMoTConfig`` applied in
  order, AOI then highlighting, each applied once.

The model applies them to the vanilla-set output (thesis) or right after the
embeddings (``reading_strategy_position``); see ``nemot.models.nemot_backbone``.
"""

import keras
from keras import ops

from nemot import vocab
from nemot.config import STRATEGIES
from nemot.vocab import POS_CATEGORIES, POS_PAD_ID


def option_span(text_ids):
    """bool [batch, n]: the answer-option span of each example, ``(1)`` up to ``<sep>``.

    The span starts at the first ``(1)`` before the first ``<sep>`` and ends just
    before that ``<sep>`` (the answer-option positions X_ans of eq. 3.15). An
    example without ``(1)`` before a ``<sep>`` has an empty span.

    Example:
        >>> option_span(ops.array([[vocab.Q_ID, 11, vocab.OPTION_IDS[0], 12, vocab.SEP_ID]]))
        # [[False, False, True, True, False]]
    """
    n = ops.shape(text_ids)[1]
    positions = ops.arange(n, dtype="int32")[None, :]
    sep = ops.min(ops.where(ops.equal(text_ids, vocab.SEP_ID), positions, n), axis=1,
                  keepdims=True)
    # Without a <sep> (sep == n) there is no prompt to find options in.
    first_option = ops.logical_and(ops.equal(text_ids, vocab.OPTION_IDS[0]),
                                   ops.logical_and(positions < sep, sep < n))
    start = ops.min(ops.where(first_option, positions, n), axis=1, keepdims=True)
    return ops.logical_and(positions >= start, positions < sep)


@keras.saving.register_keras_serializable(package="nemot")
class AnswerOptionInteraction(keras.layers.Layer):
    """Answer-option interaction, thesis eq. 3.15, on each example's option span::

        H1 = X W1,  H2 = X W2
        G = softmax(H1 W3 H2^T)            # by rows, over the span's columns only
        H_int = ReLU(G H2)
        g = sigmoid([H_int; H1] W4)
        X' = Dropout(g * H1 + (1 - g) * H_int)

    Positions outside the span (and every position of an example without
    options) are returned unchanged. The span is found inside the graph for
    every example (:func:`option_span`), so batches mix examples freely.

    Args:
        dropout: dropout rate on X'.
        use_bias: biases on W1..W4; the thesis omits them, the original code
            had them (``compat_aoi_bias``).
        kernel_regularizer: optional regulariser of the four kernels.

    Example:
        >>> aoi = AnswerOptionInteraction(dropout=0.1)
        >>> y = aoi(ops.ones((2, 6, 8)), text_ids)   # text_ids int [2, 6]; y: [2, 6, 8]
    """

    def __init__(self, dropout=0.1, use_bias=False, kernel_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        self.dropout = dropout
        self.use_bias = use_bias
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def build(self, input_shape):
        d_model = input_shape[-1]

        def dense(name, input_width):
            layer = keras.layers.Dense(d_model, use_bias=self.use_bias,
                                       kernel_initializer="glorot_uniform",
                                       kernel_regularizer=self.kernel_regularizer, name=name,
                                       dtype=self.dtype_policy)
            layer.build((None, None, input_width))
            return layer

        self.w1 = dense("w1", d_model)
        self.w2 = dense("w2", d_model)
        self.w3 = dense("w3", d_model)
        self.w4 = dense("w4", 2 * d_model)
        self.output_dropout = keras.layers.Dropout(self.dropout)

    def call(self, x, text_ids, training=None):
        span = option_span(ops.cast(text_ids, "int32"))
        h1 = self.w1(x)
        h2 = self.w2(x)
        # Scores in float32: the masked columns get a large negative that float16 cannot hold.
        scores = ops.cast(ops.matmul(self.w3(h1), ops.transpose(h2, (0, 2, 1))), "float32")
        scores = ops.where(span[:, None, :], scores, -1e9)
        g_int = ops.cast(ops.softmax(scores, axis=-1), x.dtype)
        h_int = ops.relu(ops.matmul(g_int, h2))
        reset = ops.sigmoid(self.w4(ops.concatenate([h_int, h1], axis=-1)))
        x_aoint = self.output_dropout(reset * h1 + (1.0 - reset) * h_int, training=training)
        return ops.where(span[:, :, None], x_aoint, x)

    def get_config(self):
        config = super().get_config()
        config.update(dropout=self.dropout, use_bias=self.use_bias,
                      kernel_regularizer=keras.regularizers.serialize(self.kernel_regularizer))
        return config


@keras.saving.register_keras_serializable(package="nemot")
class Highlighting(keras.layers.Layer):
    """Highlighting (thesis §3.4.3): ``x + L[pos_tags]`` with eight learned vectors.

    ``pos_tags`` int [batch, n] holds one category id per text position
    (:data:`POS_CATEGORIES`, produced by :mod:`nemot.data.pos_tags`);
    :data:`POS_PAD_ID` (padding) adds nothing. The vectors start Glorot-uniform.

    Example:
        >>> high = Highlighting()
        >>> y = high(ops.zeros((1, 3, 8)), ops.array([[0, 7, POS_PAD_ID]]))
        >>> # y[0, 0] is the noun vector, y[0, 1] the special-token one, y[0, 2] zeros
    """

    def build(self, input_shape):
        self.vectors = self.add_weight(shape=(len(POS_CATEGORIES), input_shape[-1]),
                                       initializer="glorot_uniform", name="vectors")

    def call(self, x, pos_tags):
        lengths = (pos_tags.shape[-1], x.shape[1])
        if len(pos_tags.shape) != 2 or (None not in lengths and lengths[0] != lengths[1]):
            raise ValueError(f"pos_tags: expected int [batch, {x.shape[1]}] (one tag per text "
                             f"position), got shape {tuple(pos_tags.shape)}")
        pos_tags = ops.cast(pos_tags, "int32")
        added = ops.take(ops.cast(self.vectors, x.dtype), ops.maximum(pos_tags, 0), axis=0)
        has_word = ops.not_equal(pos_tags, POS_PAD_ID)[:, :, None]
        return x + ops.where(has_word, added, ops.zeros_like(added))


@keras.saving.register_keras_serializable(package="nemot")
class ReadingStrategies(keras.layers.Layer):
    """The reading strategies of a config, AOI first, then highlighting.

    With both, the result is ``AOI(x) + L[pos_tags]``: AOI takes the place of
    the input on the option span and the highlighting vectors are added once
    (the original code added the vanilla output a second time).

    Args:
        strategies: a subset of ``("aoi", "highlighting")``.
        dropout: AOI dropout rate.
        aoi_bias: biases on the AOI projections (original code).
        kernel_regularizer: optional regulariser of the AOI kernels.

    Example:
        >>> rs = ReadingStrategies(("aoi", "highlighting"))
        >>> y = rs(x, text_ids, pos_tags)      # x [B, n, d], text_ids / pos_tags int [B, n]
    """

    def __init__(self, strategies, dropout=0.1, aoi_bias=False, kernel_regularizer=None,
                 **kwargs):
        super().__init__(**kwargs)
        strategies = tuple(strategies)
        unknown = [s for s in strategies if s not in STRATEGIES]
        if unknown or not strategies or len(set(strategies)) != len(strategies):
            raise ValueError(f"reading strategies {strategies}: expected distinct names "
                             f"among {sorted(STRATEGIES)}")
        self.strategies = strategies
        self.dropout = dropout
        self.aoi_bias = aoi_bias
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def build(self, input_shape):
        if "aoi" in self.strategies:
            self.aoi = AnswerOptionInteraction(self.dropout, use_bias=self.aoi_bias,
                                               kernel_regularizer=self.kernel_regularizer,
                                               name="aoi", dtype=self.dtype_policy)
            self.aoi.build(input_shape)
        if "highlighting" in self.strategies:
            self.highlighting = Highlighting(name="highlighting", dtype=self.dtype_policy)
            self.highlighting.build(input_shape)

    @property
    def needs_pos_tags(self):
        return "highlighting" in self.strategies

    def call(self, x, text_ids, pos_tags=None, training=None):
        if "aoi" in self.strategies:
            x = self.aoi(x, text_ids, training=training)
        if "highlighting" in self.strategies:
            if pos_tags is None:
                raise ValueError("the highlighting reading strategy needs the input "
                                 "'pos_tags' (int [batch, n], see nemot.data.pos_tags)")
            x = self.highlighting(x, pos_tags)
        return x

    def get_config(self):
        config = super().get_config()
        config.update(strategies=list(self.strategies), dropout=self.dropout,
                      aoi_bias=self.aoi_bias,
                      kernel_regularizer=keras.regularizers.serialize(self.kernel_regularizer))
        return config
