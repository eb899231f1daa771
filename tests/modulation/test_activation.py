"""Modulated activations (*Context Dependent Modulation of Activation Function*): the layers against independent formulas, the
identity at 2-sigmoid zero init, pre- vs post-activation gating, the LSTM cell against
Keras' LSTMCell, NeMoT hosting ModulatedFFN, and a learnability toy."""

import keras
import numpy as np
import pytest
from keras import ops

import nemot
from nemot import vocab
from nemot.layers import TransformerLayer
from nemot.models.losses import NeMoTLoss
from nemot.models.weights import transfer_weights
from nemot.modulation.activation import (
    ModulatedConv2D,
    ModulatedDense,
    ModulatedFFN,
    ModulatedLSTMCell,
    tanhshrink,
)

RNG = np.random.default_rng(0)
TINY = nemot.NeMoTConfig.preset("tiny")


def sigmoid(z):
    return 1 / (1 + np.exp(-z))


def gelu(z):
    return np.asarray(keras.activations.gelu(z, approximate=False))


def relu(z):
    return np.maximum(z, 0)


def normal(*shape, scale=1.0):
    return RNG.normal(0, scale, shape).astype("float32")


def built_ffn(d_model=6, d_ff=10, **options):
    layer = ModulatedFFN(**options)
    layer.build((None, None, d_ff), (None, None, d_model))
    return layer


def randomize(layer, scale=0.7):
    for w in layer.weights:
        w.assign(normal(*w.shape, scale=scale))


# ----------------------------------------------------------------- ModulatedFFN

@pytest.mark.parametrize("mod_units", [1, "d_ff"])
def test_2sigmoid_with_zero_modulator_is_the_plain_activation(mod_units):
    layer = built_ffn(mod_units=mod_units, tau="2sigmoid")
    assert all(not np.any(np.asarray(w)) for w in layer.weights)  # zero W_M and b_M
    h, x = normal(2, 5, 10, scale=2), normal(2, 5, 6)
    out = layer(h, x, activation=keras.activations.gelu)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(keras.activations.gelu(h)))


@pytest.mark.parametrize("mod_units,gain_shape", [(1, (2, 5, 1)), ("d_ff", (2, 5, 10))])
def test_gain_broadcasts_one_modulator_or_one_per_unit(mod_units, gain_shape):
    layer = built_ffn(mod_units=mod_units, tau="tanhshrink")
    randomize(layer)
    h, x = normal(2, 5, 10), normal(2, 5, 6)
    kernel, bias = (np.asarray(w) for w in layer.modulator.weights)
    z = x @ kernel + bias
    assert z.shape == gain_shape
    expected = gelu((z - np.tanh(z)) * h)  # tau = tanhshrink, materialised in numpy
    out = layer(h, x, activation=lambda v: keras.activations.gelu(v, approximate=False))
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5, atol=1e-6)


def test_relu_is_positively_homogeneous_gelu_and_a_sign_changing_tau_are_not():
    h, x = normal(3, 4, 10, scale=2), normal(3, 4, 6)

    def both(tau, activation):
        pre, post = built_ffn(tau=tau, mod_units="d_ff"), built_ffn(tau=tau, mod_units="d_ff",
                                                                     position="post")
        randomize(pre)
        for a, b in zip(post.weights, pre.weights):
            a.assign(b)
        return (np.asarray(m(h, x, activation=activation)) for m in (pre, post))

    pre, post = both("sigmoid", keras.activations.relu)
    np.testing.assert_allclose(pre, post, rtol=1e-6, atol=1e-6)
    pre, post = both("sigmoid", keras.activations.gelu)
    assert np.abs(pre - post).max() > 1e-2
    pre, post = both("tanhshrink", keras.activations.relu)
    assert np.abs(pre - post).max() > 1e-2


def test_options_are_checked():
    with pytest.raises(ValueError, match="tau='relu': expected one of"):
        ModulatedFFN(tau="relu")
    with pytest.raises(ValueError, match="mod_units=4: expected one of"):
        ModulatedFFN(mod_units=4)
    with pytest.raises(ValueError, match="context='task': expected one of"):
        ModulatedFFN(context="task")
    with pytest.raises(ValueError, match="position='after': expected one of"):
        ModulatedFFN(position="after")
    layer = built_ffn(context="neuromodulatory")
    with pytest.raises(ValueError, match="ModulatedFFN needs conditioning\\['context_tokens'\\]"):
        layer(normal(1, 2, 10), normal(1, 2, 6), conditioning={}, activation=ops.tanh)


