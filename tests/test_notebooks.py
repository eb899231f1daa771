"""The walkthrough notebooks (``notebooks/*.ipynb``) run top to bottom in fast mode.

Each notebook is executed with nbclient in a temporary working directory (so nothing lands
in the repository) with ``NEMOT_FAST=1`` (tiny sizes). The kernel is this test's own
interpreter: a kernel spec written to a temporary directory names ``sys.executable``, so a
fresh clone with only ``pip install -e .[test]`` needs no ``ipykernel install``. Every
notebook writes ``walkthrough_NN/summary.json`` and its figures; the tests check what the
notebook claims, reading the claim from what it wrote (the loss fell by the margin its text
states, every score it prints beats the chance level it prints, the figures exist, ...),
not only that it ran, and
that no cell printed a warning (e.g. tqdm's "IProgress not found" without ipywidgets, or
Keras' ignored ``shuffle=True``) or TensorFlow's start-up notices. The committed notebooks must carry no outputs; what they
write is ignored by git; ``pip install 'nemot[notebooks]'`` installs what runs them.

The kernels are forked from one process that has imported what every notebook's first cell
imports (tests/kernels.py: ~9 CPU seconds a kernel less); what that import prints is checked
as the cells' output is (no TensorFlow start-up notice, no warning).

Notebooks that take a few tiny steps (01, 02, 06, and 05 inspecting 03's model) run
TensorFlow functions eagerly (``tf.config.run_functions_eagerly``, set in the kernel right
after the notebook's first cell, which imports nemot), as in ``tests/conftest.py``'s
``eager`` fixture: tracing the train, test and decoding functions would cost more than
those steps. 03, 04 and 05 train for a hundred steps and more, until the model beats chance;
they run as a user's would, compiled (``tf.function``): eagerly, those steps cost several
times the tracing. Every kernel runs with TensorFlow's graph optimizer off, as the suite's
own processes (``NO_GRAPPLER``, tests/conftest.py).

The hand-offs of notebooks/README.md run as one chain, each notebook once: 02 pre-trains on
the raw C4 files it writes, 03 fine-tunes from 02's model (``NEMOT_PRETRAINED``) and still
beats chance, and 05 inspects 03's ♠ model (``NEMOT_CHECKPOINT``) besides its own run.
"""

import configparser
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from tests import kernels
from tests.conftest import BACKEND_NOTICES, NO_GRAPPLER

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
NAMES = ("01_architecture", "02_pretraining_c4", "03_finetune_qa", "04_general_training",
         "05_generation_and_gates", "06_task_conditioning")
# The environment of every kernel: fast mode, quiet as a user's would be (TensorFlow's log
# level not set), figures inline.
SET = {"NEMOT_FAST": "1", "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
UNSET = ("TF_CPP_MIN_LOG_LEVEL", "NEMOT_BACKEND_LOGS")
# Per cell; a fast-mode training cell takes 1-2 minutes on two busy CPU cores.
TIMEOUT_S = 600
# Run in the kernel after the notebook's first cell (see the module docstring). tf.data
# traces its own functions whatever the switch says, and warns that it does.
EAGER = """\
import warnings
import tensorflow as tf
tf.config.run_functions_eagerly(True)
warnings.filterwarnings("ignore", "Even though the `tf.config.experimental_run_functions_eagerly`")
"""
# Run in every kernel after the notebook's first cell: tests/conftest.py's NO_GRAPPLER (its
# graphs, the tf.data ones of the eager notebooks too, run a few steps).
GRAPPLER_OFF = f"""\
import tensorflow as tf
tf.config.optimizer.set_experimental_options({NO_GRAPPLER!r})
"""


def _printed(name, text):
    """Asserts that ``text`` names no warning and no TensorFlow start-up notice.

    A warning is what Python's ``warnings`` prints (``file:line: SomeWarning: message``):
    text a model generated may hold GPT-2's token "Warning" (01's untrained model once
    decoded ``hammer RANDWarning :``)."""
    lines = text.splitlines()
    warned = [line for line in lines if re.search(r":\d+: \w*Warning: ", line)]
    assert not warned, f"{name}: printed warnings {warned}"
    noticed = [line for line in lines if any(notice in line for notice in BACKEND_NOTICES)]
    assert not noticed, f"{name}: printed TensorFlow's start-up notices {noticed}"


@pytest.fixture(scope="module", autouse=True)
def kernel_server(tmp_path_factory):
    """The server the kernels are forked from (tests/kernels.py), for this file's tests;
    at its end, what its imports printed is checked as a cell's output is."""
    directory = tmp_path_factory.mktemp("kernels")
    env = {key: value for key, value in os.environ.items() if key not in UNSET} | SET
    with (directory / "stderr").open("w") as stderr:
        server = subprocess.Popen([sys.executable, "-m", "tests.kernels", "serve",
                                   str(directory / "socket")], cwd=REPO, env=env, text=True,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    try:
        assert server.stdout.readline() == "READY\n", (directory / "stderr").read_text()
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.setenv(kernels.ADDRESS, str(directory / "socket"))
            yield
    finally:
        server.stdin.close()
        server.wait(timeout=120)
    _printed("the kernels' imports", (directory / "stderr").read_text())


def _kernel_manager(directory):
    """A KernelManager for kernel ``python3`` whose spec runs tests/kernels.py's launcher
    with this interpreter."""
    spec_dir = directory / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(REPO / "tests" / "kernels.py"), "-f",
                 "{connection_file}"],
        "display_name": "nemot test kernel", "language": "python"}))
    specs = KernelSpecManager(kernel_dirs=[str(directory / "kernels")], ensure_native_kernel=False)
    return KernelManager(kernel_name="python3", kernel_spec_manager=specs)


