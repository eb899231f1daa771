"""The trainer feeds POS tags to a highlighting run."""

from pathlib import Path

import nltk
import numpy as np

from nemot.data import Tokenizer
from nemot.data.pos_tags import PosTagger, add_pos_tags
from nemot.training import trainer
from nemot.training.run_config import load_run_config
from tests.data import fixtures
from tests.data.tagger_helper import install_perceptron, perceptron  # noqa: F401 (fixture)

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "reading_strategies"


def source_for(config_name, data_dir):
    cfg = load_run_config(CONFIGS / config_name, [
        'model.preset="tiny"', f'data.dir="{data_dir}"', 'data.validation_split="valid"'])
    return cfg, trainer.data_source(cfg, Tokenizer())[0]


def test_highlighting_runs_get_pos_tags_and_aoi_runs_do_not(tmp_path, perceptron, monkeypatch):  # noqa: F811
    monkeypatch.setattr(nltk.data, "path", [str(install_perceptron(perceptron, tmp_path / "nltk"))])
    data_dir = fixtures.write_all(tmp_path / "raw")["piqa"]
    cfg, source = source_for("piqa_high.toml", data_dir)
    x, _ = next(iter(source.train(0, 2, None)))
    tags = np.asarray(x["pos_tags"])
    token_ids = np.asarray(x["token_ids"])
    expected = add_pos_tags({"token_ids": token_ids}, PosTagger(), num_aux=3)["pos_tags"]
    np.testing.assert_array_equal(tags, expected)
    assert tags.shape == (2, cfg.model.max_text_length) and (tags >= 0).any()
    x_val, _ = next(iter(source.validation(2, None)))
    assert "pos_tags" in x_val

    _, aoi_source = source_for("piqa_aoi.toml", data_dir)
    x, _ = next(iter(aoi_source.train(0, 2, None)))
    assert "pos_tags" not in x
