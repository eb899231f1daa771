"""Fuzz every reader: ``python -m bench fuzz [--examples N] [--readers a,b] [--seed S]``.

Each reader of tests/data/fuzz.py starts from its own small valid file and reads ``N``
mutations of it (the suite's mutations, drawn from a seeded ``random.Random``, which costs
a fraction of hypothesis' time per input); the result counts the outcomes by kind: ``read``
(a valid result), ``named_error`` (the reader's one-line error naming the file),
``unnamed_error`` (a user error that does not name the file), ``unexpected`` (any other
exception, or an invalid result) and ``hang`` (a read over ``HANG_SECONDS``), with the
time each reader took. The suite runs the same readers with a few examples each
(tests/data/test_fuzz.py).

It also measures what checking a C4 shard's SHA-256 costs beside reading it
(``checksum``): the reason shards are hashed as they are opened rather than all before a
run starts.
"""

import argparse
import hashlib
import multiprocessing
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def _checksum_cost(directory, tokens=50_000_000, repeats=3):
    """Seconds to read a C4 shard of ``tokens`` token ids with ``np.load`` and to hash it,
    side by side (best of ``repeats``)."""
    from nemot.data import shards

    rng = np.random.default_rng(0)
    documents = np.split(rng.integers(0, 50257, tokens, dtype=np.uint16),
                         np.arange(500, tokens, 500))
    path = Path(directory) / "c4-train.00000-of-01024.npz"
    shards.write_c4_shard(path, documents)
    read, digest = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        with np.load(path) as z:
            z["ids"], z["offsets"]
        read.append(time.perf_counter() - start)
        start = time.perf_counter()
        with open(path, "rb") as f:
            hashlib.sha256(f.read()).hexdigest()
        digest.append(time.perf_counter() - start)
    size = path.stat().st_size
    return {"shard_megabytes": round(size / 1e6, 1), "read_seconds": round(min(read), 3),
            "sha256_seconds": round(min(digest), 3),
            "sha256_megabytes_per_second": round(size / 1e6 / min(digest)),
            "sha256_over_read": round(min(digest) / min(read), 2)}


def _fuzz_one(job):
    name, root, examples, seed = job
    from tests.data import fuzz

    result = fuzz.run_target(fuzz.TARGETS[name], root, examples, seed)
    print(name, result["outcomes"], f"{result['seconds']} s", flush=True)
    return name, result


def run(argv=()):
    parser = argparse.ArgumentParser(prog="python -m bench fuzz")
    parser.add_argument("--examples", type=int, default=1000, help="inputs per reader")
    parser.add_argument("--readers", default="", help="comma-separated names (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="processes, one reader each at a "
                                                            "time")
    args = parser.parse_args(list(argv))

    from tests.data import fuzz

    names = [n for n in args.readers.split(",") if n] or list(fuzz.TARGETS)
    unknown = sorted(set(names) - set(fuzz.TARGETS))
    if unknown:
        parser.error(f"unknown readers {unknown}; expected some of {sorted(fuzz.TARGETS)}")
    # In memory where the machine has it: a reader's input is written once per example.
    memory = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(dir=memory) as root:
        jobs = [(name, root, args.examples, args.seed) for name in names]
        if args.jobs > 1:
            with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
                done = dict(pool.imap_unordered(_fuzz_one, jobs))
        else:
            done = dict(map(_fuzz_one, jobs))
        readers = {name: done[name] for name in names}
        checksum = _checksum_cost(root)
    totals = {kind: sum(r["outcomes"][kind] for r in readers.values()) for kind in fuzz.OUTCOMES}
    return {"examples_per_reader": args.examples, "seed": args.seed,
            "hang_seconds": fuzz.HANG_SECONDS, "readers": readers,
            "total": {"inputs": sum(r["inputs"] for r in readers.values()), **totals,
                      "seconds": round(sum(r["seconds"] for r in readers.values()), 1)},
            "checksum": checksum}
