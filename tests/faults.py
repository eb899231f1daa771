"""Kill a training run or a data_prep run inside its writes, then run it again.

    python -m tests.faults train OUT [--kill-at K:STAGE] [--trace]
    python -m tests.faults resume OUT [OUT ...]
    python -m tests.faults data_prep RAW OUT [--kill-at K:STAGE] [--trace]

Every file a run writes goes through :func:`nemot.files.atomic_path`, a training
checkpoint (``train_state/ckpt-<step>.npz``) too. This module numbers those writes as they
happen ("write events"; ``--trace`` prints them) and, with ``--kill-at K:STAGE``, sends
itself SIGKILL at write event ``K`` (its number, or the name of the file it writes: the
first write of ``ckpt-4.npz`` is ``ckpt-4.npz:partial``):

- ``partial``: the temporary file half written (a kill in the middle of the write);
- ``before_rename``: the temporary file complete, not yet renamed;
- ``after_rename``: the new file in place, nothing after it done.

``resume`` runs each killed directory to its end in one process (each run seeds itself
the same way; :func:`resume` does it in the calling process) and writes ``weights.npz``
there; :func:`check_files` reads every file of a
run directory as the next command would. The suite (tests/training/test_faults.py) tries a
few kill points; ``python -m bench faults`` tries them all and counts.
"""

import argparse
import contextlib
import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
ROOT = Path(__file__).resolve().parent.parent
STAGES = ("partial", "before_rename", "after_rename")
EVENTS = []


def _die():
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def _halve(path):
    path = Path(path)
    if path.exists():
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size // 2)


def kill_point(text):
    """``"K:STAGE"`` -> ``(K, STAGE)``: ``K`` a write event's number, or the name of the
    file whose first write it is."""
    event, stage = text.rsplit(":", 1)
    if stage not in STAGES:
        raise ValueError(f"kill point {text!r}: expected EVENT:STAGE, STAGE one of {STAGES}")
    return (int(event) if event.isdigit() else event), stage


def install(kill_at=None, trace=False):
    """Number the writes of this process (see the module docstring); kill it at
    ``kill_at`` = ``(event, stage)``, ``event`` a number or a file's name (its first
    write)."""
    from nemot import files

    atomic_path = files.atomic_path

    def event(name):
        EVENTS.append(name)
        if trace:
            print(f"EVENT {len(EVENTS) - 1} {name}", flush=True)
        return len(EVENTS) - 1

    @contextlib.contextmanager
    def counted(path):
        name = f"write {Path(path).name}"
        first = name not in EVENTS
        index = event(name)
        stage = kill_at[1] if kill_at is not None and kill_at[0] in (
            index, Path(path).name if first else None) else None
        with atomic_path(path) as tmp:
            yield tmp
            if stage == "partial":
                _halve(tmp)
                _die()
            if stage == "before_rename":
                _die()
        if stage == "after_rename":
            _die()

    files.atomic_path = counted


# ---------------------------------------------------------------- the runs

def training(out):
    """The tiny training run (two epochs of four steps, a checkpoint every two, the
    validation loss and a metric, so every file of a run is written), to its end;
    writes ``out/weights.npz``."""
    import dataclasses

    from nemot.data import Formatter, Tokenizer
    from nemot.data.synthetic import qa as synthetic
    from nemot.training import trainer
    from tests.training.worker import tiny_run_config

    n = 20
    formatter = Formatter(Tokenizer(), max_text_length=n)
    source = trainer.examples_source(
        formatter.format_batch(synthetic.choice_examples(24, seed=5)), batch_size=4,
        max_text_length=n,
        validation_examples=formatter.format_batch(synthetic.choice_examples(8, seed=6)))
    # A metric that changes every epoch without decoding: the first weight's mean.
    source = dataclasses.replace(
        source, metric=lambda model: float(np.mean(model.trainable_weights[0].numpy())))
    cfg = tiny_run_config("faults", steps=8, checkpoint_every=2)
    result = trainer.train(cfg, out_dir=out, source=source)
    np.savez(Path(out, "weights.npz"),
             **{v.path.split("/", 1)[-1]: np.asarray(v.numpy()) for v in result.model.weights})
    return result


def data_prep(raw, out):
    from nemot.data import prepare

    return prepare.prepare_c4(raw, out, workers=1, progress=False)


