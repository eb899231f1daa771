"""Kill runs inside their writes and count what the next command finds:
``python -m bench faults [--jobs J] [--only train|data_prep]``.

tests/faults.py numbers every write of the tiny training run (its run config, .keras
models, best.json, results.csv and training checkpoints) and of a ``data_prep c4`` run
(its shards and their index), and kills the process with SIGKILL at each write, at three
moments: the new file half written, written but not renamed, renamed. After each kill the
next command runs in the same directory (training resumes; data_prep finishes), and the
result counts: kill points tried, processes killed there, files found corrupt after the
kill (the next command could not read them), runs resumed to the uninterrupted run's
weights (and best.json, and the validation columns of results.csv), runs that stopped
with a named error, and crashes. The suite tries a few of these points
(tests/training/test_faults.py).

``multi_worker``: two MultiWorkerMirroredStrategy workers on local ports, each in turn sent
SIGTERM or SIGKILL after step 1 and after step 3, and the chief killed inside its write of
the checkpoint of step 2 at each of the three moments, then both started again
(:func:`tests.faults.multi_worker_sweep`): hangs, survivors stopped with one named line,
unreadable checkpoints, pairs resumed to the uninterrupted weights. ``--only`` keeps the
other sections of an existing ``faults.json``.
"""

import argparse
import json
import tempfile
import time
from pathlib import Path


def run(argv=()):
    parser = argparse.ArgumentParser(prog="python -m bench faults")
    parser.add_argument("--jobs", type=int, default=2, help="processes at a time")
    parser.add_argument("--only", choices=("train", "data_prep", "multi_worker"), default=None)
    args = parser.parse_args(list(argv))

    import bench
    from tests import faults
    from tests.data import fixtures

    kept = bench.result_path("faults")
    result = json.loads(kept.read_text())["result"] if args.only and kept.exists() else {}
    with tempfile.TemporaryDirectory() as root:
        if args.only in (None, "train"):
            start = time.perf_counter()
            counts, details = faults.training_sweep(Path(root, "train"), jobs=args.jobs)
            result["training"] = {**counts, "seconds": round(time.perf_counter() - start),
                                  "points": details}
            print("training", counts, flush=True)
        if args.only in (None, "data_prep"):
            start = time.perf_counter()
            fixtures.write_c4(Path(root, "raw"), n_train=3)
            counts = faults.data_prep_sweep(Path(root, "data_prep"), Path(root, "raw"),
                                            jobs=args.jobs)
            result["data_prep"] = {**counts, "seconds": round(time.perf_counter() - start)}
            print("data_prep", counts, flush=True)
        if args.only in (None, "multi_worker"):
            start = time.perf_counter()
            counts, details = faults.multi_worker_sweep(Path(root, "multi_worker"))
            result["multi_worker"] = {**counts, "seconds": round(time.perf_counter() - start),
                                      "points": details}
            print("multi_worker", counts, flush=True)
    return result
