"""Benchmark runner: ``python -m bench [NAME ...]`` (``make bench``).

Every module ``bench/bench_<name>.py`` defines ``run() -> dict``; its result is
written to ``bench/results/<name>.json`` with the machine it ran on. Results are
ratios measured side by side in one run, never timed tests.

A module may also take options: ``run(argv)``, given the arguments after the
benchmark's name (``python -m bench gpu --tiny``), and name its result file with
``result_name(result)`` (e.g. ``gpu_<device>_<backend>``).
"""

import argparse
import importlib
import inspect
import json
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def available():
    return sorted(p.stem[len("bench_"):] for p in HERE.glob("bench_*.py"))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default all: {available()})")
    args, options = parser.parse_known_args(argv)
    names = args.names or available()
    unknown = sorted(set(names) - set(available()))
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; expected some of {available()}")
    if options and len(names) != 1:
        parser.error(f"options {options} go to one benchmark: name exactly one")
    out_dir = HERE / "results"
    out_dir.mkdir(exist_ok=True)
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        print(f"== bench {name}", flush=True)
        start = time.time()
        takes_options = bool(inspect.signature(module.run).parameters)
        if options and not takes_options:
            parser.error(f"bench {name} takes no options, got {options}")
        result = module.run(options) if takes_options else module.run()
        record = {
            "benchmark": name,
            "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                        "python": sys.version.split()[0]},
            "wall_seconds": round(time.time() - start, 1),
            "result": result,
        }
        stem = module.result_name(result) if hasattr(module, "result_name") else name
        path = out_dir / f"{stem}.json"
        path.write_text(json.dumps(record, indent=2) + "\n")
        print(json.dumps(result, indent=2))
        print(f"-> {path}")


if __name__ == "__main__":
    main()
