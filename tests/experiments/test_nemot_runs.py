"""NeMoT run configs over variants and seeds (``reproduction = "nemot"``, nemot runs)."""

import json
from pathlib import Path

import pytest

from nemot.experiments import protocol, report as reporting
from nemot.experiments import nemot_runs as experiment
from tests.data import fixtures

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_the_variants_differ_in_their_values_only():
    exp = experiment.load(CONFIGS / "nemot" / "race_modulation.toml")
    assert protocol.experiment_module("nemot") is experiment
    configs = {v: experiment.run_config(exp, v, 3) for v in experiment.variants(exp)}
    assert list(configs) == ["thesis", "pre", "post"]
    assert configs["thesis"].model.modulation == ()
    pre, post = configs["pre"].model.modulation[0], configs["post"].model.modulation[0]
    assert pre.kind == "modulated_ffn" and pre.sets == ("output",)
    assert pre.kwargs["position"] == "pre" and post.kwargs["position"] == "post"
    for cfg in configs.values():
        assert cfg.seed == 3
        assert cfg.model.replace(modulation=()) == configs["thesis"].model
        assert (cfg.data, cfg.train, cfg.schedule, cfg.loss) == (
            configs["thesis"].data, configs["thesis"].train, configs["thesis"].schedule,
            configs["thesis"].loss)


def test_a_bad_variant_is_named(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(f'reproduction = "nemot"\nname = "x"\noutput_dir = "{tmp_path}"\n'
                    f'run_config = "{CONFIGS / "race.toml"}"\n'
                    '[variants.a.model]\nwidth = 3\n')
    with pytest.raises(ValueError, match=r"\[variants.a\].*width"):
        experiment.load(path)


@pytest.mark.usefixtures("eager")
def test_nemot_runs_trains_two_variants_and_reports(tmp_path):
    fixtures.boolq(tmp_path / "boolq")
    path = tmp_path / "exp.toml"
    overrides = [f'data.dir=\\"{tmp_path / "boolq"}\\"', 'model.preset=\\"tiny\\"',
                 "train.epochs=1", "train.steps_per_epoch=2", "train.batch_size=2",
                 "train.verbose=0", "train.decode_jit_compile=false",
                 "data.max_new_tokens=2", "train.init_from=\\\"\\\""]
    path.write_text(
        f'reproduction = "nemot"\nname = "boolq_gain"\noutput_dir = "{tmp_path / "out"}"\n'
        f'seeds = [0]\nrun_config = "{CONFIGS / "boolq.toml"}"\n'
        "overrides = [" + ", ".join(f'"{o}"' for o in overrides) + "]\n"
        "[variants.thesis]\n[variants.gain.model]\n"
        'modulation = [{ kind = "modulated_ffn", sets = ["output"] }]\n')
    out = protocol.run_config(path, log=lambda *a: None)
    for variant in ("thesis", "gain"):
        metrics = json.loads((out / variant / "seed0" / protocol.METRICS).read_text())
        assert 0 <= metrics["val_metric"] <= 1 and metrics["val_loss"] > 0
    report, data = reporting.report(out)
    assert "| thesis |" in report and "| gain |" in report
    assert all(set(data["summary"][v]) >= {"val_metric", "val_loss"} for v in ("thesis", "gain"))