def run_notebook(name, workdir, monkeypatch, eager=True):
    """Execute ``notebooks/<name>.ipynb`` in ``workdir`` (TensorFlow functions eagerly unless
    ``eager`` is false); returns its summary.json and the directory it wrote."""
    for key, value in SET.items():
        monkeypatch.setenv(key, value)
    for key in UNSET:
        monkeypatch.delenv(key, raising=False)
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    after_first = 1 + next(index for index, cell in enumerate(notebook.cells)
                           if cell.cell_type == "code")
    notebook.cells.insert(after_first, nbformat.v4.new_code_cell(
        GRAPPLER_OFF + EAGER if eager else GRAPPLER_OFF))
    km = _kernel_manager(workdir / ".kernel")
    client = NotebookClient(notebook, km=km, timeout=TIMEOUT_S,
                            resources={"metadata": {"path": str(workdir)}})
    start = time.monotonic()
    try:
        client.execute()
    finally:  # nbclient shuts down only the kernels it started (1.2 GB each, idle)
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    seconds = time.monotonic() - start
    added = notebook.cells.pop(after_first)
    assert added.outputs == [], f"{name}: the test's switches printed {added.outputs}"
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                _printed(f"{name}: cell {index}", output.get("text", ""))
    number = name.split("_")[0]
    out = workdir / f"walkthrough_{number}"
    summary = json.loads((out / "summary.json").read_text())
    for figure in summary["figures"]:
        assert (out / "figures" / figure).stat().st_size > 5000, figure
    print(f"{name}: {seconds:.0f} s")
    return summary, out


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_has_no_outputs(name):
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code, "a walkthrough without code"
    for index, cell in enumerate(code):
        assert cell.outputs == [] and cell.execution_count is None, f"code cell {index}"
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    assert any("NEMOT_FAST" in cell.source for cell in code), "fast mode switch missing"


def test_walkthrough_outputs_are_ignored_by_git():
    # Run from notebooks/ (jupyter lab notebooks/), a notebook writes walkthrough_NN/ there.
    paths = [f"notebooks/walkthrough_{name.split('_')[0]}/summary.json" for name in NAMES]
    ignored = subprocess.run(["git", "check-ignore", *paths], cwd=REPO, capture_output=True,
                             text=True, check=False).stdout.split()
    assert ignored == paths


def test_the_notebooks_extra_installs_what_runs_them():
    extras = configparser.ConfigParser()
    extras.read(REPO / "setup.cfg")
    pins = dict(line.split("==") for line in
                extras["options.extras_require"]["notebooks"].split())
    # A front end, the kernel, the executor this test uses, tqdm's notebook bars.
    assert {"jupyterlab", "ipykernel", "nbclient", "nbformat", "ipywidgets"} <= set(pins)
    assert all(re.fullmatch(r"\d+(\.\d+)+", version) for version in pins.values()), pins
    assert "pip install 'nemot[notebooks]'" in (NOTEBOOKS / "README.md").read_text()


