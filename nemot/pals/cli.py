"""``nemot pals ...``: train the rows of the seed's tables, report them beside the paper,
count PAL parameters.

``run`` and ``report`` are the multi-seed runner's (:mod:`nemot.runs`; ``nemot runs
--config configs/pals/table2.toml`` is the same run): runs land in
``<output_dir>/<variant>/seed<k>/`` with ``metrics.json``, the report gives mean ± SD, 95%
confidence intervals and Welch tests beside the paper's numbers.

Examples::

    nemot pals run --config configs/pals/table2.toml --seeds 0 1 2
    nemot pals run --config configs/pals/table4.toml --variants zero_sst_sts --set train.epochs=1
    nemot pals report runs/pals/table2
    nemot pals params
    nemot pals synthetic synthetic       # data, vocabulary and a tiny BERT, no downloads
    nemot pals run --config configs/pals/synthetic.toml
"""

from nemot import console


def add_parser(subparsers):
    """Add ``pals`` (``run``, ``report``, ``params``, ``synthetic``) to ``subparsers``."""
    parser = subparsers.add_parser(
        "pals", help="PALs (projected attention layers) and annealed sampling on "
                     "SST / Quora / STS (seed 002)", **console.describe(__doc__))
    commands = parser.add_subparsers(dest="pals_command", required=True)

    run = commands.add_parser("run", help="train every (variant, seed) of a config, then report")
    run.add_argument("--config", required=True, help="configs/pals/table*.toml")
    run.add_argument("--variants", nargs="+", help="only these variants (default: all)")
    run.add_argument("--seeds", nargs="+", type=int, help="override the config's seeds")
    run.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE",
                     help="overrides, e.g. train.epochs=1 data.dir=path model.backbone=dir")

    report = commands.add_parser("report", help="mean ± SD, 95%% CI and Welch tests over "
                                                "seeds, beside the paper")
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
    from nemot import runs

    runs.register("pals", "nemot.pals.experiment")
    if args.pals_command == "run":
        out = runs.run_config(args.config, seeds=args.seeds, variants=args.variants,
                              overrides=args.set)
        print(runs.write_report(out))
    elif args.pals_command == "report":
        print(runs.write_report(args.output_dir))
    elif args.pals_command == "synthetic":
        from nemot.data.synthetic.minbert import write_synthetic

        for path in write_synthetic(args.directory, seed=args.seed):
            print(path)
    else:
        print(parameter_table(args.tasks))
    return 0


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
    return console.standalone(add_parser, argv, command="pals")


if __name__ == "__main__":
    raise SystemExit(main())
