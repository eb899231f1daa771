"""Every training entry point on Keras's JAX backend, in one process of its own:
``KERAS_BACKEND=jax XLA_FLAGS=--xla_force_host_platform_device_count=2 python -m
tests.training.jax_runs OUT`` writes ``OUT/report.json`` for tests/training/test_jax_runs.py.

At tiny sizes, as the suite runs them on TensorFlow: ``nemot pretrain`` (C4 files, ``--gpt2
none``), ``finetune`` (BoolQ, from the pre-trained model), ``train-general`` (RACE and
BoolQ), ``evaluate`` and ``generate`` of the fine-tuned model, ``nemot runs`` of the NAMES
LSTM on synthetic names; the tiny run of tests/training/worker.py
on one device and with ``--strategy data-parallel`` on two, dropout on; gradient
accumulation's runs (tests/training/test_accumulation.py) on two devices; the same run with
``--strategy multi-host`` on two hosts (``python -m tests.training.jax_runs host OUT
PAUSE_AT``: two processes on 127.0.0.1), one preempted, then both resumed; what a TensorFlow
strategy and an earlier version's TensorFlow checkpoints get on JAX; and the fault
point: the tiny run of tests/faults.py killed inside its checkpoint write at step 4 (a
process of its own, started first, running beside the rest), then resumed here beside an
uninterrupted run. The processes of the hosts and of the killed run are forked from one
that imported JAX, Keras and nemot once (tests/training/forks.py), started with this one.
"""

import contextlib
import io
import json
import resource
import signal
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
# tests/faults.py --trace: write event 7 of the tiny run is ckpt-4.npz.
KILL_AT = "7:partial"


def cpu_seconds():
    """User + system CPU seconds of this process so far (every thread)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _command(argv):
    """``nemot ARGV`` in this process: ``(exit status, stdout, stderr)``."""
    from nemot import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


def commands(root):
    """The CLI commands' tiny forms; each one's status, the lines that matter, and the
    files it wrote."""
    from tests.data import fixtures

    fixtures.write_c4(root / "c4")
    fixtures.boolq(root / "data" / "boolq")
    fixtures.race(root / "data" / "race")
    quiet = ["--set", "train.verbose=0"]
    report = {}
    # One vanilla and one NM layer, no vanilla head: half the training step XLA compiles,
    # which is most of a command's cost. finetune and train-general also train the same
    # model with the same loss, schedule and batch shape, so one compiled training step
    # (and validation step) serves both (JAX's persistent compilation cache).
    small = ["--set", "model.num_vanilla_layers=1", "--set", "model.num_nm_layers=1",
             "--set", "model.vanilla_head=false", "--set", "loss.vanilla_weight=0",
             "--set", "model.max_text_length=32", *quiet]
    shared = ["--set", "schedule.warmup_steps=250", "--set", "schedule.decay_steps=18000",
              "--set", "data.max_new_tokens=2", *small]
    report["pretrain"] = _command([
        "pretrain", "--config", ROOT / "configs" / "pretrain.toml", "--preset", "tiny",
        "--gpt2", "none", "--data-dir", root / "c4", "--out", root / "pretrain", "--epochs", 1,
        "--batch-size", 4, "--set", "train.steps_per_epoch=2", "--set",
        "data.validation_batches=1", *small])
    pretrained = root / "pretrain" / "model_last.keras"
    report["finetune"] = _command([
        "finetune", "--config", ROOT / "configs" / "boolq.toml", "--preset", "tiny",
        "--data-dir", root / "data" / "boolq", "--out", root / "boolq", "--epochs", 1,
        "--batch-size", 2, "--set", f"train.init_from={json.dumps(str(pretrained))}",
        *shared])
    report["train-general"] = _command([
        "train-general", "--config", ROOT / "configs" / "general.toml", "--preset", "tiny",
        "--data-dir", root / "data", "--out", root / "general", "--epochs", 1,
        "--set", 'data.datasets=["race", "boolq"]', "--set", "train.steps_per_epoch=2",
        "--set", "train.init_from=", *shared])
    finetuned = root / "boolq" / "model_best_metric.keras"
    report["evaluate"] = _command([
        "evaluate", "--checkpoint", finetuned, "--dataset", "boolq", "--split", "dev",
        "--data-dir", root / "data" / "boolq", "--out", root / "eval"])
    report["generate"] = _command([
        "generate", "--checkpoint", finetuned, "--prompt", "<q> Is the sky blue? <sep>",
        "--max-new-tokens", 3])
    report["runs"] = _command([
        "runs", "--config", ROOT / "configs" / "modact" / "names_lstm.toml", "--seeds", 1,
        "--variants", "modulated", "--set", "data.synthetic=96", "--set", "train.epochs=1",
        "--set", "model.hidden=8", "--set", "model.embedding_dim=8",
        "--set", f"output_dir={json.dumps(str(root / 'names'))}"])
    report = {name: {"status": status, "out": out[-2000:], "err": err[-2000:]}
              for name, (status, out, err) in report.items()}
    report["files"] = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                             if p.is_file() and "data" not in p.parts and "c4" not in p.parts)
    return report


def small_run(out, strategy, callbacks=()):
    """The tiny run of tests/training/worker.py with one vanilla and one NM layer and no
    vanilla head (half the step XLA compiles), SGD, dropout on, into ``out``; its weights
    to ``out/weights.npz`` (a host of several: ``weights<its index>.npz``). Returns the
    training result."""
    import jax

    from nemot.training import trainer
    from nemot.training.run_config import run_config_from_dict
    from tests.training import worker

    cfg = worker.tiny_run_config("worker", steps=4, checkpoint_every=2, strategy=strategy,
                                 optimizer="sgd", rate=0.5).to_dict()
    cfg["model"].update(num_vanilla_layers=1, num_nm_layers=1, vanilla_head=False)
    cfg["loss"]["vanilla_weight"] = 0.0
    result = trainer.train(run_config_from_dict(cfg), out_dir=out, source=worker.tiny_source(),
                           callbacks=list(callbacks))
    # After training: asking JAX for the process index first would start its backend
    # before the strategy's jax.distributed.initialize.
    weights = f"weights{jax.process_index()}.npz" if strategy == "multi-host" else "weights.npz"
    np.savez(Path(out) / weights, **{v.path: np.asarray(v.numpy()) for v in result.model.weights})
    return result


def compared(reference, other):
    """``(largest, difference)``: the largest absolute weight of ``reference`` and the
    largest absolute difference of ``other``'s weights from it, over ``reference``'s names
    (an ``.npz`` file or a dict of arrays)."""
    names = getattr(reference, "files", list(reference))
    return (max(float(np.abs(reference[k]).max()) for k in names),
            max(float(np.abs(other[k] - reference[k]).max()) for k in names))


def data_parallel(root):
    """:func:`small_run` on one device and on two (``data-parallel``; the step compiles
    once per device count): both runs' weights and losses."""
    import jax

    out = {"devices": len(jax.devices())}
    for strategy in ("default", "data-parallel"):
        result = small_run(root / strategy, strategy)
        out[strategy] = {"loss": result.history["loss"], "step": result.step}
    first, second = (np.load(root / s / "weights.npz") for s in ("default", "data-parallel"))
    out["largest_weight"], out["weight_difference"] = compared(first, second)
    out["same_names"] = sorted(first.files) == sorted(second.files)
    return out


