"""Runs end to end on generated files: the docs snippet, the CLI with resume and the
♣ / ♠ / last models, NaN stop, general-training block copy, bf16 + XLA."""

import csv
import json
import logging
import math
import re
import zipfile
from pathlib import Path

import keras
import numpy as np
import pytest

from nemot.data.qa import registry
from nemot.data.qa.pipelines import qa_dataset
from nemot.training import cli, trainer
from nemot.training.callbacks import TrainingDiverged
from nemot.training.checkpoints import TrainingCheckpoint
from nemot.training.run_config import run_config_from_dict
from tests.data import fixtures
from tests.training.worker import tiny_run_config, tiny_source

DOCS = Path(__file__).resolve().parents[2] / "docs" / "training.md"


def test_docs_snippet_fits_a_dataset_chosen_by_name(tmp_path):
    fixtures.boolq(tmp_path / "boolq")
    code = re.search(r"```python\n(.*?)```", DOCS.read_text(), re.S).group(1)
    assert len(code.strip().splitlines()) <= 11
    assert code.count('"data/boolq"') == 1
    namespace = {}
    keras.utils.set_random_seed(0)
    exec(code.replace('"data/boolq"', repr(str(tmp_path / "boolq"))), namespace)
    model = namespace["model"]
    assert int(model.optimizer.iterations.numpy()) == 6
    history = model.history.history
    assert all(math.isfinite(v) for v in history["loss"])
    assert set(history) >= {"task_loss", "lm_loss", "vanilla_loss"}

    # The recipe refuses data the model cannot take with the error calling the model
    # gives, though its train step is compiled (a task token no block serves)...
    unserved = qa_dataset("boolq", "train", data_dir=str(tmp_path / "boolq"), batch_size=4,
                          max_text_length=32, task_token="pgqa")
    called = "token_ids row 0: <pgqa> at auxiliary position 2 (<task>); expected the task " \
             "token of one of the model's output blocks ['lm', 'mqa', 'gqa']"
    with pytest.raises(ValueError, match=re.escape(called)):
        model(next(iter(unserved))[0])
    head = model.head.kernel.numpy()
    with pytest.raises(ValueError) as fitted:
        model.fit(unserved, epochs=1, steps_per_epoch=2, verbose=0)
    assert str(fitted.value) == called
    np.testing.assert_array_equal(model.head.kernel.numpy(), head)      # nothing learnt
    # ... or texts longer than its positions (qa_dataset's default, 768 tokens).
    too_long = qa_dataset("boolq", "train", data_dir=str(tmp_path / "boolq"), batch_size=4)
    with pytest.raises(ValueError, match=r"token_ids: 768 text positions \(771 ids with the "
                                         r"auxiliary tokens\), but the model has 64 positions .* "
                                         r"make the data with max_text_length=32"):
        model.fit(too_long, epochs=1, steps_per_epoch=2, verbose=0)


TINY_FINETUNE = """
name = "tiny-race"
kind = "finetune"
seed = 0

[model]
preset = "tiny"
max_text_length = 64
output_blocks = ["lm"]  # the task token's only: each further block costs the traces ~2 s

[data]
dir = "{dir}"
dataset = "race"
validation_split = "dev"
task_token = "lm"

[train]
batch_size = 2
epochs = 2
checkpoint_every = 1
keep_checkpoints = 2
verbose = 0
decode_jit_compile = false

[schedule]
type = "constant"
rate = 1e-3
"""


def _rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.usefixtures("eager")
def test_finetune_cli_keeps_best_models_and_resumes(tmp_path, capsys, caplog):
    fixtures.race(tmp_path / "RACE")
    config = tmp_path / "race.toml"
    config.write_text(TINY_FINETUNE.format(dir=tmp_path / "RACE"))
    out = tmp_path / "out"
    assert cli.main(["finetune", "--config", str(config), "--out", str(out)]) == 0
    # RACE fixture: 2 articles x 2 questions = 4 training examples -> 2 steps per epoch.
    rows = _rows(out / "results.csv")
    assert list(rows[0])[:4] == ["epoch", "loss", "val_loss", "val_metric"]
    assert [r["epoch"] for r in rows] == ["1", "2"]
    best = json.loads((out / "best.json").read_text())
    losses = [float(r["val_loss"]) for r in rows]
    assert best["val_loss"] == min(losses) and best["loss_epoch"] == 1 + losses.index(min(losses))
    metrics = [float(r["val_metric"]) for r in rows]
    assert best["val_metric"] == max(metrics) and 0 <= best["val_metric"] <= 1
    last = keras.models.load_model(out / "model_last.keras")
    assert last.config.max_text_length == 64
    # The best models, written by the same save: their config, read without loading them
    # (a load builds the model: 2.5 CPU s each).
    for name in ("model_best_loss", "model_best_metric"):
        with zipfile.ZipFile(out / f"{name}.keras") as archive:
            saved = json.loads(archive.read("config.json"))
        assert saved["class_name"] == "NeMoTCausalLM", name
        assert saved["config"]["backbone"]["config"]["config"]["max_text_length"] == 64, name
    assert sorted(p.name for p in (out / "train_state").glob("ckpt-*.npz")) == [
        "ckpt-3.npz", "ckpt-4.npz"]                               # keep 2
    assert list((out / "logs").iterdir())
    assert "done: step 4" in capsys.readouterr().out

    # Same command with one more epoch: resumes at step 4, trains epoch 3 only, and says so.
    with caplog.at_level(logging.INFO, logger="nemot.training"):
        assert cli.main(["finetune", "--config", str(config), "--out", str(out),
                         "--epochs", "3"]) == 0
    assert f"resuming {out} with a changed config: train.epochs 2 -> 3" in caplog.text
    assert (f"resumed from step 4 (checkpoint {out / 'train_state' / 'ckpt-4.npz'}), data "
            "position: global batch 4 of the training stream (example 8 at batch size 2), "
            "epoch 3 at step 0 of 2") in caplog.text
    assert [r["epoch"] for r in _rows(out / "results.csv")] == ["1", "2", "3"]
    assert "done: step 6" in capsys.readouterr().out
    resumed = keras.models.load_model(out / "model_last.keras")
    assert not np.allclose(resumed.head.kernel.numpy(), last.head.kernel.numpy())

    # A config of another kind is refused with the command to use.
    assert cli.main(["pretrain", "--config", str(config)]) == 2
    assert "use `nemot finetune`" in capsys.readouterr().err


