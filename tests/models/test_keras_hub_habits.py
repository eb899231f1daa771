"""What a KerasHub user does with a causal LM works on nemot's as on GPT-2's: the
tokenizer in and out of ``tf.data``, presets and their dtype, checked inputs, user
metrics, LoRA and int8 quantization. One tiny NeMoT is built for the module."""

import gc
import json
import re
import warnings

import h5py
import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import nemot
from nemot import vocab
from nemot.models.nemot_tokenizer import NeMoTTokenizer

TEXTS = ["Hello world", "<sep> yes </s>"]
EXAMPLES = ["<q> Is the sky blue? <sep> yes </s>", "<q> Is grass red? <sep> no </s>"]
# A GPT-2 byte-pair vocabulary small enough to build in memory ("Ġ" is a leading space).
GPT2_VOCABULARY = {"<|endoftext|>": 0, "H": 1, "e": 2, "l": 3, "o": 4, "Ġ": 5, "w": 6,
                   "r": 7, "d": 8, "y": 9, "s": 10, "<": 11, ">": 12, "p": 13, "/": 14,
                   "He": 15, "ll": 16, "Ġw": 17}
GPT2_MERGES = ["H e", "l l", "Ġ w"]
# One layer per set and one output block: each more adds to every traced step.
SMALL = nemot.NeMoTConfig.preset("tiny").replace(num_vanilla_layers=1, num_nm_layers=1,
                                                   output_blocks=("gqa",))
IDS = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("gqa"), 464, 3290, 318]],
               "int32")


@pytest.fixture(scope="module")
def lm():
    keras.utils.set_random_seed(0)
    return nemot.build_model(SMALL)


@pytest.fixture(scope="module")
def preset(lm, tmp_path_factory):
    """The model saved as a preset while compiled, its optimizer built (as after fit)."""
    lm.compile(keras.optimizers.Adam(1e-3))
    lm.optimizer.build(lm.trainable_variables)
    path = tmp_path_factory.mktemp("presets") / "nemot"
    lm.save_to_preset(str(path))
    return path, logits(lm)


def logits(model):
    return logits_of(model, {"token_ids": IDS})


def logits_of(model, x):
    return keras.ops.convert_to_numpy(model(x)["logits"])


def dtypes(model):
    """(variable dtypes, compute dtype of the logits)."""
    return sorted({v.dtype for v in model.weights}), str(model({"token_ids": IDS})[
        "logits"].dtype).replace("<dtype: '", "").rstrip("'>")


def tiny_gpt2_lm():
    """A GPT2CausalLM small enough to build in a test, on the in-memory vocabulary."""
    return keras_hub.models.GPT2CausalLM(
        keras_hub.models.GPT2Backbone(vocabulary_size=18, num_layers=1, num_heads=2,
                                      hidden_dim=4, intermediate_dim=8, max_sequence_length=8),
        keras_hub.models.GPT2CausalLMPreprocessor(tokenizers()[1], sequence_length=4))


def tokenizers():
    return NeMoTTokenizer(), keras_hub.models.GPT2Tokenizer(vocabulary=GPT2_VOCABULARY,
                                                             merges=GPT2_MERGES)


def test_the_tokenizer_round_trips_strings_and_batches_as_gpt2s():
    for tok in tokenizers():
        assert tok.detokenize(tok(TEXTS)) == TEXTS
        assert tok.detokenize(tok(TEXTS[0])) == TEXTS[0]
        one, batch = tok(TEXTS[0]), tok(TEXTS)
        assert isinstance(one, np.ndarray) and one.dtype == np.int32 and one.ndim == 1
        assert isinstance(batch, list) and list(one) == batch[0]
        assert tok.detokenize(tf.ragged.constant(batch)) == TEXTS


@pytest.mark.parametrize("batch", [None, 2])
def test_the_tokenizer_maps_over_a_dataset_as_gpt2s(batch):
    specs, texts = [], []
    for tok in tokenizers():
        data = tf.data.Dataset.from_tensor_slices(TEXTS + [""])
        data = data if batch is None else data.batch(batch)
        ids = data.map(tok)
        specs.append(ids.element_spec)
        decoded = [keras.tree.map_structure(bytes.decode, np.asarray(t).tolist())
                   for t in ids.map(tok.detokenize).as_numpy_iterator()]
        texts.append(decoded)
        eager = [tok(t) for t in data]
        for mapped, direct in zip(ids, eager):
            mapped = mapped.to_list() if batch else mapped.numpy().tolist()
            assert mapped == ([list(d) for d in direct] if batch else list(direct))
    assert specs[0] == specs[1]
    assert texts[0] == texts[1] == ([TEXTS[0], TEXTS[1], ""] if batch is None
                                    else [TEXTS, [""]])


