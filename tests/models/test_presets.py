"""KerasHub's conventions: ``from_preset`` / ``save_to_preset`` round trips (config, weights,
tokenizer) beside ``.keras`` files, and ``fit`` on a dataset without the ignored-``shuffle``
warning."""

import json
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import nemot
from nemot import vocab
from nemot.models import conventions
from nemot.models.baseline import GPT2Baseline, build_baseline
from nemot.models.nemot import NeMoT

TINY = nemot.NeMoTConfig.preset("tiny")
IDS = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("gqa"), 464, 3290, 318, 50302],
                [vocab.CLS_ID, vocab.ENC_ID, vocab.task_token_id("mqa"), 40, 41, 42, 43]],
               "int32")


def logits(model):
    return keras.ops.convert_to_numpy(model({"token_ids": IDS})["logits"])


@pytest.fixture(scope="module")
def tiny_nemot():
    keras.utils.set_random_seed(5)
    return nemot.build_model(TINY.replace(aux_embedding="shared"))


def test_nemot_round_trips_through_a_preset_directory(tiny_nemot, tmp_path):
    path = tiny_nemot.save_to_preset(tmp_path / "preset")
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()) == [
        "assets/tokenizer/merges.txt", "assets/tokenizer/vocabulary.json", "config.json",
        "metadata.json", "model.weights.h5", "tokenizer.json"]
    config = json.loads((path / "config.json").read_text())
    assert config["registered_name"] == "nemot>NeMoT"
    assert "compile_config" not in config and "build_config" not in config
    metadata = json.loads((path / "metadata.json").read_text())
    assert metadata["parameter_count"] == tiny_nemot.count_params()

    loaded = NeMoT.from_preset(path)
    assert loaded.config == tiny_nemot.config
    np.testing.assert_array_equal(logits(loaded), logits(tiny_nemot))
    # The tokenizer of the preset is nemot's: added tokens at their ids, GPT-2's BPE.
    tokenizer = conventions.load_tokenizer(path)
    text = "<p1> The cat sat. <q> Where? <sep> on the mat </s>"
    assert tokenizer.encode(text) == nemot.Tokenizer().encode(text)
    assert nemot.Tokenizer(path).encode(text) == tokenizer.encode(text)
    # Architecture only: fresh weights, same config.
    fresh = NeMoT.from_preset(path, load_weights=False)
    assert fresh.config == tiny_nemot.config
    assert not np.array_equal(logits(fresh), logits(tiny_nemot))


def test_preset_beside_a_keras_file(tiny_nemot, tmp_path):
    tiny_nemot.save(tmp_path / "model.keras")
    from_file = nemot.load_model(tmp_path / "model.keras")
    from_file.save_to_preset(tmp_path / "preset")
    np.testing.assert_array_equal(logits(NeMoT.from_preset(tmp_path / "preset")),
                                  logits(tiny_nemot))


def test_the_baseline_round_trips_and_classes_are_checked(tmp_path):
    baseline = build_baseline("tiny")
    path = baseline.save_to_preset(tmp_path / "baseline")
    np.testing.assert_array_equal(logits(GPT2Baseline.from_preset(path)), logits(baseline))
    with pytest.raises(ValueError, match=r"config.json: holds a 'GPT2Baseline' model, not a NeMoT"):
        NeMoT.from_preset(path)


def test_preset_names_and_bad_directories(tmp_path):
    model = NeMoT.from_preset("tiny", load_weights=False)
    assert model.config == TINY and model.built
    assert GPT2Baseline.from_preset("tiny", load_weights=False).config == TINY
    with pytest.raises(ValueError, match=r"'tiny' names an architecture; no weights are published"):
        NeMoT.from_preset("tiny")
    with pytest.raises(ValueError, match=r"preset 'huge': not a directory, and unknown preset"):
        NeMoT.from_preset("huge", load_weights=False)
    with pytest.raises(FileNotFoundError, match=r"config.json: no such file"):
        NeMoT.from_preset(tmp_path)
    path = model.save_to_preset(tmp_path / "p")
    (path / "model.weights.h5").unlink()
    with pytest.raises(FileNotFoundError, match=r"model.weights.h5: no such file"):
        NeMoT.from_preset(path)
    (path / "tokenizer.json").write_text(json.dumps({"class_name": "GPT2Tokenizer"}))
    with pytest.raises(ValueError, match=r"tokenizer.json: class_name 'GPT2Tokenizer'"):
        conventions.load_tokenizer(path)


def test_fit_on_a_dataset_warns_about_nothing_and_builds_the_optimizer_first():
    # The batch's one block only: each further block adds its layers, gradients and
    # optimizer updates to the trace.
    model = nemot.build_model(TINY.replace(output_blocks=("gqa",)))
    model.compile(keras.optimizers.Adam(1e-3))
    text = np.tile(np.arange(10, 18, dtype="int32"), (4, 1))
    x = {"token_ids": np.concatenate([IDS[:1, :3].repeat(4, 0), text], 1)}
    y = {"task_targets": np.roll(text, -1, 1), "lm_targets": np.roll(text, -1, 1)}
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(2)
    traced = []

    def creator(next_creator, **kwargs):  # variables created while a function is traced
        traced.extend([kwargs.get("name")] if tf.inside_function() else [])
        return next_creator(**kwargs)

    with warnings.catch_warnings(record=True) as caught, tf.variable_creator_scope(creator):
        warnings.simplefilter("always")
        model.fit(dataset, epochs=1, verbose=0)
    assert not [w for w in caught if "shuffle" in str(w.message)]
    # The optimizer is built before the train step is traced (by compile): a step that
    # creates the optimizer's slots is traced twice.
    assert traced == [] and model.optimizer.built
    # Asked for explicitly, Keras's own answer stands.
    with pytest.warns(UserWarning, match="shuffle=True` was passed, but will be ignored"):
        model.fit(dataset, epochs=1, verbose=0, shuffle=True)
