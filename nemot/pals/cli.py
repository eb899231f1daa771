"""``nemot pals ...``: train the rows of the PALs paper's tables (Stickland and Murray, BERT
and PALs), report them beside the paper, count PAL parameters.

``run`` is ``nemot runs`` for a PALs config, with the same flags (``nemot runs --config
configs/pals/table2.toml`` is the same run), and ``report`` is ``nemot runs report``: runs
land in ``<output_dir>/<variant>/seed<k>/`` with ``metrics.json``, the report gives mean,
SD, 95% confidence intervals and Welch tests beside the paper's numbers.

Examples::

    nemot pals run --config configs/pals/table2.toml --seed-list 0 1 2
    nemot pals run --config configs/pals/table4.toml --variants zero_sst_sts --set train.epochs=1
    nemot pals report runs/pals/table2
    nemot pals params
    nemot pals synthetic synthetic       # data, vocabulary and a tiny BERT, no downloads
    nemot pals run --config configs/pals/synthetic.toml
"""

from nemot import console
from nemot.ranges import COUNT_OPTION, SEED_OPTION


def add_parser(subparsers):
    """Add ``pals`` (``run``, ``report``, ``params``, ``synthetic``) to ``subparsers``."""
    from nemot.experiments.cli import add_paper_commands

    parser = subparsers.add_parser(
        "pals", help="PALs (projected attention layers) and annealed sampling on "
                     "SST / Quora / STS", **console.describe(__doc__))
    commands = parser.add_subparsers(dest="pals_command", required=True)
    add_paper_commands(commands, "pals")
    params = commands.add_parser("params", help="PAL parameters per task at BERT-base sizes")
    params.add_argument("--tasks", type=COUNT_OPTION, default=3, help="number of tasks (default 3)")

    synthetic = commands.add_parser(
        "synthetic", help="write synthetic minBERT-format data, a vocabulary and a tiny random "
                          "BERT (runs without downloads)")
    synthetic.add_argument("directory")
    synthetic.add_argument("--seed", type=SEED_OPTION, default=0)
    parser.set_defaults(func=main_pals)
    return parser


def main_pals(args):
    """Run one parsed ``nemot pals`` command; returns the exit status."""
    from nemot.experiments.cli import run_paper_command

    if run_paper_command(args.pals_command, args, "pals"):
        return 0
    if args.pals_command == "synthetic":
        from nemot.data.synthetic.minbert import write_synthetic

        for path in write_synthetic(args.directory, seed=args.seed):
            print(path)
    else:
        print(parameter_table(args.tasks))
    return 0


def parameter_table(num_tasks=3):
    """PAL parameters of the paper's settings at BERT-base sizes (the report's formula, which
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
