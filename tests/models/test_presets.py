"""KerasHub's conventions: a NeMoT preset written by ``save_to_preset`` is read back by
KerasHub's own generic loaders (``Backbone``, ``CausalLM``, ``Tokenizer``,
``CausalLMPreprocessor``), beside ``.keras`` files; ``generate`` on strings; inputs checked
as KerasHub checks them; ``fit`` on a dataset builds the optimizer first."""

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import nemot
from nemot import vocab
from nemot.models.baseline import GPT2BaselineCausalLM, build_baseline
from nemot.models.generation import generate_by_recomputation

ROOT = Path(__file__).resolve().parents[2]
TINY = nemot.NeMoTConfig.preset("tiny")
IDS = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("gqa"), 464, 3290, 318, 50302],
                [vocab.CLS_ID, vocab.ENC_ID, vocab.task_token_id("mqa"), 40, 41, 42, 43]],
               "int32")
EXAMPLES = ["<p1> The cat sat on the mat. <q> Where did the cat sit? <sep> on the mat </s>",
            "<q> Is the sky blue? <sep> yes </s>"]
PROMPTS = ["<p1> The cat sat on the mat. <q> Where did the cat sit? <sep>",
           "<q> Is the sky blue? <sep>"]


def logits(model):
    return keras.ops.convert_to_numpy(model({"token_ids": IDS})["logits"])


@pytest.fixture(scope="module")
def tiny_nemot():
    keras.utils.set_random_seed(5)
    return nemot.build_model(TINY.replace(aux_embedding="shared"))


@pytest.fixture(scope="module")
def preset(tiny_nemot, tmp_path_factory):
    path = tmp_path_factory.mktemp("presets") / "tiny"
    tiny_nemot.save_to_preset(str(path))
    return path


def test_the_preset_has_kerashubs_layout(tiny_nemot, preset):
    assert sorted(str(p.relative_to(preset)) for p in preset.rglob("*") if p.is_file()) == [
        "assets/tokenizer/merges.txt", "assets/tokenizer/vocabulary.json", "config.json",
        "metadata.json", "model.weights.h5", "preprocessor.json", "task.json",
        "task.weights.h5", "tokenizer.json"]
    config = json.loads((preset / "config.json").read_text())
    assert config["registered_name"] == "nemot>NeMoTBackbone"
    assert json.loads((preset / "task.json").read_text())["registered_name"] == \
        "nemot>NeMoTCausalLM"
    assert "compile_config" not in config and "build_config" not in config
    metadata = json.loads((preset / "metadata.json").read_text())
    assert metadata["parameter_count"] == tiny_nemot.backbone.count_params()


def test_kerashubs_generic_loaders_return_nemots_classes(tiny_nemot, preset):
    backbone = keras_hub.models.Backbone.from_preset(str(preset))
    assert isinstance(backbone, nemot.NeMoTBackbone) and backbone.config == tiny_nemot.config
    ours = tiny_nemot.backbone({"token_ids": IDS})
    for key, value in backbone({"token_ids": IDS}).items():
        np.testing.assert_array_equal(np.asarray(value), np.asarray(ours[key]))

    lm = keras_hub.models.CausalLM.from_preset(str(preset))
    assert isinstance(lm, nemot.NeMoTCausalLM)
    np.testing.assert_array_equal(logits(lm), logits(tiny_nemot))

    tokenizer = keras_hub.models.Tokenizer.from_preset(str(preset))
    assert isinstance(tokenizer, nemot.NeMoTTokenizer)
    text = "<p1> The cat sat. <q> Where? <sep> on the mat </s>"
    assert list(tokenizer(text)) == nemot.Tokenizer().encode(text)
    assert nemot.Tokenizer(preset).encode(text) == list(tokenizer(text))

    preprocessor = keras_hub.models.CausalLMPreprocessor.from_preset(str(preset))
    assert isinstance(preprocessor, nemot.NeMoTPreprocessor)
    for got, expected in zip(preprocessor(EXAMPLES), tiny_nemot.preprocessor(EXAMPLES)):
        for key in expected:
            np.testing.assert_array_equal(got[key], expected[key])