def accumulation(root):
    """tests/training/test_accumulation.py's runs on JAX: 4 micro-batches of 2 on two
    devices (``data-parallel``) against batches of 8 on one; the largest difference of a
    weight, the largest weight and both runs' steps."""
    from nemot.training import distributed, trainer
    from tests.training import test_accumulation as runs

    whole = trainer.train(runs.config(1), out_dir=root / "accumulation" / "whole",
                          source=runs.source())
    micro = trainer.train(runs.config(4), out_dir=root / "accumulation" / "micro",
                          source=runs.source(),
                          strategy=distributed.make_strategy("data-parallel"))
    largest, difference = compared(runs.weights(whole), runs.weights(micro))
    return {"steps": [whole.step, micro.step], "difference": difference, "largest": largest}


def host(out, pause_at):
    """One host of a ``multi-host`` :func:`small_run` (in a process of its own: its
    cluster comes from ``KERAS_DISTRIBUTION_*``); ``pause_at``: print ``PAUSED`` after that
    step and wait a second after each step from then on, for a signal to land mid-run.
    Returns the command line's exit status (75: preempted)."""
    from nemot import console
    from tests.training import worker

    return console.run(lambda _: small_run(out, "multi-host", [worker.stops(pause_at=pause_at)]),
                       None)


def _hosts(forks, out, pause_at=0):
    """Two hosts of one CPU device each on 127.0.0.1, processes of their own forked by
    ``forks`` (their standard output readable)."""
    import os

    from tests.training.test_distributed import _free_ports

    port, = _free_ports(1)
    flags = " ".join(flag for flag in os.environ.get("XLA_FLAGS", "").split()
                     if not flag.startswith("--xla_force_host_platform_device_count"))
    return [forks.start(
        ["host", out, pause_at], module="tests.training.jax_runs",
        env=dict(os.environ, XLA_FLAGS=flags, KERAS_DISTRIBUTION_JOB_ADDRESSES=f"127.0.0.1:{port}",
                 KERAS_DISTRIBUTION_NUM_PROCESSES="2", KERAS_DISTRIBUTION_PROCESS_ID=str(i)))
        for i in range(2)]


