"""Context-dependent modulation of the activation function (*Context Dependent Modulation of Activation Function*).

A *modulator* reads the same input as the units it targets and scales their
pre-activation, so that the slope of each unit's activation depends on the input
(paper section 2, ``o_{l,k} = phi(tau_l(w_l^T x) * w_{l,k}^T x)``)::

    o = phi(tau(x W_M + b_M) * (x W + b))          position "pre" (the paper)
    o = tau(x W_M + b_M) * phi(x W + b)            position "post" (output gating: NeMoT's
                                                   gate, a GLU, the paper's control C3)

``tau`` is ``"sigmoid"`` (the paper's CNNs and Simple-LSTM), ``"2sigmoid"`` (LHUC's
``2 sigmoid``: 1 at zero, so a zero-initialised modulator leaves the host unchanged) or
``"tanhshrink"`` ``x - tanh x`` (the paper's Advanced-LSTM: unbounded and sign-changing,
so it can steepen or flip a slope as well as flatten it).

**Pre- and post-activation gating coincide for ReLU.** ReLU is positively homogeneous,
``ReLU(s v) = s ReLU(v)`` for ``s > 0``, so with a positive ``tau`` (``sigmoid``,
``2sigmoid``) and ``phi = ReLU`` the modulated CNN of the paper is exactly output
gating by a spatial map. The two differ for GELU and tanh, and for a sign-changing
``tau`` (``tanhshrink``) even with ReLU (``ReLU(-v) != -ReLU(v)``).

The layers (all ``keras.ops``, so they run on every Keras backend):

- :class:`ModulatedDense` and :class:`ModulatedConv2D`: a Dense / Conv2D with its
  modulator (``mod_units`` modulators for the dense layer; one 1-filter Conv2D with the
  target's kernel, stride and padding for the convolution, broadcast over channels).
- :class:`ModulatedLSTMCell`: the paper's modulated LSTM, ``C~_t = tanh(tau(W_M[x_t,
  h_{t-1}]) * W_c[x_t, h_{t-1}])``, other gates Keras' ``LSTMCell``.
- :class:`ModulatedFFN`: kind ``"modulated_ffn"``, an ``activation``-site
  :class:`nemot.modulation.Modulation` for any :class:`nemot.layers.TransformerLayer`:
  ``W2 phi(tau(c W_M + b_M) * (x W1 + b1))`` with the context ``c`` the feed-forward
  input or NeMoT's neuromodulatory output.
"""

import keras
from keras import ops

from nemot.modulation.base import Modulation, per_task, require, task_dense


def tanhshrink(x):
    """``x - tanh(x)`` (PyTorch's Tanhshrink)."""
    return x - ops.tanh(x)


def two_sigmoid(x):
    """``2 sigmoid(x)``: a gain in (0, 2) that is exactly 1 at x = 0 (LHUC)."""
    return 2.0 * ops.sigmoid(x)


TAUS = {"sigmoid": ops.sigmoid, "2sigmoid": two_sigmoid, "tanhshrink": tanhshrink}
POSITIONS = ("pre", "post")


def tau_function(name):
    """The modulator activation called ``name`` (one of :data:`TAUS`)."""
    if name not in TAUS:
        raise ValueError(f"tau={name!r}: expected one of {sorted(TAUS)}")
    return TAUS[name]


def check_position(position):
    if position not in POSITIONS:
        raise ValueError(f"position={position!r}: expected one of {POSITIONS} ('pre': gain "
                         "before the activation, the paper; 'post': gate after it)")
    return position


def modulate(h, gain, activation, position="pre"):
    """``activation(gain * h)`` (``"pre"``) or ``gain * activation(h)`` (``"post"``).

    ``gain`` broadcasts against ``h``: [..., 1] is one modulator for all units,
    [..., units] one per unit.
    """
    if position == "pre":
        return activation(gain * h)
    return gain * activation(h)