def test_transformer_layer_hosting_the_zero_init_ffn_is_the_plain_layer():
    x, mask = normal(2, 5, 8), np.tril(np.ones((5, 5), bool))[None].repeat(2, 0)
    plain = TransformerLayer(2, 16, dropout=0.0)
    hosted = TransformerLayer(2, 16, dropout=0.0, modulations=[ModulatedFFN(mod_units="d_ff")])
    plain.build(x.shape)
    hosted.build(x.shape)
    for name in ("self_attention", "self_attention_layer_norm", "feedforward_intermediate_dense",
                 "feedforward_output_dense", "feedforward_layer_norm"):
        for a, b in zip(getattr(hosted, name).weights, getattr(plain, name).weights, strict=True):
            a.assign(b)
    np.testing.assert_allclose(np.asarray(hosted(x, mask)[0]), np.asarray(plain(x, mask)[0]),
                               atol=1e-6)


# -------------------------------------------------------------------- NeMoT

def token_ids(tasks):
    texts = ((5, 6, 7, 8), (9, 10, vocab.PAD_ID, vocab.PAD_ID))
    return np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(t), *text]
                     for t, text in zip(tasks, texts)], "int32")


NM_FFN = {"kind": "modulated_ffn", "sets": ["output"], "context": "neuromodulatory",
          "mod_units": "d_ff"}


def test_nemot_with_the_zero_init_ffn_equals_nemot_and_trains_a_step():
    keras.utils.set_random_seed(0)
    cfg = TINY.replace(output_blocks=("lm", "gqa"), num_vanilla_layers=1, num_nm_layers=1,
                       num_output_layers=1)
    plain = nemot.build_model(cfg)
    modulated = nemot.build_model(cfg.replace(modulation=[
        NM_FFN, {"kind": "modulated_ffn", "sets": ["vanilla"], "layers": [0]}]))
    _, fresh, unplaced = transfer_weights(plain, modulated)
    assert not unplaced and fresh and all("modulator" in path for path in fresh)
    ids = token_ids(["gqa", "lm"])
    before = np.asarray(modulated({"token_ids": ids})["logits"])
    np.testing.assert_allclose(before, np.asarray(plain({"token_ids": ids})["logits"]), atol=1e-5)

    modulated.compile(keras.optimizers.Adam(1e-2), loss=NeMoTLoss(), run_eagerly=True)
    targets = np.where(ids[:, 4:] == vocab.PAD_ID, -1, ids[:, 4:])
    targets = np.pad(targets, ((0, 0), (0, 1)), constant_values=-1).astype("int32")
    modulated.fit({"token_ids": ids}, {"task_targets": targets, "lm_targets": targets},
                  batch_size=2, epochs=1, verbose=0)
    kernels = [w for w in modulated.weights if "modulator" in w.path and "kernel" in w.path]
    assert kernels and all(np.abs(np.asarray(k)).max() > 0 for k in kernels)


def test_the_neuromodulatory_context_reaches_the_output_set_only():
    keras.utils.set_random_seed(0)
    model = nemot.build_model(TINY.replace(modulation=[NM_FFN]))
    ffn = model.backbone.output_set.blocks["gqa"].transformer_layers[0].activation_modulation
    assert isinstance(ffn, ModulatedFFN) and ffn.context == "neuromodulatory"
    ids = token_ids(["gqa", "gqa"])
    before = np.asarray(model({"token_ids": ids})["logits"])
    ffn.modulator.kernel.assign(normal(*ffn.modulator.kernel.shape))
    assert np.abs(np.asarray(model({"token_ids": ids})["logits"]) - before).max() > 1e-4
    with pytest.raises(ValueError, match="'modulated_ffn' in the vanilla set needs conditioning"):
        nemot.build_model(TINY.replace(modulation=[dict(NM_FFN, sets=["vanilla"])]))


# ------------------------------------------------------- CNN and dense layers

def test_modulated_conv2d_scales_every_channel_by_one_map():
    conv = ModulatedConv2D(4, 3, strides=2, padding="same", activation="relu")
    x = normal(2, 7, 7, 3)
    out = np.asarray(conv(x))
    assert conv.count_params() == (3 * 3 * 3 * 4 + 4) + (3 * 3 * 3 + 1)
    plain = np.asarray(conv.target(x))
    gain = sigmoid(np.asarray(conv.modulator(x)))
    assert gain.shape == (2, 4, 4, 1)
    np.testing.assert_allclose(out, relu(gain * plain), rtol=1e-5, atol=1e-6)


def test_modulated_dense_matches_the_papers_equation():
    layer = ModulatedDense(5, activation="tanh", tau="sigmoid", mod_units=1)
    x = normal(3, 4)
    layer.build(x.shape)
    w, b = (np.asarray(v) for v in layer.target.weights)
    wm, bm = (np.asarray(v) for v in layer.modulator.weights)
    expected = np.tanh(sigmoid(x @ wm + bm) * (x @ w + b))  # o = phi(tau(w_l x) w_k x)
    np.testing.assert_allclose(np.asarray(layer(x)), expected, rtol=1e-5, atol=1e-6)