def test_a_gpt2_preset_name_offline_says_offline(monkeypatch):
    import requests

    from nemot.models import gpt2

    def no_network(source):
        raise requests.ConnectionError("Failed to resolve 'api.kaggle.com'")

    monkeypatch.setattr(gpt2, "preset_config", no_network)
    with pytest.raises(ConnectionError, match="'gpt2_base_en'.*offline.*Hugging Face"):
        gpt2.gpt2_sizes("gpt2_base_en")


def test_dtype_on_every_from_preset_path(preset):
    preset, _ = preset
    assert dtypes(nemot.NeMoTCausalLM.from_preset("tiny", load_weights=False,
                                                  dtype="bfloat16")) == (["bfloat16"], "bfloat16")
    assert dtypes(nemot.NeMoTCausalLM.from_preset(preset, dtype="bfloat16")) == \
        (["bfloat16"], "bfloat16")
    mixed = keras_hub.models.CausalLM.from_preset(str(preset), dtype="mixed_bfloat16")
    assert dtypes(mixed) == (["float32"], "bfloat16")
    policy = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        assert dtypes(nemot.NeMoTCausalLM.from_preset("tiny", load_weights=False)) == \
            (["float32"], "bfloat16")
    finally:
        keras.config.set_dtype_policy(policy)


def test_a_preset_names_its_task_as_gpt2s_and_loads_quietly(preset, tmp_path):
    preset, saved_logits = preset
    gpt2 = tiny_gpt2_lm()
    gpt2.save_to_preset(str(tmp_path / "gpt2"))
    tasks = [json.loads((path / "metadata.json").read_text())["tasks"]
             for path in (preset, tmp_path / "gpt2")]
    assert tasks[0] == tasks[1] == ["CausalLM"]
    with h5py.File(preset / "task.weights.h5") as f:
        stored = []
        f.visit(stored.append)
    assert stored and not [name for name in stored if "optimizer" in name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = keras_hub.models.CausalLM.from_preset(str(preset))
    assert not caught, [str(w.message) for w in caught]
    assert isinstance(loaded, nemot.NeMoTCausalLM)
    np.testing.assert_allclose(logits(loaded), saved_logits, atol=1e-6)


@pytest.mark.usefixtures("eager")  # about the checks around a step, not its trace
@pytest.mark.parametrize("bad", [-5, vocab.VOCAB_SIZE])
def test_a_token_id_outside_the_vocabulary_is_named(lm, bad):
    ids = IDS.copy()
    ids[0, 4] = bad
    targets = {"task_targets": np.zeros((1, 3), "int32"), "lm_targets": np.zeros((1, 3), "int32")}
    lm.compile(keras.optimizers.Adam(1e-3))
    message = rf"token_ids: id {bad} at index \[0, 4\]; expected ids in \[0, {vocab.VOCAB_SIZE}\)"
    for run in (lambda: lm({"token_ids": ids}), lambda: lm.predict({"token_ids": ids}, verbose=0),
                lambda: lm.fit({"token_ids": ids}, targets, verbose=0)):
        with pytest.raises(ValueError, match=message):
            run()


def unbatched_fit(model, texts):
    """The preprocessor's spec over single examples, and the error of fit on them."""
    data = tf.data.Dataset.from_tensor_slices(texts)
    x, _, *_ = data.map(model.preprocessor).element_spec
    assert x["token_ids"].shape.rank == 1
    model.compile(keras.optimizers.Adam(1e-3))
    with pytest.raises(ValueError) as error:
        model.fit(data, verbose=0)
    return str(error.value)


def test_gpt2_on_an_unbatched_dataset_of_strings():
    """What NeMoT's test below is compared with: GPT-2's preprocessor maps over single
    examples, and its fit on them fails (a shape error)."""
    assert "shape" in unbatched_fit(tiny_gpt2_lm(), ["Hello world", "yes"])


@pytest.mark.usefixtures("eager")
def test_an_unbatched_dataset_of_strings_as_on_gpt2(lm):
    assert re.search(r"token_ids: shape \(35,\); expected \[batch, 3 \+ n\] ids .*"
                     r"dataset.batch\(batch_size\)", unbatched_fit(lm, EXAMPLES))
    lm.fit(tf.data.Dataset.from_tensor_slices(EXAMPLES).batch(2), verbose=0)  # as asked


@pytest.mark.usefixtures("eager")
def test_user_metrics_are_the_main_heads_token_accuracy_and_a_recompile_fits(lm):
    x, y = lm.preprocessor(EXAMPLES)
    lm.compile(keras.optimizers.Adam(1e-3),
               weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()])
    assert "sparse_categorical_accuracy" in lm.fit(x, y, verbose=0).history
    accuracy = lm.evaluate(x, y, verbose=0, return_dict=True)["sparse_categorical_accuracy"]
    predicted = np.argmax(logits_of(lm, x), axis=-1)
    counts = y["task_targets"] != vocab.IGNORE_ID
    assert accuracy == pytest.approx(np.mean(predicted[counts] == y["task_targets"][counts]))
    lm.compile(keras.optimizers.Adam(1e-3))
    assert "loss" in lm.fit(x, y, verbose=0).history


