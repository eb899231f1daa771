"""The modulation extension point: every site of TransformerLayer, conditioning from
NeMoT's sets, shared layers, config errors. The modulations here are small test
kinds registered for this module only."""

import keras
import numpy as np
import pytest
from keras import ops

import nemot
from nemot import modulation, vocab
from nemot.layers import TransformerLayer
from nemot.modulation.base import DenseModulation, Modulation, per_task, require, task_index

TINY = nemot.NeMoTConfig.preset("tiny")


class TaskBias(Modulation):
    """parallel: a per-task vector times a scalar of the input, the scalar's weights
    shared by every layer."""

    site = "parallel"

    @classmethod
    def shared_layer(cls, num_tasks, d_model, name, dtype=None, **options):
        return keras.layers.Dense(1, use_bias=False, name=name)

    def build(self, input_shape):
        self.bias = self.add_weight((self.num_tasks, input_shape[-1]), initializer="zeros",
                                    name="bias")

    def call(self, h, conditioning, attention_mask, training=None):
        rows = per_task(self.bias, require(conditioning, "task_index", "TaskBias"))
        return self.shared(h) * rows[:, None, :]


class Gain(Modulation):
    """activation: phi(2 sigmoid(x W) * h), the identity at zero init."""

    site = "activation"

    def __init__(self, context="input", **kwargs):
        super().__init__(**kwargs)
        self.context = context

    @classmethod
    def needs(cls, options):
        return ("context_tokens",) if options.get("context") == "nm" else ()

    def build(self, h_shape, x_shape):
        self.w = keras.layers.Dense(h_shape[-1], kernel_initializer="zeros", name="w")
        self.w.build(x_shape)

    def call(self, h, x, conditioning, activation, training=None):
        source = conditioning["context_tokens"] if self.context == "nm" else x
        return activation(2.0 * ops.sigmoid(self.w(source)) * h)


class ScaledDense(DenseModulation):
    """dense: (x W + b)(1 + s_task), with the plain kernel and bias."""

    def __init__(self, equation, output_shape, bias_axes, target=None, **kwargs):
        super().__init__(equation, output_shape, bias_axes, **kwargs)

    @classmethod
    def replaces(cls, options):
        return (options.get("target", "feedforward_output_dense"),)

    def build(self, input_shape):
        super().build(input_shape)
        self.scale = self.add_weight((self.num_tasks,), initializer="zeros", name="scale")

    def call(self, x, conditioning=None):
        s = per_task(self.scale, conditioning["task_index"])
        y = self.plain(x)
        return y * ops.reshape(1.0 + s, (-1,) + (1,) * (len(y.shape) - 1))


@pytest.fixture(autouse=True, scope="module")
def registered():
    kinds = dict(modulation.KINDS)
    for kind, cls in (("task_bias", TaskBias), ("gain", Gain), ("scaled", ScaledDense)):
        modulation.register(kind, cls)
    yield
    modulation.KINDS.clear()
    modulation.KINDS.update(kinds)


def ids(tasks, texts=((5, 6, 7, 8), (9, 10, vocab.PAD_ID, vocab.PAD_ID))):
    return np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(t), *text]
                     for t, text in zip(tasks, texts)], "int32")


def logits(model, x):
    return np.asarray(model({"token_ids": x}, training=False)["logits"])


def copy_of(model, config):
    """``config``'s model with every weight ``model`` has copied in."""
    other = nemot.build_model(config)
    _, fresh, unplaced = nemot.models.weights.transfer_weights(model, other)
    assert not unplaced
    return other, fresh


@pytest.mark.parametrize("spec", [
    {"kind": "task_bias", "sets": ["vanilla", "output"]},
    {"kind": "gain", "sets": ["neuromodulatory"], "layers": [1]},
    {"kind": "scaled", "sets": ["vanilla", "output"]},
    {"kind": "scaled", "sets": ["output"], "target": "query"},
])
def test_a_modulation_at_its_initial_values_leaves_nemot_unchanged(spec):
    keras.utils.set_random_seed(0)
    plain = nemot.build_model(TINY)
    modulated, fresh = copy_of(plain, TINY.replace(modulation=[spec]))
    assert fresh, "the modulation added weights"
    x = ids(["gqa", "mqa"])
    np.testing.assert_allclose(logits(modulated, x), logits(plain, x), atol=1e-5)


def test_each_example_reads_its_own_task_row():
    keras.utils.set_random_seed(0)
    cfg = TINY.replace(modulation=[{"kind": "task_bias", "sets": ["vanilla"]}])
    model = nemot.build_model(cfg)
    layer = model.backbone.vanilla_set.transformer_layers[0]
    bias = layer.parallel[0].bias
    before = logits(model, ids(["gqa", "mqa"]))
    row = cfg.output_blocks.index("gqa")
    value = np.zeros(bias.shape, "float32")
    value[row] = np.linspace(-1, 1, cfg.d_model)  # not constant: LayerNorm would remove it
    bias.assign(value)
    after = logits(model, ids(["gqa", "mqa"]))
    assert np.abs(after[0] - before[0]).max() > 1e-4  # the gqa example moved
    np.testing.assert_allclose(after[1], before[1], atol=1e-6)  # the mqa example did not