def test_modulated_layers_survive_a_keras_save_and_load(tmp_path):
    images = keras.Input((6, 6, 2))
    y = ModulatedConv2D(3, 3, activation="relu", tau="2sigmoid", position="post")(images)
    y = ModulatedDense(4, activation="tanh", tau="tanhshrink", mod_units=1)(
        keras.layers.Flatten()(y))
    tokens = keras.Input((None,), dtype="int32")
    z = keras.layers.Embedding(9, 4, mask_zero=True)(tokens)
    z = keras.layers.RNN(ModulatedLSTMCell(5, tau="tanhshrink", position="post"))(z)
    model = keras.Model([images, tokens], [y, z])
    x = [normal(2, 6, 6, 2), np.array([[1, 2, 3], [4, 5, 0]], "int32")]
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    for a, b in zip(model(x), loaded(x)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    cell = loaded.layers[-1].cell
    assert (cell.tau, cell.position) == ("tanhshrink", "post")


# ------------------------------------------------------------------- the LSTM

def reference_lstm(x, mask, weights, tau=None, position="pre"):
    """The paper's modulated LSTM (Figure 3) in numpy, Keras gate order i, f, c, o;
    ``tau=None`` is the plain LSTM. Masked steps keep the state."""
    kernel, recurrent, bias = weights[:3]
    n = recurrent.shape[0]
    h, c = np.zeros((len(x), n)), np.zeros((len(x), n))
    for t in range(x.shape[1]):
        z = x[:, t] @ kernel + h @ recurrent + bias
        i, f, o = sigmoid(z[:, :n]), sigmoid(z[:, n:2 * n]), sigmoid(z[:, 3 * n:])
        zc = z[:, 2 * n:3 * n]
        if tau is None:
            candidate = np.tanh(zc)
        else:
            m = tau(x[:, t] @ weights[3] + h @ weights[4] + weights[5])
            candidate = np.tanh(m * zc) if position == "pre" else m * np.tanh(zc)
        c_new = f * c + i * candidate
        h_new = o * np.tanh(c_new)
        keep = mask[:, t:t + 1]
        h, c = np.where(keep, h_new, h), np.where(keep, c_new, c)
    return h


def run_cell(cell, x, mask):
    rnn = keras.layers.RNN(cell)
    return np.asarray(rnn(x, mask=mask)), rnn


def test_lstm_cell_with_tau_one_equals_keras_lstm_cell():
    x, mask = normal(3, 6, 5), np.array([[1] * 6, [1] * 4 + [0] * 2, [1] * 2 + [0] * 4], bool)
    cell = ModulatedLSTMCell(4, tau="2sigmoid")
    out, _ = run_cell(cell, x, mask)
    for w in (cell.modulator_kernel, cell.modulator_recurrent_kernel):
        w.assign(np.zeros(w.shape))
    for w in (cell.kernel, cell.recurrent_kernel, cell.bias):
        w.assign(normal(*w.shape))
    keras_cell = keras.layers.LSTMCell(4)
    run_cell(keras_cell, x, mask)
    for a, b in zip((keras_cell.kernel, keras_cell.recurrent_kernel, keras_cell.bias),
                    (cell.kernel, cell.recurrent_kernel, cell.bias)):
        a.assign(b)
    modulated, _ = run_cell(cell, x, mask)
    plain, _ = run_cell(keras_cell, x, mask)
    np.testing.assert_allclose(modulated, plain, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(plain, reference_lstm(x, mask, [np.asarray(w) for w in (
        cell.kernel, cell.recurrent_kernel, cell.bias)]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("tau,fn,position", [("sigmoid", sigmoid, "pre"),
                                             ("tanhshrink", lambda z: z - np.tanh(z), "pre"),
                                             ("sigmoid", sigmoid, "post")])
def test_modulated_lstm_cell_matches_the_papers_equations(tau, fn, position):
    x, mask = normal(2, 5, 3), np.array([[1] * 5, [1] * 3 + [0] * 2], bool)
    cell = ModulatedLSTMCell(4, tau=tau, position=position)
    run_cell(cell, x, mask)
    randomize(cell)
    out, _ = run_cell(cell, x, mask)
    weights = [np.asarray(w, "float64") for w in (
        cell.kernel, cell.recurrent_kernel, cell.bias, cell.modulator_kernel,
        cell.modulator_recurrent_kernel, cell.modulator_bias)]
    np.testing.assert_allclose(out, reference_lstm(x, mask, weights, fn, position), rtol=1e-4,
                               atol=1e-5)
    # the paper's Table 3 counts 5 N^2 for a modulated cell (gates x hidden-to-hidden)
    assert cell.modulator_recurrent_kernel.shape == (4, 4)
    assert cell.count_params() == 5 * 4 * (3 + 4 + 1)


def test_tanhshrink_is_x_minus_tanh_x():
    z = np.linspace(-3, 3, 13).astype("float32")
    np.testing.assert_allclose(np.asarray(tanhshrink(z)), z - np.tanh(z), atol=1e-6)


# ------------------------------------------------------------ learnability toy

class Readout(keras.layers.Layer):
    """R independent linear read-outs: ``y[:, r] = h[:, r, :] . a[r] + b[r]``."""

    def __init__(self, replicas, **kwargs):
        super().__init__(**kwargs)
        self.replicas = replicas

    def build(self, shape):
        self.width = shape[-1] // self.replicas
        self.a = self.add_weight((self.replicas, self.width), initializer="glorot_uniform")
        self.b = self.add_weight((self.replicas,), initializer="zeros")

    def call(self, h):
        return ops.sum(ops.reshape(h, (-1, self.replicas, self.width)) * self.a, -1) + self.b


def test_a_modulated_tanh_unit_learns_context_dependent_slopes_the_controls_cannot():
    """``y = tanh(k_c <w, x>)`` with a context bit c choosing k_c: k in {0.2, 5} (gain,
    tau = sigmoid) or k in {2, -2} (sign flip, tau = tanhshrink). One modulated tanh unit
    (12 parameters with its read-out) against the C3-style control (one unit with an
    extra sigmoid gate after the tanh, 12) and a plain net of two tanh units (13).
    Each net is trained from 8 random starts at once (independent replicas); the best
    start of each must rank modulated first with a margin."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(512, 3)).astype("float32")
    c = rng.integers(0, 2, (512, 1)).astype("float32")
    inputs_np = np.concatenate([x, c], 1)
    z = x @ np.array([0.6, -0.8, 0.0], "float32")
    targets = {task: np.tanh(np.where(c[:, 0] > 0, k1, k0) * z)[:, None].astype("float32")
               for task, (k0, k1) in (("gain", (0.2, 5.0)), ("sign", (2.0, -2.0)))}
    replicas = 8
    keras.utils.set_random_seed(0)
    inputs, outputs, sizes = keras.Input((4,)), {}, {}
    for task, tau in (("gain", "sigmoid"), ("sign", "tanhshrink")):
        hidden = {
            "modulated": ModulatedDense(replicas, activation="tanh", tau=tau),
            "c3": ModulatedDense(replicas, activation="tanh", tau="sigmoid", position="post"),
            "plain": keras.layers.Dense(2 * replicas, activation="tanh"),
        }
        for kind, layer in hidden.items():
            readout = Readout(replicas, name=f"{task}_{kind}")
            outputs[readout.name] = readout(layer(inputs))
            sizes[kind] = (layer.count_params() + readout.count_params()) // replicas
    assert sizes == {"modulated": 12, "c3": 12, "plain": 13}
    model = keras.Model(inputs, outputs)
    model.compile(keras.optimizers.Adam(0.1), {name: "mse" for name in outputs})
    repeat = 100  # 400 steps of batch 128
    model.fit(np.tile(inputs_np, (repeat, 1)),
              {name: np.tile(targets[name.split("_")[0]], (repeat, 1)) for name in outputs},
              batch_size=128, epochs=1, verbose=0)
    predictions = model.predict(inputs_np, verbose=0)
    best = {name: float(np.min(np.mean((p - targets[name.split("_")[0]]) ** 2, axis=0)))
            for name, p in predictions.items()}
    for task in ("gain", "sign"):
        modulated = best[f"{task}_modulated"]
        assert modulated < 1e-3, best
        assert modulated < 0.5 * best[f"{task}_c3"], best
        assert modulated < 0.5 * best[f"{task}_plain"], best


def test_a_per_task_modulator_takes_each_examples_own_task_weights():
    layer = ModulatedFFN(mod_units="d_ff", tau="sigmoid", per_task=True, num_tasks=3)
    layer.build((None, None, 10), (None, None, 6))
    randomize(layer)
    assert ModulatedFFN.needs({"per_task": True}) == ("task_index",)
    kernel, bias = np.asarray(layer.modulator_kernel), np.asarray(layer.modulator_bias)
    assert kernel.shape == (3, 6, 10) and bias.shape == (3, 10)
    h, x, tasks = normal(2, 5, 10), normal(2, 5, 6), np.array([2, 0], "int32")
    out = layer(h, x, conditioning={"task_index": tasks}, activation=keras.activations.relu)
    expected = [relu(sigmoid(x[b] @ kernel[t] + bias[t]) * h[b]) for b, t in enumerate(tasks)]
    np.testing.assert_allclose(np.asarray(out), np.stack(expected), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"ModulatedFFN\(per_task=True\) needs "
                                         r"conditioning\['task_index'\]"):
        layer(h, x, conditioning={}, activation=keras.activations.relu)