class _ModulatedLayer(keras.layers.Layer):
    """A target layer (``self.target``) and its modulator (``self.modulator``) on one input."""

    def __init__(self, activation=None, tau="sigmoid", position="pre", use_bias=True,
                 kernel_initializer="glorot_uniform", modulator_initializer="glorot_uniform",
                 **kwargs):
        super().__init__(**kwargs)
        self.activation = keras.activations.get(activation)
        self.tau = tau
        self.tau_fn = tau_function(tau)
        self.position = check_position(position)
        self.use_bias = use_bias
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.modulator_initializer = keras.initializers.get(modulator_initializer)

    def build(self, input_shape):
        self.target.build(input_shape)
        self.modulator.build(input_shape)

    def call(self, x):
        return modulate(self.target(x), self.tau_fn(self.modulator(x)), self.activation,
                        self.position)

    def compute_output_shape(self, input_shape):
        return self.target.compute_output_shape(input_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            activation=keras.activations.serialize(self.activation), tau=self.tau,
            position=self.position, use_bias=self.use_bias,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
            modulator_initializer=keras.initializers.serialize(self.modulator_initializer))
        return config


@keras.saving.register_keras_serializable(package="nemot")
class ModulatedDense(_ModulatedLayer):
    """``phi(tau(x W_M + b_M) * (x W + b))``: a Dense layer whose units have modulated slopes.

    Args:
        units: output units.
        activation: ``phi`` (a Keras activation; None is linear).
        tau: ``"sigmoid"``, ``"2sigmoid"`` or ``"tanhshrink"``.
        mod_units: ``"units"`` (node-wise: one modulator per unit, the paper's LSTM form)
            or 1 (one modulator for the layer, the paper's CNN form).
        position: ``"pre"`` (gain before ``phi``) or ``"post"`` (gate after it).
        use_bias: bias of the target units (the modulator always has one).
        kernel_initializer, modulator_initializer: of ``W`` and ``W_M``.

    Example:
        >>> layer = ModulatedDense(8, activation="tanh", tau="sigmoid")
        >>> layer(ops.ones((2, 3))).shape
        (2, 8)
    """

    def __init__(self, units, mod_units="units", **kwargs):
        super().__init__(**kwargs)
        if mod_units not in ("units", 1):
            raise ValueError(f"mod_units={mod_units!r}: expected 'units' (one modulator per "
                             "unit) or 1 (one for the layer)")
        self.units = int(units)
        self.mod_units = mod_units
        self.target = keras.layers.Dense(self.units, use_bias=self.use_bias,
                                         kernel_initializer=self.kernel_initializer,
                                         name="dense", dtype=self.dtype_policy)
        self.modulator = keras.layers.Dense(self.units if mod_units == "units" else 1,
                                            kernel_initializer=self.modulator_initializer,
                                            name="modulator", dtype=self.dtype_policy)

    def get_config(self):
        config = super().get_config()
        config.update(units=self.units, mod_units=self.mod_units)
        return config


@keras.saving.register_keras_serializable(package="nemot")
class ModulatedConv2D(_ModulatedLayer):
    """A Conv2D whose filters share one modulator (paper Figure 1): a 1-filter Conv2D
    with the same kernel size, stride and padding, its [B, H, W, 1] map broadcast over
    the channels before ``phi``.

    Adds ``k_h k_w C_in + 1`` parameters (the modulator's bias is not stated in the
    paper; we keep it, as a Keras Conv2D has one).

    Args:
        filters, kernel_size, strides, padding: as ``keras.layers.Conv2D``.
        activation: ``phi``; None leaves the scaled convolution for a following
            BN-ReLU (the paper's DenseNet, Figure 2).
        tau, position, use_bias, kernel_initializer, modulator_initializer: as
            :class:`ModulatedDense`.

    Example:
        >>> conv = ModulatedConv2D(32, 3, padding="same", activation="relu")
        >>> conv(ops.ones((1, 8, 8, 3))).shape
        (1, 8, 8, 32)
    """

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", **kwargs):
        super().__init__(**kwargs)
        self.filters = int(filters)
        self.kernel_size = kernel_size
        self.strides = strides
        self.padding = padding
        common = dict(kernel_size=kernel_size, strides=strides, padding=padding,
                      dtype=self.dtype_policy)
        self.target = keras.layers.Conv2D(self.filters, use_bias=self.use_bias,
                                          kernel_initializer=self.kernel_initializer,
                                          name="conv", **common)
        self.modulator = keras.layers.Conv2D(1, kernel_initializer=self.modulator_initializer,
                                             name="modulator", **common)

    def get_config(self):
        config = super().get_config()
        config.update(filters=self.filters, kernel_size=self.kernel_size,
                      strides=self.strides, padding=self.padding)
        return config