def test_a_shared_layer_is_one_set_of_weights_in_every_layer():
    cfg = TINY.replace(modulation=[{"kind": "task_bias", "sets": ["vanilla"]}])
    model = nemot.build_model(cfg)
    shared = [layer.parallel[0].shared for layer in model.backbone.vanilla_set.transformer_layers]
    assert all(s is shared[0] for s in shared)
    kernels = [w for w in model.weights if w.path.endswith("task_bias_shared/kernel")]
    assert len(kernels) == 1
    per_layer = cfg.num_vanilla_layers * len(cfg.output_blocks) * cfg.d_model
    plain = nemot.build_model(TINY).count_params()
    assert model.count_params() == plain + per_layer + cfg.d_model


def test_output_set_modulations_read_the_neuromodulatory_output():
    keras.utils.set_random_seed(0)
    cfg = TINY.replace(modulation=[{"kind": "gain", "sets": ["output"], "context": "nm"}])
    model = nemot.build_model(cfg)
    gain = model.backbone.output_set.blocks["gqa"].transformer_layers[0].activation_modulation
    x = ids(["gqa", "gqa"])
    before = logits(model, x)
    gain.w.kernel.assign(np.full(gain.w.kernel.shape, 0.5, "float32"))
    assert np.abs(logits(model, x) - before).max() > 1e-4


def test_a_set_that_cannot_give_the_conditioning_refuses_the_config():
    cfg = TINY.replace(modulation=[{"kind": "gain", "sets": ["vanilla"], "context": "nm"}])
    with pytest.raises(ValueError, match="'gain' in the vanilla set needs conditioning "
                                         "\\['context_tokens'\\]"):
        nemot.build_model(cfg)
    with pytest.raises(ValueError, match="modulation kind 'nope': expected one of"):
        nemot.build_model(TINY.replace(modulation=[{"kind": "nope"}]))
    with pytest.raises(ValueError, match="'gain' \\(Gain\\): bad options"):
        nemot.build_model(TINY.replace(modulation=[{"kind": "gain", "size": 3}]))


def test_dense_modulations_keep_the_plain_weight_names_for_gpt2():
    cfg = TINY.replace(modulation=[{"kind": "scaled", "sets": ["vanilla"]}])
    model = nemot.build_model(cfg)
    layer = model.backbone.vanilla_set.transformer_layers[0]
    assert isinstance(layer.feedforward_output_dense, ScaledDense)
    plain = nemot.build_model(TINY).backbone.vanilla_set.transformer_layers[0]
    assert layer.feedforward_output_dense.kernel.shape == plain.feedforward_output_dense.kernel.shape


def test_cached_decoding_passes_the_conditioning(tmp_path):
    keras.utils.set_random_seed(0)
    cfg = TINY.replace(modulation=[{"kind": "gain", "sets": ["output"], "context": "nm"},
                                   {"kind": "scaled", "sets": ["vanilla"]}])
    model = nemot.build_model(cfg)
    for layer in model.backbone.output_set.blocks["gqa"].transformer_layers:
        w = layer.activation_modulation.w.kernel
        w.assign(np.random.default_rng(0).normal(0, 0.5, w.shape).astype("float32"))
    prompt = list(ids(["gqa"])[0, :6])
    full = logits(model, np.array([prompt]))[0, -1]
    buffer = np.full((1, 3 + 8), vocab.PAD_ID, "int32")
    buffer[0, :5] = prompt[:5]
    prompt_mask = np.zeros((1, 3 + 8), bool)
    prompt_mask[0, 3:5] = True
    _, cache = model._build_cache(buffer, prompt_mask)
    step, _, cache = model.call_with_cache(np.array([prompt[5:6]], "int32"), cache, 2)
    np.testing.assert_allclose(np.asarray(step)[0, -1], full, atol=1e-5)


def test_task_index_follows_the_host_task_list():
    token_ids = [vocab.task_token_id(b) for b in ("gqa", "lm", "mqa")]
    index = task_index(np.array(token_ids, "int32"), TINY.task_token_ids)
    assert list(np.asarray(index)) == [TINY.output_blocks.index(b) for b in ("gqa", "lm", "mqa")]


def test_transformer_layer_rejects_misplaced_modulations():
    with pytest.raises(ValueError, match="dense_replacements \\['output'\\]"):
        TransformerLayer(2, 8, dense_replacements={"output": ScaledDense})
    with pytest.raises(ValueError, match="pass dense-site modulations through"):
        TransformerLayer(2, 8, modulations=[ScaledDense("abc,cd->abd", (None, 4), "d")])
    with pytest.raises(ValueError, match="equation 'ab,bc->ac': expected one of"):
        ScaledDense("ab,bc->ac", (None, 4), "c")