def test_01_architecture(tmp_path, monkeypatch):
    summary, _ = run_notebook("01_architecture", tmp_path, monkeypatch)
    assert {"masks.png", "gates.png", "gate_changes.png", "parameters.png"} <= set(summary["figures"])
    # Thesis Tables 3.2 / 3.6 counted the thesis' way; a correct model is larger.
    assert round(summary["thesis_count_one_block"] / 1e6) == 261
    assert round(summary["thesis_count_two_blocks"] / 1e6) == 280
    assert summary["total_thesis_preset"] == 453_149_970
    low, high = summary["gate_range"]
    assert 0 < low < high < 1
    assert all(change > 0 for change in summary["max_gate_change"].values())
    # The saved preset on JAX (a process of its own): TensorFlow's logits to round-off.
    assert summary["jax_logit_difference"] < 1e-4


@pytest.fixture(scope="module")
def pretrained_02(tmp_path_factory):
    """Notebook 02 run once: its own test, and the model notebook 03 starts from; removed
    after this file's tests."""
    workdir = tmp_path_factory.mktemp("notebook_02")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("NEMOT_CACHE", str(workdir / "cache"))  # the C4 window index
        monkeypatch.delenv("NEMOT_C4_DIR", raising=False)
        ran = run_notebook("02_pretraining_c4", workdir, monkeypatch)
    yield ran
    shutil.rmtree(workdir)


def test_02_pretraining_c4(pretrained_02):
    summary, out = pretrained_02
    assert "pretraining_loss.png" in summary["figures"]
    losses, steps = summary["step_losses"], summary["steps_per_epoch"]
    assert all(math.isfinite(value) for value in losses)
    # The drop the notebook's text claims: first step -> mean of the last epoch.
    assert losses[0] - sum(losses[-steps:]) / steps > summary["claimed_drop"] > 0
    # The resumed run continued with one more epoch, not from scratch.
    assert summary["epochs"] == list(range(1, len(summary["epochs"]) + 1))
    assert summary["final_step"] == steps * len(summary["epochs"])
    assert (out / "pretrain" / "model_last.keras").is_file()
    assert summary["c4_kind"] == "raw" and list((out / "c4-shards").glob("c4-train.*.npz"))
    # Two logical CPUs without a GPU (the notebook asserts the replica slices itself).
    assert summary["replicas"] >= 1


@pytest.fixture(scope="module")
def finetuned_03(pretrained_02, tmp_path_factory):
    """Notebook 03 run once, from 02's model: its own test, and the model notebook 05
    inspects; removed after this file's tests."""
    _, out_02 = pretrained_02
    workdir = tmp_path_factory.mktemp("notebook_03")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.delenv("NEMOT_DATASET", raising=False)
        monkeypatch.setenv("NEMOT_PRETRAINED", str(out_02 / "pretrain" / "model_last.keras"))
        ran = run_notebook("03_finetune_qa", workdir, monkeypatch, eager=False)
    yield ran
    shutil.rmtree(workdir)


def test_03_finetune_qa(finetuned_03):
    summary, out = finetuned_03
    assert summary["dataset"] == "race"
    assert {"training_curves.png", "loss_terms.png"} <= set(summary["figures"])
    loss, val_loss, val_metric = summary["loss"], summary["val_loss"], summary["val_metric"]
    assert len(loss) == len(val_loss) == len(val_metric) >= 3
    # What the text claims: the combined loss falls below the stated share of the first
    # epoch's, and the scores printed beat chance (a guess among RACE's four options).
    assert loss[-1] < summary["claimed_loss_ratio"] * loss[0]
    assert max(val_metric) > summary["chance"] == 0.25
    assert summary["report_scores"]["total"] > summary["chance"]
    # The club / spade epochs drawn are the lowest validation loss and the best metric.
    assert summary["club"] == 1 + min(range(len(val_loss)), key=val_loss.__getitem__)
    assert summary["spade"] == 1 + max(range(len(val_metric)), key=val_metric.__getitem__)
    terms = summary["loss_terms"]
    assert set(terms) == {"task", "lm", "vanilla"}
    assert math.isclose(summary["combined_loss"],
                        terms["task"] + 0.2 * terms["lm"] + 0.5 * terms["vanilla"], rel_tol=1e-5)
    assert (out / "evaluation" / "race_dev_report.md").is_file()
    # The hand-off: it started from 02's pre-trained model.
    assert summary["pretrained"].endswith("walkthrough_02/pretrain/model_last.keras")