# What trains after backbone.enable_lora on GPT-2: the attention's query and value
# projections' LoRA factors and biases (Keras freezes only the kernel of a LoRA layer).
LORA_TRAINS = {(layer, name) for layer in ("query", "value")
               for name in ("bias", "lora_kernel_a", "lora_kernel_b")}


def lora_training(model, data):
    """The trainable variables of one step after ``backbone.enable_lora(4)`` (as
    ``(layer, variable)`` names), and the paths of those the step changed."""
    model.compile(keras.optimizers.Adam(1e-3))
    model.backbone.enable_lora(rank=4)
    before = {v.path: keras.ops.convert_to_numpy(v) for v in model.weights}
    model.fit(data, verbose=0)
    changed = {v.path for v in model.weights
               if not np.array_equal(before[v.path], keras.ops.convert_to_numpy(v))}
    return {tuple(v.path.split("/")[-2:]) for v in model.trainable_weights}, changed


def test_lora_on_gpt2():
    """What NeMoT's test below is compared with."""
    kinds, changed = lora_training(tiny_gpt2_lm(), tf.data.Dataset.from_tensor_slices(
        ["Hello world", "yes"]).batch(2))
    assert kinds == LORA_TRAINS
    assert changed and all(path.split("/")[-2] in ("query", "value") for path in changed)


@pytest.mark.usefixtures("eager")
def test_lora_trains_what_it_trains_on_gpt2_and_its_weights_round_trip(lm, tmp_path):
    x, y = lm.preprocessor(EXAMPLES)
    kinds, changed = lora_training(lm, tf.data.Dataset.from_tensor_slices((x, y)).batch(2))
    assert kinds == LORA_TRAINS
    assert changed and all(path.split("/")[-2] in ("query", "value") for path in changed)
    lm.backbone.save_lora_weights(str(tmp_path / "nemot.lora.h5"))
    trained = logits(lm)
    for variable in lm.backbone.weights:
        if variable.name == "lora_kernel_b":
            variable.assign(keras.ops.zeros_like(variable))
    assert not np.allclose(logits(lm), trained)
    lm.backbone.load_lora_weights(str(tmp_path / "nemot.lora.h5"))
    np.testing.assert_array_equal(logits(lm), trained)


@pytest.mark.usefixtures("eager")
def test_int8_quantization_calls_and_generates():
    """A padded head (its kernel wider than the vocabulary) included."""
    keras.utils.set_random_seed(0)
    model = nemot.build_model(SMALL.replace(vocab_padding=64))
    before = logits(model)
    # Keras collects garbage after each kernel it replaces (23 here), a pass over every
    # object the worker's earlier tests left: 0.8 s each. Frozen, those are not scanned.
    gc.freeze()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Keras names each layer it has nothing to quantize in
            model.quantize("int8")
    finally:
        gc.unfreeze()
    assert model.head.kernel.dtype == "int8" and model.backbone.vanilla_set.transformer_layers[
        0].self_attention.query_dense.kernel.dtype == "int8"
    np.testing.assert_allclose(logits(model), before, atol=0.05 * np.abs(before).max())
    assert model.generate(EXAMPLES[0].split("<sep>")[0] + "<sep>", max_new_tokens=2).startswith(
        "<q> Is the sky blue? <sep>")
