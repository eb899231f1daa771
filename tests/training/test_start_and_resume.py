"""What a run starts from: ``train.init_from`` checked and reported by component, and a
run directory resumed only with its own config (``run_config.toml``) up to the keys that
are safe to change or named in ``train.resume_allow``."""

import logging

import numpy as np
import pytest

from nemot.models.weights import weight_key
from nemot.training import trainer
from nemot.training.run_config import (ResumeConflict, RunConfigError, dump_toml,
                                       run_config_from_dict)
from tests.training.worker import tiny_run_config


def config(model=None, **train):
    # A small vocabulary keeps the saved model small; nothing here runs a model.
    return run_config_from_dict({
        "name": "start", "kind": "finetune", "data": {"dataset": "race"},
        "model": {"preset": "tiny", "vocab_size": 64, **(model or {})}, "train": train})


@pytest.mark.usefixtures("eager")
def test_init_from_is_checked_by_component_and_reported(tmp_path, caplog):
    path = tmp_path / "saved.keras"
    source = trainer.build_model(config({"num_output_layers": 2}))
    source.save(path)
    with pytest.raises(RunConfigError, match=r"train.init_from = '.*missing.keras': no such file"):
        trainer.build_model(config(init_from=str(tmp_path / "missing.keras")))
    # One output layer instead of two: the saved output set does not fit.
    with pytest.raises(RunConfigError) as error:
        trainer.build_model(config(init_from=str(path)))
    message = str(error.value)
    assert message.startswith(f"<dict>: train.init_from = '{path}': the saved weights do not "
                              "fit this run's model in output_set (")
    assert message.endswith('train.init_skip = ["output_set"]')
    with caplog.at_level(logging.INFO, logger="nemot.training"):
        model = trainer.build_model(config(init_from=str(path), init_skip=["output_set"]))
    saved = {weight_key(v): v.numpy() for v in source.weights}
    for variable in model.weights:
        key = weight_key(variable)
        if key.endswith(("kernel", "embeddings")):  # random starts (biases start at 0)
            copied = np.array_equal(variable.numpy(), saved[key])
            assert copied != key.startswith("output_set/"), key
    (line,) = [r.getMessage() for r in caplog.records if "init_from" in r.getMessage()]
    assert line == (f"train.init_from = {path}: copied 73 of 127 weights (vanilla_set 36/36, "
                    "aux_embedding 1/1, neuromodulatory_set 32/32, output_set 0/54 skipped, "
                    "head 2/2, vanilla_head 2/2)")


def fake_run(out, cfg, step):
    """A run directory as far as a resume reads it before anything else: its
    run_config.toml and a checkpoint named ``ckpt-<step>.npz``."""
    (out / "train_state").mkdir(parents=True)
    (out / "run_config.toml").write_text(dump_toml(cfg.to_dict()))
    (out / "train_state" / f"ckpt-{step}.npz").write_bytes(b"")


def test_resuming_with_another_preset_is_refused_before_anything_changes(tmp_path):
    cfg = tiny_run_config("run", steps=8, checkpoint_every=2)
    fake_run(tmp_path, cfg, step=4)
    saved = (tmp_path / "run_config.toml").read_text()
    data = cfg.to_dict()
    data["model"] = {"preset": "small"}
    with pytest.raises(ResumeConflict) as error:
        trainer.train(run_config_from_dict(data), out_dir=tmp_path)
    message = str(error.value)
    assert f"{tmp_path} holds a run (checkpoint at step 4) whose run_config.toml differs" \
        in message
    for change in ("model.max_text_length 20 -> 256", "model.d_model 32 -> 256",
                   "model.num_heads 2 -> 4", 'model.output_blocks ["mqa"] -> '):
        assert change in message
    assert "another directory (--out; train.init_from = " in message
    assert "the model's keys (model.max_text_length, " in message
    assert "train.resume_allow" not in message          # the model cannot be allowed
    assert (tmp_path / "run_config.toml").read_text() == saved
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run_config.toml", "train_state"]


def test_resuming_with_another_batch_size_names_the_old_and_new_values(tmp_path, caplog):
    cfg = tiny_run_config("run", steps=8, checkpoint_every=2, batch_size=4)
    fake_run(tmp_path, cfg, step=4)
    smaller = tiny_run_config("run", steps=8, checkpoint_every=2, batch_size=2)
    with pytest.raises(ResumeConflict) as error:
        trainer.check_resume(smaller, str(tmp_path))
    assert ("train.batch_size 4 -> 2 (the data would continue at global batch 4 of the new "
            "size: example 8 of the stream, where this run has read 16)") in str(error.value)
    assert str(error.value).endswith('train.resume_allow = ["train.batch_size"]')

    # Named in train.resume_allow, the change is kept and logged, with the safe ones.
    data = smaller.to_dict()
    data["train"].update(resume_allow=["train.batch_size"], epochs=3)
    with caplog.at_level(logging.INFO, logger="nemot.training"):
        trainer.check_resume(run_config_from_dict(data), str(tmp_path))
    lines = [r.getMessage() for r in caplog.records]
    assert any("train.batch_size 4 -> 2 (the data would continue" in line for line in lines)
    assert any("train.epochs 2 -> 3" in line for line in lines)

    data["train"]["resume_allow"] = ["model.d_model"]
    with pytest.raises(RunConfigError, match=r"train.resume_allow: 'model.d_model': the model "
                                              "cannot change in a resumed run"):
        run_config_from_dict(data)
    data["train"]["resume_allow"] = ["train.batch_sise"]
    with pytest.raises(RunConfigError, match="'train.batch_sise' is not a run-config key"):
        run_config_from_dict(data)


def test_run_messages_are_printed_once_when_a_library_configures_the_root_logger(capsys):
    """A program without logging of its own gets the run's INFO lines on stderr, once, even
    after a library's module-level ``logging.warning`` gave the root logger a handler."""
    from nemot.training.loop import show_run_messages

    root, ours = logging.getLogger(), logging.getLogger("nemot")
    saved = root.handlers[:], ours.handlers[:], ours.level, ours.propagate
    root.handlers.clear()
    ours.handlers.clear()
    try:
        show_run_messages()
        logging.warning("a library's own warning")  # logging.basicConfig() on the root
        logging.getLogger("nemot.training.trainer").info("resumed from step 4")
        assert capsys.readouterr().err.count("resumed from step 4") == 1
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
        root.handlers[:], ours.handlers[:] = saved[0], saved[1]
        ours.setLevel(saved[2])
        ours.propagate = saved[3]
