"""Benchmarks (``python -m bench``): each ``bench_<name>.py`` and where results go."""

import os
import platform
import sys
import time
from pathlib import Path

# Where result files go (``python -m bench --results DIR`` sets another).
RESULTS = Path(__file__).resolve().parent / "results"
# When this process started benchmarking (``python -m bench`` imports this first): a
# time budget counts from here.
STARTED = time.monotonic()


def result_path(stem):
    """``<RESULTS>/<stem>.json``."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    return RESULTS / f"{stem}.json"


def record(name, result, started):
    """What a result file holds: the benchmark, the machine it ran on, its wall time since
    ``started`` (``time.time()``) and its result."""
    return {"benchmark": name,
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                        "python": sys.version.split()[0]},
            "wall_seconds": round(time.time() - started, 1),
            "result": result}
