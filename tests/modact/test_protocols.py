"""``nemot modact protocols``: NAMES runs under several protocols beside the paper's
Table 4, on run directories written in the runner's layout."""

import hashlib
import json
import math

import pytest
from scipy import stats

from nemot.modact import protocols

PAPER = {"modulated": 0.77898, "C1": 0.77490, "C2": 0.77516, "C3": 0.77602}


def write_runs(directory, values, overrides=(), name="names_lstm", epochs=None):
    """A runner output directory: runs.json and one metrics.json per (variant, seed)."""
    directory.mkdir(parents=True)
    (directory / "runs.json").write_text(json.dumps({
        "reproduction": "modact", "name": name, "config": "configs/modact/names_lstm.toml",
        "overrides": list(overrides), "variants": list(protocols.VARIANTS),
        "seeds": list(range(max(map(len, values.values())))), "synthetic": False}))
    for variant, accuracies in values.items():
        for seed, accuracy in enumerate(accuracies):
            run = directory / variant / f"seed{seed}"
            run.mkdir(parents=True)
            metrics = {"test_accuracy": accuracy, "train_accuracy": 0.9}
            if epochs:
                metrics["test_accuracy_epoch_mean"] = accuracy - epochs
            (run / "metrics.json").write_text(json.dumps(metrics))
    return str(directory)


def test_protocols_against_the_paper_and_the_reference(tmp_path):
    current = write_runs(tmp_path / "current", {
        "modulated": [0.834, 0.836], "C1": [0.829, 0.831], "C2": [0.829, 0.831],
        "C3": [0.832, 0.834]}, overrides=["data.dir=data/names"])
    # at the paper's level: every variant the paper's mean, ± 0.001
    level = write_runs(tmp_path / "level", {v: [m - 0.001, m + 0.001] for v, m in PAPER.items()},
                       overrides=["data.split=names", "output_dir=x",
                                  "train.test_each_epoch=true"], epochs=0.02)
    data = protocols.compare({"current": current, "split_names": level})

    mean, sd, low, high = protocols.paper_summary("modulated")
    half = stats.t.ppf(0.975, 29) * 0.00526 / math.sqrt(30)
    assert (mean, sd) == (0.77898, 0.00526)
    assert (low, high) == pytest.approx((0.77898 - half, 0.77898 + half))

    rows = {(r["protocol"], r["metric"]): r for r in data["rows"]}
    assert list(rows) == [("current", "test_accuracy"), ("split_names", "test_accuracy"),
                          ("split_names", "test_accuracy_epoch_mean")]
    ref, paper_level, epochs = rows.values()
    assert ref["overrides"] == "the config as it is"
    assert paper_level["overrides"] == "`data.split=names`"
    assert ref["gap_closed"] == pytest.approx(0)
    assert paper_level["gap_closed"] == pytest.approx(1)
    # 0.02 below the paper: the gap closed beyond the paper's level
    gap = 0.835 - PAPER["modulated"]
    assert epochs["variants"]["modulated"]["gap_closed"] == pytest.approx((gap + 0.02) / gap)
    assert all(e["in_paper_interval"] for e in paper_level["variants"].values())
    assert not any(e["in_paper_interval"] for e in ref["variants"].values())
    assert paper_level["variants"]["C1"]["welch_vs_paper"]["p"] == pytest.approx(1)
    assert ref["variants"]["C1"]["welch_vs_paper"]["p"] < 0.01
    assert paper_level["order"] == ["modulated", "C3", "C2", "C1"]
    assert ref["order"][0] == "modulated" and ref["modulated_first"]
    assert ref["modulated_lead"]["C1"]["difference"] == pytest.approx(0.005)


def test_the_command_writes_report_figure_and_checksums(tmp_path, capsys):
    from nemot.cli import main

    current = write_runs(tmp_path / "current", {v: [0.83, 0.832, 0.834] for v in PAPER})
    names = tmp_path / "names"
    names.mkdir()
    (names / "Czech.txt").write_bytes("Novak\nDvořák\n".encode())
    out = tmp_path / "report"
    assert main(["modact", "protocols", "--out", str(out), f"current={current}",
                 "--data", str(names)]) == 0
    text = (out / "report.md").read_text()
    assert capsys.readouterr().out == text + "\n"
    assert "| current | last epoch | 0.8320 ± 0.0020" in text
    saved = json.loads((out / "report.json").read_text())
    digest = hashlib.sha256("Novak\nDvořák\n".encode()).hexdigest()
    assert saved["data"]["files"]["Czech.txt"] == {"lines": 2, "sha256": digest}
    assert (out / "distributions.png").read_bytes()[:4] == b"\x89PNG"


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(ValueError, match=r"'current': expected LABEL=RUN_DIRECTORY"):
        protocols.parse_protocols(["current"])
    with pytest.raises(ValueError, match=r"protocol 'a' given twice"):
        protocols.parse_protocols(["a=x", "a=y"])
    other = write_runs(tmp_path / "sst", {"modulated": [0.7]}, name="sst2_lstm")
    with pytest.raises(ValueError, match=r"runs of 'sst2_lstm'; expected 'names_lstm'"):
        protocols.compare({"sst": other})