def multi_host(root, forks):
    """Two hosts (``--strategy multi-host``, ``jax.distributed`` from Keras's environment):
    SIGTERM to the second in its wait after step 1, both stop at step 2 (they agree after
    every step); both started again run to the end. Their exit statuses, error lines and
    weights against :func:`data_parallel`'s one device."""
    out = root / "multi_host"
    stopped = _hosts(forks, out, pause_at=1)
    try:
        for line in stopped[1].stdout:
            if line.startswith("PAUSED"):
                break
        stopped[1].send_signal(signal.SIGTERM)
        ends = [process.communicate(timeout=300) for process in stopped]
    finally:
        for process in stopped:
            if process.poll() is None:
                process.kill()
    resumed = _hosts(forks, out)
    again = [process.communicate(timeout=600) for process in resumed]
    report = {"stderr": [err[-1500:] for _, err in ends + again]}
    if not all((out / f"weights{i}.npz").is_file() for i in range(2)):
        return report  # the test names what the hosts printed
    one = np.load(root / "default" / "weights.npz")
    hosts = [np.load(out / f"weights{i}.npz") for i in range(2)]
    largest, difference = compared(one, hosts[0])
    return {**report, "exits": [process.returncode for process in stopped],
            "errors": [[line for line in err.splitlines() if line.startswith("error: ")]
                       for _, err in ends],
            "checkpoints": sorted(p.name for p in (out / "train_state").glob("ckpt-*.npz")),
            "resumed_exits": [process.returncode for process in resumed],
            "resumed": [any("resumed from step 2" in line for line in err.splitlines())
                        for _, err in again],
            "hosts_differ": compared(hosts[0], hosts[1])[1],
            "weight_difference": difference, "largest_weight": largest}


def refusals(root):
    """The messages of a TensorFlow strategy and of an earlier version's ``tf.train``
    checkpoints on JAX."""
    import keras

    from nemot.training import checkpoints, distributed

    out = {}
    try:
        distributed.make_strategy("mirrored")
    except ValueError as error:
        out["strategy"] = str(error)
    legacy = root / "legacy" / "train_state"
    legacy.mkdir(parents=True)
    (legacy / "checkpoint").write_text('model_checkpoint_path: "ckpt-4"\n')
    for name in ("ckpt-4.index", "ckpt-4.data-00000-of-00001"):
        (legacy / name).write_bytes(b"")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(keras.optimizers.Adam())
    try:
        checkpoints.TrainingCheckpoint(model, legacy).restore()
    except checkpoints.CheckpointError as error:
        out["legacy"] = str(error)
    return out


def processes(root):
    """The fork server of this run's other processes (a context manager: leaving it kills
    what still runs and waits for the server, so their CPU time counts for this process)."""
    from tests.training.forks import Forks

    (Path(root) / "forks").mkdir(parents=True, exist_ok=True)
    return Forks(Path(root) / "forks")


def start(root, forks):
    """The killed run: tests/faults.py's tiny run in a process of its own (forked by
    ``forks``), started first so that it runs beside the rest (and compiles its training
    step for the reference run, through the persistent compilation cache: the same XLA
    flags, two devices too)."""
    import os

    return forks.start(["train", Path(root) / "killed", "--trace", "--kill-at", KILL_AT],
                       dict(os.environ), module="tests.faults")


def finish(root, victim, forks):
    """Every part but the killed run (``victim``, from :func:`start`), then the fault point;
    writes ``root/report.json``."""
    import keras

    from tests import faults

    assert keras.backend.backend() == "jax"
    root = Path(root)
    killed = root / "killed"
    report, cpu = {}, {}
    try:
        parts = {"refusals": refusals, "commands": commands, "data_parallel": data_parallel,
                 "accumulation": accumulation, "multi_host": lambda root: multi_host(root, forks)}
        for name, part in parts.items():
            start = cpu_seconds()
            report[name] = part(root)
            cpu[name] = round(cpu_seconds() - start, 1)
        stdout, _ = victim.communicate(timeout=900)
    finally:
        if victim.poll() is None:
            victim.kill()
    report["fault"] = {"exit": victim.returncode, "killed": victim.returncode == -signal.SIGKILL,
                       "write": dict(faults.events(stdout)).get(int(KILL_AT.split(":")[0])),
                       "left": sorted(p.name for p in (killed / "train_state").iterdir())}
    reference = root / "reference"
    start = cpu_seconds()
    report["fault"]["resume"] = list(faults.resume([reference, killed]))
    cpu["fault"] = round(cpu_seconds() - start, 1)
    # What each part cost this process (user + system, all threads); the forked processes
    # count for the fork server, once it ends.
    report["cpu_seconds"] = cpu
    report["fault"]["identical"] = faults.same_weights(killed, reference) and (
        faults._validation_results(killed) == faults._validation_results(reference))
    (root / "report.json").write_text(json.dumps(report))


def main(argv):
    if argv[0] == "host":
        return host(Path(argv[1]), int(argv[2]))
    with processes(argv[0]) as forks:
        finish(argv[0], start(argv[0], forks), forks)
    return 0


if __name__ == "__main__":
    from nemot import console

    console.end_without_collecting()  # the process ends with it
    sys.exit(main(sys.argv[1:]))