@pytest.mark.usefixtures("eager")
def test_nan_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path):
    class Poison(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if int(self.model.optimizer.iterations.numpy()) == 3:
                kernel = self.model.head.kernel
                kernel.assign(np.full(kernel.shape, np.nan, "float32"))

    cfg = tiny_run_config("nan", steps=8, checkpoint_every=2)
    with pytest.raises(TrainingDiverged) as error:
        trainer.train(cfg, out_dir=tmp_path, source=tiny_source(), callbacks=[Poison()])
    message = str(error.value)
    assert "training loss became nan at step 4" in message
    assert str(tmp_path / "train_state" / "ckpt-2.npz") in message
    assert sorted(p.name for p in (tmp_path / "train_state").glob("ckpt-*.npz")) == [
        "ckpt-2.npz"]
    assert not (tmp_path / "model_last.keras").exists()      # nothing written after the NaN
    keras.utils.set_random_seed(0)
    model = trainer.build_and_compile(cfg, trainer.distributed.make_strategy("default"))
    assert TrainingCheckpoint(model, tmp_path / "train_state").restore() == 2
    assert all(np.isfinite(w).all() for w in model.get_weights())


@pytest.mark.parametrize("copy", [True, False])
def test_general_training_starts_mqa_and_gqa_from_lm(copy):
    cfg = run_config_from_dict({
        "name": "g", "kind": "general", "model": {"preset": "tiny"},
        "data": {"dir": "unused"},
        "train": {"steps_per_epoch": 1, "init_blocks_from_lm": copy}})
    model = trainer.build_and_compile(cfg, trainer.distributed.make_strategy("default"))
    blocks = model.backbone.output_set.blocks
    for name in ("mqa", "gqa"):
        same = all(np.array_equal(a.numpy(), b.numpy())
                   for a, b in zip(blocks["lm"].weights, blocks[name].weights))
        assert same == copy, name


def test_mixed_bfloat16_with_xla(tmp_path):
    cfg = tiny_run_config("bf16", steps=2, checkpoint_every=0).to_dict()
    # One layer per set and one block keep XLA's compile time small on a CPU.
    model = dict(cfg["model"], num_vanilla_layers=1, num_nm_layers=1, output_blocks=["mqa"])
    cfg = run_config_from_dict(dict(cfg, model=model, train=dict(
        cfg["train"], mixed_precision="mixed_bfloat16", jit_compile=True)))
    result = trainer.train(cfg, out_dir=tmp_path, source=tiny_source())
    assert result.step == 2 and all(math.isfinite(v) for v in result.history["loss"])
    assert result.model.head.compute_dtype == "bfloat16"
    assert result.model.head.kernel.dtype == "float32"
    assert keras.config.dtype_policy().name == "float32"        # restored after the run


@pytest.mark.usefixtures("eager")
def test_general_training_validates_every_dataset_and_keeps_both_best_models(tmp_path):
    names = ["race", "boolq", "narrativeqa"]
    for name in names:
        getattr(fixtures, name)(tmp_path / "data" / name)
    cfg = run_config_from_dict({
        "name": "g", "kind": "general", "seed": 1,
        "model": {"preset": "tiny", "dropout": 0.0},
        "data": {"dir": str(tmp_path / "data"), "datasets": names,
                 "validation_split": "auto", "max_new_tokens": 2},
        "train": {"batch_size": 2, "epochs": 2, "steps_per_epoch": 1, "checkpoint_every": 0,
                  "verbose": 0, "decode_jit_compile": False},
        "schedule": {"type": "constant", "rate": 1e-3}})
    assert [registry.resolve_split(n, "dev") for n in names] == ["dev", "dev", "valid"]
    result = trainer.train(cfg, out_dir=tmp_path / "run")
    rows = _rows(tmp_path / "run" / "results.csv")
    assert [r["epoch"] for r in rows] == ["1", "2"]
    assert all(math.isfinite(float(r["val_loss"])) and 0 <= float(r["val_metric"]) <= 1
               for r in rows)
    # The metric is the mean of the three datasets' own metrics, recomputed here; each
    # dataset's value is in the row too.
    source, _ = trainer.data_source(cfg)
    scores = source.metric(result.model)
    assert float(rows[-1]["val_metric"]) == pytest.approx(scores["metric"])
    assert scores["metric"] == pytest.approx(np.mean([scores[n] for n in names]))
    assert [float(rows[-1][f"val_{n}"]) for n in names] == pytest.approx(
        [scores[n] for n in names])
    for kept in ("model_best_loss.keras", "model_best_metric.keras", "model_last.keras"):
        assert (tmp_path / "run" / kept).is_file()