def test_an_architecture_by_name_and_fresh_weights(tiny_nemot, preset):
    fresh = nemot.NeMoTCausalLM.from_preset(str(preset), load_weights=False)
    assert fresh.config == tiny_nemot.config
    assert not np.array_equal(logits(fresh), logits(tiny_nemot))
    model = nemot.NeMoTCausalLM.from_preset("tiny", load_weights=False)
    assert model.config == TINY and model.built
    assert GPT2BaselineCausalLM.from_preset("tiny", load_weights=False).config == TINY
    with pytest.raises(ValueError, match=r"'tiny' names an architecture; no weights are published"):
        nemot.NeMoTCausalLM.from_preset("tiny")
    with pytest.raises(ValueError, match=r"preset 'huge': not a directory, and unknown preset"):
        nemot.NeMoTCausalLM.from_preset("huge", load_weights=False)
    # GPT-2's KerasHub presets start a NeMoT through another argument: the error says so.
    with pytest.raises(ValueError, match=r"'gpt2_base_en'.*nemot.build_model\(config, gpt2=\.\.\.\)"):
        nemot.NeMoTCausalLM.from_preset("gpt2_base_en", load_weights=False)


def test_preset_beside_a_keras_file(tiny_nemot, tmp_path):
    tiny_nemot.save(tmp_path / "model.keras")
    from_file = nemot.load_model(tmp_path / "model.keras")
    assert from_file.nemot_loss == tiny_nemot.nemot_loss  # compiled as it was saved
    from_file.save_to_preset(str(tmp_path / "preset"))
    np.testing.assert_array_equal(
        logits(keras_hub.models.CausalLM.from_preset(str(tmp_path / "preset"))),
        logits(tiny_nemot))


def test_the_baseline_round_trips_through_the_generic_loaders(tmp_path):
    baseline = build_baseline("tiny")
    baseline.save_to_preset(str(tmp_path / "baseline"))
    loaded = keras_hub.models.CausalLM.from_preset(str(tmp_path / "baseline"))
    assert isinstance(loaded, GPT2BaselineCausalLM)
    np.testing.assert_array_equal(logits(loaded), logits(baseline))
    assert isinstance(keras_hub.models.Tokenizer.from_preset(str(tmp_path / "baseline")),
                      nemot.NeMoTTokenizer)
    with pytest.raises(ValueError, match="subclass of NeMoTCausalLM that is compatible with "
                                         "GPT2BaselineBackbone"):
        nemot.NeMoTCausalLM.from_preset(str(tmp_path / "baseline"))


# Each import order in a process of its own, forked from one that has imported TensorFlow
# and Keras only (what a user's script has often imported before either; one import of
# TensorFlow, about 9 CPU seconds, instead of two).
IMPORT_ORDERS = """
import os, sys, traceback
import tensorflow, keras
for imports in ("import nemot, keras_hub", "import keras_hub, nemot"):
    pid = os.fork()
    if pid == 0:
        try:
            exec(imports)
            lm = keras_hub.models.CausalLM.from_preset(sys.argv[1])
            print(imports + ":", type(lm).__name__, flush=True)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    if os.waitpid(pid, 0)[1]:
        sys.exit(imports + ": failed")
"""


