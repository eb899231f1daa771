"""Benchmark runner: ``python -m bench [NAME ...]`` (``make bench``).

Every module ``bench/bench_<name>.py`` defines ``run() -> dict``; its result is
written to ``bench/results/<name>.json`` (``--results DIR``: to DIR) with the machine it
ran on. Results are
ratios measured side by side in one run, never timed tests.

A module may also take options: ``run(argv)``, given the arguments after the
benchmark's name (``python -m bench gpu --tiny``), and name its result file with
``result_name(result)`` (e.g. ``gpu_<device>_<backend>``).
"""

import argparse
import importlib
import inspect
import json
import time
from pathlib import Path

import bench

HERE = Path(__file__).resolve().parent


def available():
    return sorted(p.stem[len("bench_"):] for p in HERE.glob("bench_*.py"))


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default all: {available()})")
    parser.add_argument("--results", metavar="DIR", default=None,
                        help="where result files go (default bench/results)")
    args, options = parser.parse_known_args(argv)
    if args.results:
        bench.RESULTS = Path(args.results)
    names = args.names or available()
    unknown = sorted(set(names) - set(available()))
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; expected some of {available()}")
    if options and len(names) != 1:
        parser.error(f"options {options} go to one benchmark: name exactly one")
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        print(f"== bench {name}", flush=True)
        start = time.time()
        takes_options = bool(inspect.signature(module.run).parameters)
        if options and not takes_options:
            parser.error(f"bench {name} takes no options, got {options}")
        result = module.run(options) if takes_options else module.run()
        stem = module.result_name(result) if hasattr(module, "result_name") else name
        path = bench.result_path(stem)
        path.write_text(json.dumps(bench.record(name, result, start), indent=2) + "\n")
        print(json.dumps(result, indent=2))
        print(f"-> {path}")


if __name__ == "__main__":
    main()