@keras.saving.register_keras_serializable(package="nemot")
class ModulatedLSTMCell(keras.layers.LSTMCell):
    """The paper's modulated LSTM cell (section 2, Figure 3), a Keras RNN cell.

    A node-wise modulation gate scales the candidate's pre-activation::

        m_t  = tau(x_t W_Mx + h_{t-1} W_Mh + b_M)                 N units
        C~_t = tanh(m_t * (x_t W_cx + h_{t-1} W_ch + b_c))        position "pre"
        C~_t = m_t * tanh(x_t W_cx + h_{t-1} W_ch + b_c)          position "post"

    Input, forget and output gates and the state update are Keras' ``LSTMCell``'s
    (gate order i, f, c, o in ``kernel``/``recurrent_kernel``/``bias``, so its weights
    copy in unchanged); with ``m_t = 1`` (``tau="2sigmoid"`` and zero modulator weights)
    the cell is exactly ``LSTMCell``. Position ``"post"`` with ``tau="sigmoid"`` is the
    paper's control C3, an LSTM with an extra input gate: the same parameters, the
    gate after the tanh instead of a gain before it.

    The modulator has ``(input_dim + units + 1) units`` weights (``modulator_kernel``,
    ``modulator_recurrent_kernel``, ``modulator_bias``), initialised like the other
    gates (Glorot, orthogonal, zeros). Dropout inside the cell is not supported (the
    paper drops out the last hidden state only).

    Args:
        units: N, the hidden size.
        tau: ``"sigmoid"`` (Simple-LSTM), ``"tanhshrink"`` (Advanced-LSTM) or ``"2sigmoid"``.
        position: ``"pre"`` (the paper) or ``"post"`` (control C3).
        **kwargs: ``keras.layers.LSTMCell`` arguments.

    Example:
        >>> rnn = keras.layers.RNN(ModulatedLSTMCell(32, tau="tanhshrink"))
        >>> rnn(ops.ones((2, 5, 8))).shape
        (2, 32)
    """

    def __init__(self, units, tau="sigmoid", position="pre", **kwargs):
        super().__init__(units, **kwargs)
        if self.dropout or self.recurrent_dropout:
            raise ValueError("ModulatedLSTMCell: dropout inside the cell is not supported; "
                             "drop out the RNN's output instead")
        self.tau = tau
        self.tau_fn = tau_function(tau)
        self.position = check_position(position)

    def build(self, input_shape):
        super().build(input_shape)
        self.modulator_kernel = self.add_weight(
            (input_shape[-1], self.units), name="modulator_kernel",
            initializer=self.kernel_initializer)
        self.modulator_recurrent_kernel = self.add_weight(
            (self.units, self.units), name="modulator_recurrent_kernel",
            initializer=self.recurrent_initializer)
        self.modulator_bias = self.add_weight((self.units,), name="modulator_bias",
                                              initializer="zeros")

    def call(self, inputs, states, training=False):
        h_tm1, c_tm1 = states[0], states[1]
        z = ops.matmul(inputs, self.kernel) + ops.matmul(h_tm1, self.recurrent_kernel)
        if self.use_bias:
            z = z + self.bias
        z_i, z_f, z_c, z_o = ops.split(z, 4, axis=-1)
        gain = self.tau_fn(ops.matmul(inputs, self.modulator_kernel)
                           + ops.matmul(h_tm1, self.modulator_recurrent_kernel)
                           + self.modulator_bias)
        candidate = modulate(z_c, gain, self.activation, self.position)
        c = self.recurrent_activation(z_f) * c_tm1 + self.recurrent_activation(z_i) * candidate
        h = self.recurrent_activation(z_o) * self.activation(c)
        return h, [h, c]

    def get_config(self):
        config = super().get_config()
        config.update(tau=self.tau, position=self.position)
        return config


MOD_UNITS = (1, "d_ff")
CONTEXTS = ("input", "neuromodulatory")