def test_importing_nemot_registers_its_classes_for_kerashubs_loaders(preset):
    """In a fresh process (of :data:`IMPORT_ORDERS`): ``import nemot`` before or after
    ``keras_hub``, nothing else of either."""
    done = subprocess.run([sys.executable, "-c", IMPORT_ORDERS, str(preset)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert [line for line in done.stdout.splitlines() if line.startswith("import ")] == [
        "import nemot, keras_hub: NeMoTCausalLM", "import keras_hub, nemot: NeMoTCausalLM"]


@pytest.mark.usefixtures("eager")  # decoding's graph and XLA loops: tests/models/test_generation.py
def test_generate_takes_strings_and_equals_the_greedy_ids_of_nemot_generate(tiny_nemot,
                                                                         tmp_path, capsys):
    answers = tiny_nemot.generate(PROMPTS, max_new_tokens=5, strip_prompt=True)
    assert isinstance(answers, list) and all(isinstance(a, str) for a in answers)
    # One string in, one string out: with the prompt (KerasHub's default).
    full = tiny_nemot.generate(PROMPTS[1], max_new_tokens=5)
    assert isinstance(full, str) and full.startswith("<q> Is the sky blue? <sep>")
    tokenizer = nemot.Tokenizer()
    prompt_ids = [[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("gqa")] + tokenizer.encode(p)
                  for p in PROMPTS]
    reference = generate_by_recomputation(tiny_nemot, prompt_ids, max_new_tokens=5)
    assert answers == [tokenizer.decode(ids) for ids in reference]
    # The command line on the same weights gives the same ids.
    tiny_nemot.save(tmp_path / "model.keras")
    from nemot import cli

    capsys.readouterr()
    cli.main(["generate", "--checkpoint", str(tmp_path / "model.keras"),
              "--max-new-tokens", "5", *[a for p in PROMPTS for a in ("--prompt", p)]])
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["ids"] for r in records] == reference
    # With another task token.
    lm_ids = [[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("lm")] + tokenizer.encode(PROMPTS[1])]
    assert tiny_nemot.generate(PROMPTS[1], max_new_tokens=5, strip_prompt=True, task="lm") == \
        tokenizer.decode(generate_by_recomputation(tiny_nemot, lm_ids, max_new_tokens=5)[0])


def test_inputs_are_checked_as_kerashub_checks_them(tiny_nemot):
    with pytest.raises(ValueError, match=r"keys \['padding_mask'\] are not inputs of this "
                                         r"model \(padding is read from <pad>"):
        tiny_nemot({"token_ids": IDS, "padding_mask": np.zeros(IDS.shape, bool)})
    with pytest.raises(ValueError, match=r"keys \['segment_ids'\] are not inputs"):
        tiny_nemot.backbone({"token_ids": IDS, "segment_ids": IDS})
    with pytest.raises(ValueError, match=r"keys \['pos_tags'\] are not inputs"):
        tiny_nemot({"token_ids": IDS, "pos_tags": IDS[:, 3:]})  # no highlighting strategy
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(tiny_nemot(IDS)["logits"]),
                                  logits(tiny_nemot))  # a bare array is the token ids
    tokenizer = tiny_nemot.preprocessor.tokenizer
    assert tokenizer(["<sep> yes </s>", "no"]) == [list(tokenizer("<sep> yes </s>")),
                                                   list(tokenizer("no"))]
    assert tokenizer.detokenize(tokenizer(["<sep> yes </s>"])) == ["<sep> yes </s>"]


@pytest.mark.usefixtures("eager")  # about the preprocessing around three steps, not their trace
def test_fit_on_raw_formatted_examples_through_the_preprocessor():
    keras.utils.set_random_seed(0)
    lm = nemot.build_model(TINY.replace(max_text_length=24, output_blocks=("gqa",)))
    lm.compile(keras.optimizers.Adam(1e-3))
    x, y = lm.preprocessor(EXAMPLES)
    assert x["token_ids"].shape == (2, 27) and y["task_targets"].shape == (2, 24)
    # The targets are the formatter's (the unified format of nemot.data.qa.format).
    sep = list(x["token_ids"][1, 3:]).index(vocab.SEP_ID)
    assert y["task_targets"][1, sep] == nemot.Tokenizer().encode("yes")[0]
    assert (y["task_targets"][1, :sep] == vocab.IGNORE_ID).all()
    history = lm.fit(EXAMPLES * 2, batch_size=2, epochs=3, verbose=0, shuffle=False).history
    assert history["loss"][-1] < history["loss"][0]
    assert set(history) == {"loss", "task_loss", "lm_loss", "vanilla_loss"}
    with pytest.raises(ValueError, match="has no <sep>"):
        lm.preprocessor(["<q> no separator here"])


def test_fit_on_a_dataset_warns_about_nothing_and_builds_the_optimizer_first():
    # The batch's one block and one layer per set: each further block or layer adds its
    # weights, gradients and optimizer updates to the trace.
    model = nemot.build_model(TINY.replace(num_vanilla_layers=1, num_nm_layers=1,
                                           output_blocks=("gqa",)))
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
        # KerasHub's fit maps the preprocessing over a dataset: its order is the dataset's.
        model.fit(dataset, epochs=1, verbose=0, shuffle=False)
    assert not caught, [str(w.message) for w in caught]
    # The optimizer is built before the train step is traced (by compile): a step that
    # creates the optimizer's slots is traced twice.
    assert traced == [] and model.optimizer.built
    # Asked for explicitly, Keras's own answer stands.
    with pytest.warns(UserWarning, match="shuffle=True` was passed, but will be ignored"):
        model.fit(dataset, epochs=1, verbose=0, shuffle=True)


def test_a_bad_preset_directory_is_named(tmp_path, preset):
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path} has no config.json")):
        nemot.NeMoTCausalLM.from_preset(str(tmp_path))
    broken = tmp_path / "broken"
    subprocess.run(["cp", "-r", str(preset), str(broken)], check=True)
    (broken / "model.weights.h5").unlink()
    with pytest.raises(FileNotFoundError, match=r"doesn.t exist in preset directory `.*broken`"):
        nemot.NeMoTCausalLM.from_preset(str(broken))