def check_files(out):
    """The names of the files in run directory ``out`` that the next command could not
    read (results.csv, best.json, the run config, the .keras models, the newest
    checkpoint); empty when all are whole."""
    import keras

    import nemot
    from nemot import files
    from nemot.training import checkpoints

    out, corrupt, loaded = Path(out), [], {}
    try:
        with open(out / "results.csv", newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert all(r["epoch"].isdigit() and float(r["loss"]) == float(r["loss"]) for r in rows)
    except FileNotFoundError:
        pass
    except (AssertionError, KeyError, ValueError, csv.Error, TypeError):
        corrupt.append("results.csv")
    for name, read in (("best.json", lambda p: json.loads(p.read_text())),
                       ("run_config.toml", lambda p: tomllib.loads(p.read_text()))):
        try:
            read(out / name)
        except FileNotFoundError:
            pass
        except ValueError:
            corrupt.append(name)
    for path in sorted(p for p in out.glob("*.keras") if not files.is_temporary(p)):
        # A file with the bytes of one loaded already loads the same way (an epoch's last
        # and best models are often one model saved three times: ~1.5 s a load).
        digest = hashlib.sha256(path.read_bytes()).digest()
        if digest not in loaded:
            try:
                nemot.load_model(path, compile=False)
                loaded[digest] = None
            except (ValueError, OSError, EOFError, KeyError) as error:
                loaded[digest] = type(error).__name__
            finally:
                keras.backend.clear_session()
        if loaded[digest]:
            corrupt.append(f"{path.name} ({loaded[digest]})")
    latest = checkpoints.latest_checkpoint(out / "train_state")
    if latest is not None:
        try:
            checkpoints.read(latest)
        except checkpoints.UNREADABLE as error:
            corrupt.append(f"{Path(latest).name} ({type(error).__name__})")
    return corrupt


# ---------------------------------------------------------------- driving it

def run(*args, timeout=3600):
    """``python -m tests.faults ARGS`` in a new process: ``(return code, stdout, stderr)``."""
    done = subprocess.run([sys.executable, "-m", "tests.faults", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    return done.returncode, done.stdout, done.stderr


def events(stdout):
    """The write events a ``--trace`` run printed: ``[(index, name), ...]``."""
    return [(int(line.split()[1]), line.split(None, 2)[2]) for line in stdout.splitlines()
            if line.startswith("EVENT ")]


def same_weights(a, b):
    with np.load(Path(a, "weights.npz")) as x, np.load(Path(b, "weights.npz")) as y:
        return sorted(x.files) == sorted(y.files) and all(
            np.array_equal(x[k], y[k]) for k in x.files)


def _temporary(path):
    from nemot import files

    return files.is_temporary(path)


def _validation_results(directory):
    """The results rows' epochs and validation columns. (A training-loss column of the
    epoch a run was killed in is the mean over the steps the resumed run took.)"""
    with open(Path(directory, "results.csv"), newline="", encoding="utf-8") as handle:
        return [{k: v for k, v in row.items() if k == "epoch" or k.startswith("val_")}
                for row in csv.DictReader(handle)]


def _same_file(a, b):
    return Path(a).read_bytes() == Path(b).read_bytes()


def resume(outs):
    """Each killed directory of ``outs`` as the next command finds it, then that command
    run to its end (:func:`training`): the lines ``CORRUPT out [names]`` and then ``RESUMED
    out``, ``NAMED out message`` or ``CRASH out error``, one after the other."""
    from nemot.errors import user_message

    for out in outs:
        yield f"CORRUPT {out} {json.dumps(check_files(out))}"
        try:
            training(out)
        except Exception as error:  # counted: a named error, or a crash
            message = user_message(error)
            yield f"{'NAMED' if message else 'CRASH'} {out} {message or repr(error)}"
            continue
        yield f"RESUMED {out}"


def _resume_here(outs):
    """:func:`resume` in this process, as the ``resume`` command runs it: ``(0, stdout, "")``."""
    import tensorflow as tf

    eager = tf.config.functions_run_eagerly()
    tf.config.run_functions_eagerly(True)
    try:
        return 0, "".join(line + "\n" for line in resume(outs)), ""
    finally:
        tf.config.run_functions_eagerly(eager)


def _run_all(commands, jobs):
    """Run ``python -m tests.faults`` with each argument list, ``jobs`` at a time; returns
    their ``(return code, stdout, stderr)`` in order."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return list(pool.map(lambda args: run(*args), commands))


def training_sweep(root, points=None, jobs=1, resume_here=False):
    """Kill the tiny training run at each of ``points`` (``[(event, stage)]``; default:
    every write event it traces, at every stage), run the next command in each killed
    directory, and count: kill points tried, processes killed there, files found corrupt
    after the kill, runs resumed to the uninterrupted run's weights, results and best
    models, runs that failed with a named error, and crashes (must be 0).

    The uninterrupted run runs first in the first ``resume`` process (a fresh directory);
    with ``resume_here`` the resumes run in this process instead, one after the other
    (a caller with TensorFlow loaded saves a process's start). ``details`` says what
    happened at each point."""
    root = Path(root)
    reference = root / "reference"
    if points is None:
        code, out, err = run("train", root / "trace", "--trace")
        assert code == 0, err[-3000:]
        points = [(index, stage) for index, _ in events(out) for stage in STAGES]
        shutil.rmtree(root / "trace")
    counts = {"kill_points": len(points), "killed": 0, "corrupt_files": 0, "resumed": 0,
              "resumed_identically": 0, "named_errors": 0, "crashes": 0}
    details = []
    # In batches, each directory removed once counted: a run directory holds ~300 MB.
    batch = 4 * jobs
    for first in range(0, len(points), batch):
        some = points[first:first + batch]
        dirs = [root / f"kill-{i}-{stage}" for i, stage in some]
        killed = _run_all([("train", d, "--trace", "--kill-at", f"{i}:{stage}")
                           for (i, stage), d in zip(some, dirs)], jobs)
        chunks = [dirs[k::jobs] for k in range(min(jobs, len(dirs)))]
        if first == 0:
            chunks[0] = [reference] + chunks[0]
        if resume_here:
            outputs = [_resume_here(directory for chunk in chunks for directory in chunk)]
        else:
            outputs = _run_all([("resume", *chunk) for chunk in chunks], jobs)
        lines = [line.split(" ", 2) + [""] for _, stdout, _ in outputs
                 for line in stdout.splitlines()]
        if first == 0:
            assert any(kind == "RESUMED" and path == str(reference)
                       for kind, path, *_ in lines), outputs[0][2][-3000:]
        for (i, stage), directory, (code, stdout, _) in zip(some, dirs, killed):
            counts["killed"] += code == -signal.SIGKILL
            mine = [(kind, rest) for kind, path, rest, *_ in lines if path == str(directory)]
            corrupt = next((json.loads(rest) for kind, rest in mine if kind == "CORRUPT"), None)
            outcome = next((kind for kind, _ in mine if kind != "CORRUPT"), "CRASH")
            counts["corrupt_files"] += len(corrupt or [])
            identical = outcome == "RESUMED" and same_weights(directory, reference) and \
                _same_file(directory / "best.json", reference / "best.json") and \
                _validation_results(directory) == _validation_results(reference)
            if outcome == "RESUMED":
                counts["resumed"] += 1
                counts["resumed_identically"] += identical
            else:
                counts["named_errors" if outcome == "NAMED" else "crashes"] += 1
            details.append({"event": i, "write": dict(events(stdout)).get(i), "stage": stage,
                            "exit": code, "corrupt": corrupt, "outcome": outcome.lower(),
                            "identical": identical,
                            "temporaries_left": sum(map(_temporary, directory.iterdir()))})
            shutil.rmtree(directory)
    return counts, details


def data_prep_sweep(root, raw, points=None, jobs=1):
    """The same for ``data_prep c4`` on the raw C4 files in ``raw``: kill it inside each of
    its shard and index writes, run it again, and count the shards that read back (index
    checksums included) equal to an uninterrupted run's."""
    from nemot.data import shards

    root = Path(root)
    code, out, err = run("data_prep", raw, root / "reference", "--trace")
    assert code == 0, err[-3000:]
    traced = events(out)
    points = points or [(index, stage) for index, _ in traced for stage in STAGES]
    killed = _run_all([("data_prep", raw, root / f"kill-{i}-{stage}", "--kill-at",
                        f"{i}:{stage}") for i, stage in points], jobs)
    again = _run_all([("data_prep", raw, root / f"kill-{i}-{stage}") for i, stage in points],
                     jobs)
    reference = sorted(p.name for p in (root / "reference").glob("*.npz"))
    counts = {"kill_points": len(points), "killed": 0, "finished": 0, "finished_identically": 0,
              "crashes": 0}
    for (i, stage), (code, _, _), (code_again, _, _) in zip(points, killed, again):
        counts["killed"] += code == -signal.SIGKILL
        directory = root / f"kill-{i}-{stage}"
        if code_again != 0:
            counts["crashes"] += 1
            continue
        counts["finished"] += 1
        shards.check_shards(directory / name for name in reference)
        counts["finished_identically"] += all(
            np.array_equal(a, b) for name in reference
            for a, b in zip(shards.read_c4_shard(directory / name),
                            shards.read_c4_shard(root / "reference" / name)))
    return counts


def multi_worker_sweep(root, signals=(signal.SIGTERM, signal.SIGKILL), pauses=(1, 3),
                       timeout=120):
    """Two ``MultiWorkerMirroredStrategy`` workers on local ports (the tiny run of
    tests/training/worker.py, eager), stopped at each point: each worker in turn, each of
    ``signals``, in the second's wait after step ``pause`` (``--pause-at``); and the chief
    (worker 0, the one that writes) killed inside its write of the checkpoint of step 2 at
    each of :data:`STAGES` (``--kill-at``); then both started again. Counts: points,
    processes still running ``timeout`` seconds after the signal (hangs, then killed),
    survivors that exited with 75 and one ``error:`` line, checkpoint files the next
    command could not read, pairs resumed to the uninterrupted workers' weights (to 1e-5,
    the eager against traced rounding of tests/training/test_distributed.py; here both
    eager, so equal in practice)."""
    from nemot.training import checkpoints
    from tests.training.test_distributed import _workers

    def ended(processes):
        errors, hung = [], 0
        for process in processes:
            try:
                errors.append(process.communicate(timeout=timeout)[1])
            except subprocess.TimeoutExpired:
                hung += 1
                process.kill()
                errors.append(process.communicate()[1])
        return errors, hung

    root = Path(root)
    _, hung = ended(_workers(root / "reference", "--eager"))
    assert not hung, "the uninterrupted workers did not end"
    reference = np.load(root / "reference" / "weights0.npz")
    counts = {"kill_points": 0, "hangs": 0, "named_stops": 0, "survivors": 0,
              "corrupt_files": 0, "resumed_identically": 0}
    details = []
    points = [(target, number, pause) for target in (0, 1) for number in signals
              for pause in pauses] + [(0, f"ckpt-2.npz:{stage}", None) for stage in STAGES]
    for target, number, pause in points:
        if pause is None:  # the chief kills itself inside its write
            out = root / f"worker0-write-{number.split(':')[1]}"
            processes = _workers(out, "--eager", kill_at={0: number})
            processes[0].wait(timeout=600)
            start = time.monotonic()
        else:
            out = root / f"worker{target}-{number.name}-{pause}"
            processes = _workers(out, "--eager", "--pause-at", str(pause),
                                 stdout=subprocess.PIPE)
            for line in processes[target].stdout:
                if line.startswith("PAUSED"):
                    break
            start = time.monotonic()
            processes[target].send_signal(number)
        errors, hung = ended(processes)
        seconds = round(time.monotonic() - start, 1)
        codes = [process.returncode for process in processes]
        survivors = [i for i, code in enumerate(codes) if code != -signal.SIGKILL]
        named = sum(codes[i] == 75 and sum(line.startswith("error: ") for line in
                                           errors[i].splitlines()) == 1
                    for i in survivors)
        corrupt = 0
        for path in sorted((out / "train_state").glob("ckpt-*.npz")):
            try:
                checkpoints.read(path)
            except checkpoints.UNREADABLE:
                corrupt += 1
        _, hung_again = ended(_workers(out, "--eager"))
        identical = not hung_again and all(
            np.allclose(np.load(out / f"weights{tag}.npz")[name], reference[name],
                        atol=1e-5, rtol=0)
            for tag in "01" for name in reference.files)
        counts["kill_points"] += 1
        counts["hangs"] += hung + hung_again
        counts["survivors"] += len(survivors)
        counts["named_stops"] += named
        counts["corrupt_files"] += corrupt
        counts["resumed_identically"] += identical
        details.append({"worker": target, "exit": codes, "seconds": seconds,
                        "resumed": identical, **(
                            {"signal": "SIGKILL", "inside_write": number}
                            if pause is None else
                            {"signal": number.name, "after_step": pause})})
        shutil.rmtree(out)
    return counts, details


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=("train", "resume", "data_prep"))
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--kill-at", default=None, help="EVENT:STAGE")
    parser.add_argument("--trace", action="store_true")
    args = parser.parse_args(argv)
    kill_at = kill_point(args.kill_at) if args.kill_at else None
    if args.command == "data_prep":
        install(kill_at, args.trace)
        print(json.dumps(data_prep(*args.paths)))
        return 0
    from tests.training.worker import lean_imports

    lean_imports()
    import tensorflow as tf

    tf.config.run_functions_eagerly(True)  # as tests/training/worker.py --eager
    install(kill_at, args.trace)
    if args.command == "train":
        training(args.paths[0])
        return 0
    for line in resume(args.paths):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    from nemot import console

    console.end_without_collecting()  # the process ends with it
    sys.exit(main())
