"""``python -m bench gpu``: the order of its work, its time budget (a piece of work starts
only if it fits; a process past its time is stopped with what it measured), and a result
file that holds each finished model and batch size when the run is stopped midway (at
tiny sizes on JAX's CPU, the cheapest compile, without TensorFlow as on a GPU machine with
JAX alone). No timing is asserted."""

import json
import os
import signal
import subprocess
import sys
import time

from bench import bench_gpu
from tests.conftest import CHEAP_XLA_FLAGS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(out, *options):
    """The benchmark on JAX with ``import tensorflow`` failing (tests/no_tensorflow), as
    on a GPU machine that has JAX alone."""
    hidden = os.pathsep.join([os.path.join(ROOT, "tests", "no_tensorflow"), ROOT])
    env = dict(os.environ, KERAS_BACKEND="jax", XLA_FLAGS=CHEAP_XLA_FLAGS,
               TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=hidden)
    return subprocess.Popen([sys.executable, "-m", "bench", "--results", str(out.parent),
                             "gpu", "--tiny", "--decode", "", "--partial", str(out), *options],
                            cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def stop(process):
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)  # the benchmark and the model's process
    process.wait()


def read(out):
    return json.loads(out.read_text())["result"] if out.exists() else None


def test_the_targets_figures_come_first():
    work = bench_gpu.plan(["nemot", "nemot_main_head", "gpt2_baseline", "keras_hub_gpt2"],
                          [16, 32], ["nemot", "keras_hub_gpt2"], [1, 32])
    assert work == [("train", "nemot", [16]), ("train", "keras_hub_gpt2", [16]),
                    ("train", "nemot_main_head", [16, 32]),
                    ("train", "gpt2_baseline", [16, 32]),
                    ("train", "nemot", [32]), ("train", "keras_hub_gpt2", [32]),
                    ("decode", "nemot", [1, 32]), ("decode", "keras_hub_gpt2", [1, 32])]


def test_work_starts_only_if_its_estimate_fits_the_budget():
    now = [0.0]
    budget = bench_gpu.Budget(100, started=0.0, clock=lambda: now[0])  # 92 s of work
    assert budget.fits("train", "nemot", [16])  # nothing measured: the first always starts
    now[0] = 40.0
    budget.record("train", "nemot", [16], 40.0)
    assert budget.fits("train", "keras_hub_gpt2", [16])  # the longest so far, 40 s, fits
    assert not budget.fits("train", "gpt2_baseline", [16, 32])  # 2 x 40 s does not
    now[0] = 60.0
    budget.record("train", "keras_hub_gpt2", [16], 20.0)
    assert budget.fits("train", "keras_hub_gpt2", [32])  # its own 20 s fits in 32 s left
    assert not budget.fits("train", "nemot", [32])  # its own 40 s does not
    assert bench_gpu.Budget(None, started=0.0).fits("train", "nemot", [16, 32])


def test_a_run_stopped_midway_keeps_each_finished_model_and_batch_size(tmp_path):
    out = tmp_path / "partial.json"
    # A budget that the first piece of work fits in however loaded the machine is.
    process = start(out, "--budget", "300", "--models", "gpt2_baseline,nemot",
                    "--batches", "2,4")
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and process.poll() is None:
            result = read(out)
            if result and ("2" in result["train"].get("nemot", {}) or result["errors"]):
                break
            time.sleep(0.5)
    finally:
        stop(process)
    result = read(out)
    assert result is not None, process.stderr.read()[-2000:]
    # NeMoT trains without TensorFlow (its train step once imported it: an H200 with JAX
    # alone measured nothing).
    assert result["errors"] == {}
    row = result["train"]["nemot"]["2"]
    assert row["step_seconds"] > 0 and row["compile_seconds"] > 0
    assert result["budget_seconds"] == 300
    # NeMoT at the first batch size came first: nothing else was measured yet.
    assert list(result["train"]) == ["nemot"]
    assert list(result["train"]["nemot"]) == ["2"]


def test_a_process_past_its_time_is_stopped_with_what_it_wrote(tmp_path):
    out = tmp_path / "result.json"
    script = (f"import json, time; open({str(out)!r}, 'w').write(json.dumps({{'16': 1}})); "
              "time.sleep(60)")
    seen = []
    began = time.monotonic()
    result = bench_gpu.watch([sys.executable, "-c", script], out, seen.append, timeout=3)
    assert time.monotonic() - began < 30
    assert result == {"16": 1, "stopped": "budget"}
    assert seen == [{"16": 1}]
    failed = bench_gpu.watch([sys.executable, "-c", "raise SystemExit('out of memory')"],
                             tmp_path / "none.json", seen.append)
    assert failed == {"error": ["out of memory"]}


def test_the_compile_benchmarks_gpt2_takes_the_configs_dropout():
    import keras_hub

    from bench import bench_compile

    def backbone_dropout(name):
        cfg = bench_compile.model_config(name, tiny=True)
        model = bench_gpu.build_train_model("keras_hub_gpt2", cfg)
        [backbone] = [layer for layer in model.layers
                      if isinstance(layer, keras_hub.models.GPT2Backbone)]
        return backbone.dropout

    assert backbone_dropout("keras_hub_gpt2") == 0.1  # NeMoT's rate, GPT-2's default
    assert backbone_dropout("keras_hub_gpt2_no_dropout") == 0.0
