"""Starting a model from a saved one (``load_pretrained``): what was copied is reported by
component, and a component whose weights do not fit refuses (skipping one:
tests/training/test_start_and_resume.py)."""

import numpy as np
import pytest

import nemot
from nemot.models.weights import IncompatibleWeights, component, load_pretrained, weight_key

# A small vocabulary keeps the saved file small; nothing here runs a model.
SAVED = nemot.NeMoTConfig.preset("tiny").replace(vocab_size=64, num_output_layers=2)


def values(model):
    return {weight_key(v): v.numpy() for v in model.weights}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "tiny.keras"
    model = nemot.build_model(SAVED)
    model.save(path)
    return path, values(model)


def test_a_model_with_a_new_block_gets_every_saved_weight_and_a_report(saved):
    path, saved_values = saved
    model = nemot.build_model(SAVED.replace(output_blocks=("lm", "mqa", "gqa", "summarize_rs")))
    start = load_pretrained(model, path)
    after = values(model)
    new_block = [k for k in after if k.startswith("output_set/block_summarize_rs/")]
    assert new_block and not set(new_block) & set(saved_values)
    for key, value in saved_values.items():
        np.testing.assert_array_equal(after[key], value, err_msg=key)
    counts = {}
    for key in after:
        counts.setdefault(component(key), [0, 0])[1] += 1
        counts[component(key)][0] += key in saved_values
    assert start.copied == {name: tuple(c) for name, c in counts.items()}
    total = len(after)
    assert start.summary() == (
        f"{path}: copied {total - len(new_block)} of {total} weights ("
        + ", ".join(f"{name} {c}/{t}" for name, (c, t) in counts.items()) + ")")
    assert counts["output_set"][1] - counts["output_set"][0] == len(new_block)


def test_another_model_size_is_refused_naming_components_and_shapes(saved):
    path, _ = saved
    model = nemot.build_model(SAVED.replace(d_model=64, d_ff=128))
    before = values(model)
    with pytest.raises(IncompatibleWeights) as error:
        load_pretrained(model, path)
    message = str(error.value)
    for name in ("vanilla_set", "neuromodulatory_set", "output_set", "head", "vanilla_head",
                 "aux_embedding"):
        assert f"{name} (" in message
    assert "vanilla_set/token_embedding/embeddings (64, 32) saved vs (64, 64) here" in message
    # Refused before anything was copied, the two vocabulary-sized biases included.
    after = values(model)
    assert all(np.array_equal(after[k], v) for k, v in before.items())
    with pytest.raises(ValueError, match=r"skip \['outputs'\]: no such component; the "
                                         r"components are \['aux_embedding', 'head', "):
        load_pretrained(model, path, skip=["outputs"])
