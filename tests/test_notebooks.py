"""The walkthrough notebooks (``notebooks/*.ipynb``) run top to bottom in fast mode.

Each notebook is executed with nbclient in a temporary working directory (so nothing lands
in the repository) with ``NEMOT_FAST=1`` (tiny sizes). The kernel is this test's own
interpreter: a kernel spec written to a temporary directory names ``sys.executable``, so a
fresh clone with only ``pip install -e .[test]`` needs no ``ipykernel install``. Every
notebook writes ``walkthrough_NN/summary.json`` and its figures; the tests check what the
notebook claims (the loss went down, the figures exist, ...), not only that it ran. The
committed notebooks must carry no outputs.
"""

import json
import math
import sys
import time
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = ("01_architecture", "02_pretraining_c4", "03_finetune_qa", "04_general_training",
         "05_generation_and_gates")
# Per notebook; they take 30-90 s on two busy CPU cores.
TIMEOUT_S = 300


def _kernel_manager(directory):
    """A KernelManager for kernel ``python3`` whose spec runs this interpreter."""
    spec_dir = directory / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "nemot test kernel", "language": "python"}))
    specs = KernelSpecManager(kernel_dirs=[str(directory / "kernels")], ensure_native_kernel=False)
    return KernelManager(kernel_name="python3", kernel_spec_manager=specs)


def run_notebook(name, workdir, monkeypatch):
    """Execute ``notebooks/<name>.ipynb`` in ``workdir``; returns its summary.json and seconds."""
    monkeypatch.setenv("NEMOT_FAST", "1")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    km = _kernel_manager(workdir / ".kernel")
    client = NotebookClient(notebook, km=km, timeout=TIMEOUT_S,
                            resources={"metadata": {"path": str(workdir)}})
    start = time.monotonic()
    client.execute()
    seconds = time.monotonic() - start
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


def test_01_architecture(tmp_path, monkeypatch):
    summary, _ = run_notebook("01_architecture", tmp_path, monkeypatch)
    assert {"masks.png", "gates.png"} <= set(summary["figures"])
    # Thesis Tables 3.2 / 3.6 counted the thesis' way; a correct model is larger.
    assert round(summary["thesis_count_one_block"] / 1e6) == 261
    assert round(summary["thesis_count_two_blocks"] / 1e6) == 280
    assert summary["total_thesis_preset"] == 453_149_970
    low, high = summary["gate_range"]
    assert 0 < low < high < 1
    assert all(change > 0 for change in summary["max_gate_change"].values())


def test_02_pretraining_c4(tmp_path, monkeypatch):
    monkeypatch.setenv("NEMOT_CACHE", str(tmp_path / "cache"))  # the C4 window index
    summary, out = run_notebook("02_pretraining_c4", tmp_path, monkeypatch)
    assert "pretraining_loss.png" in summary["figures"]
    losses, steps = summary["step_losses"], summary["steps_per_epoch"]
    assert all(math.isfinite(value) for value in losses)
    assert sum(losses[-steps:]) < sum(losses[:steps])  # the loss went down
    # The resumed run continued with one more epoch, not from scratch.
    assert summary["epochs"] == list(range(1, len(summary["epochs"]) + 1))
    assert summary["final_step"] == steps * len(summary["epochs"])
    assert (out / "pretrain" / "model_last.keras").is_file()
    assert list((out / "c4-shards").glob("c4-train.*.npz"))
    assert summary["replicas"] == 2  # two logical CPUs made in the notebook's first cells
