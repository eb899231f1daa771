"""``nemot pals ...``: train the rows of the seed's tables, report them beside the paper,
count PAL parameters.

Wire into ``nemot/cli.py`` by listing ``"nemot.pals.cli"`` in ``COMMAND_MODULES``.

Examples::

    nemot pals run --config configs/pals/table2.toml --seeds 0 1 2
    nemot pals run --config configs/pals/table4.toml --variants zero_sst_sts --set train.epochs=1
    nemot pals report runs/pals/table2
    nemot pals params
    nemot pals synthetic synthetic/      # data, vocabulary and a tiny BERT, no downloads

Runs land in ``<output_dir>/<variant>/seed<k>/`` with ``metrics.json``, the layout of the
multi-seed runner (``nemot runs``), which adds confidence intervals and Welch tests.
"""

import json
import statistics
import sys
from pathlib import Path

METRICS = "metrics.json"


def add_parser(subparsers):
    """Add ``pals`` (``run``, ``report``, ``params``) to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "pals", help="PALs (projected attention layers) and annealed sampling on "
                     "SST / Quora / STS (seed 002)", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="pals_command", required=True)

    run = commands.add_parser("run", help="train every (variant, seed) of a config, then report")
    run.add_argument("--config", required=True, help="configs/pals/table*.toml")
    run.add_argument("--variants", nargs="+", help="only these variants (default: all)")
    run.add_argument("--seeds", nargs="+", type=int, help="override the config's seeds")
    run.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE",
                     help="overrides, e.g. train.epochs=1 data.dir=path model.backbone=dir")

    report = commands.add_parser("report", help="mean ± SD over seeds beside the paper")
    report.add_argument("output_dir", help="a config's output_dir")

    params = commands.add_parser("params", help="PAL parameters per task at BERT-base sizes")
    params.add_argument("--tasks", type=int, default=3, help="number of tasks (default 3)")

    synthetic = commands.add_parser(
        "synthetic", help="write synthetic minBERT-format data, a vocabulary and a tiny random "
                          "BERT (runs without downloads)")
    synthetic.add_argument("directory")
    synthetic.add_argument("--seed", type=int, default=0)
    parser.set_defaults(func=main_pals)
    return parser


def main_pals(args):
    """Run one parsed ``nemot pals`` command; returns the exit status."""
    if args.pals_command == "run":
        from nemot.pals import experiment

        loaded = experiment.load(args.config, args.set)
        names = args.variants or experiment.variants(loaded)
        unknown = sorted(set(names) - set(loaded.variants))
        if unknown:
            raise SystemExit(f"{args.config}: variants {unknown}: expected some of "
                             f"{experiment.variants(loaded)}")
        for variant in names:
            for seed in args.seeds or loaded.seeds:
                run_dir = Path(loaded.output_dir, variant, f"seed{seed}")
                print(f"== {loaded.name} {variant} seed {seed} -> {run_dir}", flush=True)
                print(json.dumps(experiment.run_one(loaded, variant, seed, run_dir)))
        print(report(loaded.output_dir))
    elif args.pals_command == "report":
        print(report(args.output_dir))
    elif args.pals_command == "synthetic":
        from nemot.pals.synthetic import write_synthetic

        data, vocab, bert = write_synthetic(args.directory, seed=args.seed)
        print(f"--set data.dir='{data}' model.backbone='{bert}' model.tokenizer='{vocab}'")
    else:
        print(parameter_table(args.tasks))
    return 0


def report(output_dir):
    """A markdown table: each variant's metrics as mean ± SD over its seeds, the paper's
    number beside each (``score``: mean with (r + 1) / 2; ``average_raw_r``: raw r)."""
    from nemot.pals.experiment import PAPER

    rows = ["| variant | metric | ours (mean ± SD) | seeds | paper |", "|---|---|---|---|---|"]
    for variant_dir in sorted(p for p in Path(output_dir).iterdir() if p.is_dir()):
        runs = [json.loads(f.read_text()) for f in sorted(variant_dir.glob(f"seed*/{METRICS}"))]
        if not runs:
            continue
        paper = PAPER.get(variant_dir.name, {})
        for metric in runs[0]:
            values = [r[metric] for r in runs if metric in r]
            sd = statistics.stdev(values) if len(values) > 1 else 0.0
            expected = paper.get(metric)
            rows.append(f"| {variant_dir.name} | {metric} | {statistics.mean(values):.3f} ± "
                        f"{sd:.3f} | {len(values)} | "
                        f"{'' if expected is None else f'{expected:.3f}'} |")
    return "\n".join(rows)


def parameter_table(num_tasks=3):
    """PAL parameters of the paper's settings at BERT-base sizes (the seed's formula, which
    ``tests/modulation/test_pals.py`` checks against the built layers)."""
    from nemot.modulation.pals import pal_parameters
    from nemot.pals.model import PAL_PRESETS

    lines = ["| PALs | d_s | layers | per task | all tasks | of BERT-base (109,482,240) |",
             "|---|---|---|---|---|---|"]
    for name in ("half", "full"):
        preset = PAL_PRESETS[name]
        layers = 12 if preset["layers"] == "all" else 6
        per_task = pal_parameters(768, preset["hidden_size"], layers)
        lines.append(f"| {name} | {preset['hidden_size']} | {layers} | {per_task:,} | "
                     f"{num_tasks * per_task:,} | {num_tasks * per_task / 109_482_240:.1%} |")
    return "\n".join(lines)


def main(argv=None):
    """Stand-alone entry point: ``python -m nemot.pals.cli run --config ...``."""
    import argparse

    parser = argparse.ArgumentParser(prog="nemot")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["pals", *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