@keras.saving.register_keras_serializable(package="nemot")
class ModulatedFFN(Modulation):
    """Kind ``"modulated_ffn"``: the feed-forward network with a modulated activation,
    ``W2 phi(tau(c W_M + b_M) * (x W1 + b1))`` (the paper's modulated feed-forward layer).

    An ``activation``-site modulation (:mod:`nemot.modulation.base`): the host computes
    ``h = x W1 + b1`` and ``W2``; this layer replaces ``phi(h)``.

    Args:
        mod_units: 1 (one modulator per position, the paper's CNN form) or ``"d_ff"``
            (one per unit, the paper's LSTM form).
        tau: ``"2sigmoid"`` (default: with the zero initialisation the layer starts as
            the plain FFN, so pretrained weights keep their function), ``"sigmoid"``
            (halves every pre-activation at zero init) or ``"tanhshrink"``.
        context: ``"input"`` (``c = x``, the feed-forward input: self-modulation as in
            the paper) or ``"neuromodulatory"`` (``c`` = NeMoT's neuromodulatory output
            at each text position, ``conditioning["context_tokens"]``, which only the
            output set has: NeMoT then gates before the nonlinearity as well as after
            its vanilla set).
        position: ``"pre"`` (the paper) or ``"post"`` (``tau(.) * phi(h)``, output
            gating, for comparing the two with all else equal).
        modulator_initializer: of ``W_M``; default zeros, except for tanhshrink
            (``tanhshrink`` and its slope are 0 at 0, so zero weights would never
            train): Glorot uniform. ``b_M`` starts at zero.
        per_task: one modulator per task: ``W_M`` and ``b_M`` stacked [tasks, ...]
            (``modulator_kernel``, ``modulator_bias``) and each example takes its own
            task's rows (``conditioning["task_index"]``), so the slope of every unit
            depends on the input *and* the task (the multi-task comparison's form; the
            paper's networks had one task).

    Example (TOML, NeMoT's output set modulated by the neuromodulatory output)::

        [[model.modulation]]
        kind = "modulated_ffn"
        sets = ["output"]
        context = "neuromodulatory"
        mod_units = "d_ff"
    """

    site = "activation"

    def __init__(self, mod_units=1, tau="2sigmoid", context="input", position="pre",
                 modulator_initializer=None, per_task=False, **kwargs):
        super().__init__(**kwargs)
        if mod_units not in MOD_UNITS:
            raise ValueError(f"mod_units={mod_units!r}: expected one of {MOD_UNITS}")
        if context not in CONTEXTS:
            raise ValueError(f"context={context!r}: expected one of {CONTEXTS}")
        self.mod_units = mod_units
        self.tau = tau
        self.tau_fn = tau_function(tau)
        self.context = context
        self.position = check_position(position)
        if modulator_initializer is None:
            modulator_initializer = "glorot_uniform" if tau == "tanhshrink" else "zeros"
        self.modulator_initializer = modulator_initializer
        self.per_task = bool(per_task)

    @classmethod
    def needs(cls, options):
        return (("context_tokens",) if options.get("context") == "neuromodulatory" else ()) \
            + (("task_index",) if options.get("per_task") else ())

    def build(self, h_shape, x_shape):
        units = h_shape[-1] if self.mod_units == "d_ff" else 1
        if self.per_task:
            self.modulator_kernel = self.add_weight(
                (self.num_tasks, x_shape[-1], units), self.modulator_initializer,
                name="modulator_kernel")
            self.modulator_bias = self.add_weight((self.num_tasks, units), "zeros",
                                                  name="modulator_bias")
            return
        # EinsumDense as the host's projections: Dense has no XLA gradient inside the
        # ops.cond that routes NeMoT's output blocks.
        self.modulator = keras.layers.EinsumDense(
            "abc,cd->abd", (None, units), bias_axes="d",
            kernel_initializer=self.modulator_initializer, name="modulator",
            dtype=self.dtype_policy)
        self.modulator.build(x_shape)

    def call(self, h, x, conditioning=None, activation=None, training=None):
        context = x
        if self.context == "neuromodulatory":
            context = ops.cast(require(conditioning, "context_tokens", "ModulatedFFN"),
                               x.dtype)
        if self.per_task:
            index = require(conditioning, "task_index", "ModulatedFFN(per_task=True)")
            z = task_dense(context, per_task(self.modulator_kernel, index),
                           per_task(self.modulator_bias, index))
        else:
            z = self.modulator(context)
        return modulate(h, self.tau_fn(z), activation, self.position)

    def get_config(self):
        config = super().get_config()
        config.update(mod_units=self.mod_units, tau=self.tau, context=self.context,
                      position=self.position, per_task=self.per_task,
                      modulator_initializer=self.modulator_initializer)
        return config