def test_04_general_training(tmp_path, monkeypatch):
    summary, out = run_notebook("04_general_training", tmp_path, monkeypatch, eager=False)
    assert {"pool_draws.png", "loss_terms.png", "scores_vs_thesis.png"} <= set(summary["figures"])
    # What its text claims: the loss falls about tenfold, every score beats its chance level.
    assert summary["loss"][-1] < summary["loss"][0] / 5, summary["loss"]
    assert all(summary["scores"][name] > summary["chance"][name] for name in summary["chance"]), (
        summary["scores"], summary["chance"])
    assert summary["steps"] == summary["steps_per_epoch"] * len(summary["loss"])
    # The pool mixed both task tokens and drew the three datasets about equally often.
    assert {50284, 50296} <= set(summary["first_batch_tasks"])  # <mqa>, <gqa>
    assert all(abs(count - 1000) < 120 for count in summary["pool_draws"].values())
    assert set(summary["scores"]) == set(summary["chance"]) == {
        "arc_easy", "commonsenseqa", "winogrande", "piqa"}
    # Two options in WinoGrande and PIQA; two to four in ARC-Easy, so chance lies between.
    assert summary["chance"]["winogrande"] == summary["chance"]["piqa"] == 0.5
    assert 0.25 < summary["chance"]["arc_easy"] < 0.5
    assert len(summary["reports"]) == 4
    arc_easy = (out / "evaluation" / "arc_easy_test_report.md").read_text()
    # ARC-Easy scored as a dataset: the thesis' Easy column is its Total, no N/A column.
    assert "### ARC-Easy-test" in arc_easy and "| Model | Total |" in arc_easy
    assert "| NeMoT_general (thesis Table 3.7) | 41.46 |" in arc_easy


def test_05_generation_and_gates(tmp_path, monkeypatch):
    monkeypatch.delenv("NEMOT_CHECKPOINT", raising=False)
    summary, _ = run_notebook("05_generation_and_gates", tmp_path, monkeypatch, eager=False)
    assert summary["cached_equals_full"] is True
    assert {"gate_maps.png", "gate_differences.png", "comparison_loss.png",
            "comparison_scores.png"} <= set(summary["figures"])
    assert summary["tasks"] == ["lm", "mqa", "gqa"]
    assert all(value > 0 for value in summary["gate_map_difference"].values())
    for losses in summary["task_loss"].values():
        assert losses[-1] < losses[0]
    # Every accuracy the notebook prints beats its chance level (two options).
    assert summary["chance"] == 0.5 and len(summary["accuracy"]) == 3
    assert all(value > summary["chance"] for value in summary["accuracy"].values())
    assert all(len(scores) == 2 for scores in summary["option_scores"])
    nemot_row, baseline_row = summary["comparison"]
    assert nemot_row["parameters"] > baseline_row["parameters"]
    assert nemot_row["accuracy"] > summary["chance"] and 0 <= baseline_row["accuracy"] <= 1
    assert set(summary["decoding_seconds"]) == {"cached", "full recomputation"}


def test_05_inspects_the_model_of_03(finetuned_03, tmp_path, monkeypatch):
    # The hand-off of notebooks/README.md: NEMOT_CHECKPOINT inspects a trained model
    # without training; a fast-mode 03 model has only the lm block.
    _, out_03 = finetuned_03
    monkeypatch.setenv("NEMOT_CHECKPOINT", str(out_03 / "finetune_race" / "model_best_metric.keras"))
    summary, _ = run_notebook("05_generation_and_gates", tmp_path, monkeypatch)
    assert summary["checkpoint"].endswith("model_best_metric.keras")
    assert summary["tasks"] == ["lm"]
    assert summary["task_loss"] == {} and summary["comparison"] == []
    assert summary["cached_equals_full"] is True and "gate_maps.png" in summary["figures"]


def test_06_task_conditioning(tmp_path, monkeypatch):
    summary, out = run_notebook("06_task_conditioning", tmp_path, monkeypatch)
    variants = ["none", "nemot_gate", "ngt_block", "pals", "hypergrid", "modulated_ffn"]
    assert summary["variants"] == summary["committed_variants"] == variants
    assert {"added_parameters.png", "committed_comparison.png",
            "minbert_comparison_committed.png"} <= set(summary["figures"])
    # Every mechanism but none adds parameters and makes the encoding depend on the task
    # (beyond float32 rounding, about 1e-7, which is all that moves none's).
    assert summary["added_parameters"]["none"] == 0 and summary["encoding_change"]["none"] < 1e-6
    assert all(summary["added_parameters"][v] > 0 and summary["encoding_change"][v] > 1e-5
               for v in variants[1:])
    # `nemot runs` trained and scored every variant.
    for variant in variants:
        metrics = summary["tiny_runs"][variant]
        assert 0 <= metrics["sst_accuracy"] <= 1 and math.isfinite(metrics["score"])
        assert (out / "runs" / variant / "seed0" / "metrics.json").is_file()
