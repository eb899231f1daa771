"""``nemot runs``: run a reproduction's config over seeds, and report the statistics.

A finished run is reused only while its recorded settings (its ``config.toml`` and code
version) equal this command's; otherwise the command stops and names them: ``--force``
reruns them, ``--keep-stale`` keeps them (reported apart, never pooled). Every paper's
``nemot <paper> run`` takes the same flags.

Examples::

    nemot runs --config configs/modact/names_lstm.toml              # the config's seeds
    nemot runs --config configs/modact/names_lstm.toml --seeds 30   # seeds 0..29
    nemot runs --config configs/modact/cifar10_cnn.toml --seed-list 3 4 --jobs 2 \\
        --set train.epochs=10 --set train.batch_size=64
    nemot runs report runs/modact/names_lstm
    nemot runs retime results/compare/minbert     # step times measured again, one by one
"""

import argparse

from nemot import console, recipes
from nemot.errors import UserError
from nemot.ranges import COUNT_OPTION, SEED_OPTION


class SeedCount(argparse.Action):
    """``--seeds N``: seeds 0..N-1. Takes the values a mistaken ``--seeds 0 1 2`` gives, to
    answer with ``--seed-list`` rather than an unrelated parsing error."""

    one_value = True  # console.HelpFormatter shows "--seeds N"

    def __call__(self, parser, namespace, values, option_string=None):
        if len(values) != 1:
            parser.error(f"{option_string} N runs seeds 0..N-1 and takes one number; for the "
                         f"seeds {' '.join(map(str, values))} give --seed-list "
                         f"{' '.join(map(str, values))}")
        if values[0] < 1:
            parser.error(f"{option_string} {values[0]}: expected at least 1 (seeds 0..N-1)")
        setattr(namespace, self.dest, values[0])


def add_run_flags(parser, config_help="an experiment TOML with a top-level `reproduction`",
                  config_required=False):
    """The flags of a run of an experiment config, the same for ``nemot runs`` and every
    paper's ``run``: ``--config``, ``--seeds N`` or ``--seed-list S ...``, ``--variants``,
    ``--set KEY=VALUE`` (repeatable), ``--jobs``, ``--force``, ``--keep-stale``."""
    parser.add_argument("--config", required=config_required, type=recipes.config_argument,
                        help=config_help)
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--seeds", type=SEED_OPTION, nargs="+", action=SeedCount, metavar="N",
                       help="seeds 0..N-1 (default: the config's `seeds`)")
    seeds.add_argument("--seed-list", type=SEED_OPTION, nargs="+", metavar="S", help="these seeds")
    parser.add_argument("--variants", nargs="+", help="only these variants (default: all)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override a config value, e.g. "
                                                  "train.epochs=1 (repeat --set for each)")
    parser.add_argument("--jobs", type=COUNT_OPTION, default=1,
                        help="1: one run after the other in this process (default); N: up to "
                             "N runs at a time, each in its own process")
    parser.add_argument("--force", action="store_true",
                        help="rerun finished runs (each from the start)")
    parser.add_argument("--keep-stale", action="store_true",
                        help="reuse finished runs whose recorded settings differ from this "
                             "command's (the report shows them apart)")


def add_parser(subparsers):
    """Add ``runs`` (and ``runs report``) to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "runs", help="run a reproduction config over seeds; `runs report DIR` for statistics",
        allow_abbrev=False, **console.describe(__doc__))
    add_run_flags(parser)
    commands = parser.add_subparsers(dest="runs_command")
    report = commands.add_parser("report", help="mean, SD, 95%% CI and Welch's t-test of "
                                 "the finished runs in DIR, beside the paper's numbers")
    report.add_argument("dir", help="an output_dir written by `nemot runs --config`")
    retime = commands.add_parser(
        "retime", help="measure step_time_ratio again for the finished runs in DIR, one at "
                       "a time, then report (experiments that time their runs: compare)")
    retime.add_argument("dir", help="an output_dir written by `nemot runs --config`")
    retime.add_argument("--variants", nargs="+", dest="retime_variants",
                        help="only these variants")
    one = commands.add_parser("one", help="one run (what --jobs starts in each process)")
    one.add_argument("--config", required=True, dest="one_config",
                     type=recipes.config_argument)
    one.add_argument("--variant", required=True)
    one.add_argument("--seed", type=SEED_OPTION, required=True)
    one.add_argument("--set", dest="one_overrides", action="append", default=[])
    parser.set_defaults(func=main_runs, runs_parser=parser)
    return parser


def main_runs(args):
    """Run one parsed ``nemot runs`` command; returns the exit status."""
    from nemot.experiments import protocol as runs
    from nemot.experiments.report import write_report

    if args.runs_command == "report":
        print(write_report(args.dir))
        return 0
    if args.runs_command == "retime":
        manifest, _ = runs.collect(args.dir)
        module = runs.experiment_module(manifest["reproduction"], source=args.dir)
        if not hasattr(module, "retime"):
            raise UserError(f"{args.dir}: {manifest['reproduction']} runs measure no step "
                            "time; `nemot runs retime` is for experiments that do (compare)")
        module.retime(args.dir, manifest, args.retime_variants)
        print(write_report(args.dir))
        return 0
    if args.runs_command == "one":
        module, experiment = runs.load(args.one_config, args.one_overrides)
        runs.run_and_record(module, experiment, args.variant, args.seed)
        return 0
    if not args.config:
        args.runs_parser.error("give --config FILE (or `runs report DIR`)")
    return run_configured(args)


def run_configured(args, reproduction=None):
    """Run the config of parsed :func:`add_run_flags` arguments, then print the report;
    ``reproduction``: the config must be one of it (a paper's ``run``)."""
    from nemot.experiments import protocol
    from nemot.experiments.report import write_report

    if reproduction is not None and protocol.reproduction_of(args.config) != reproduction:
        raise UserError(f"{args.config}: reproduction = "
                        f"{protocol.reproduction_of(args.config)!r}: expected a "
                        f"{reproduction} config; run it with `nemot runs --config "
                        f"{args.config}`")
    seeds = list(range(args.seeds)) if args.seeds is not None else args.seed_list
    out = protocol.run_config(args.config, seeds=seeds, variants=args.variants,
                              overrides=args.overrides, jobs=args.jobs, force=args.force,
                              keep_stale=args.keep_stale)
    print(write_report(out))
    return 0


def add_paper_commands(commands, paper):
    """Add a paper's ``run`` and ``report`` to the subparsers ``commands`` of ``nemot
    <paper>``: ``nemot <paper> run`` is ``nemot runs`` for a config of that paper, with
    the same flags (:func:`add_run_flags`), and ``nemot <paper> report DIR`` is ``nemot
    runs report DIR``; :func:`run_paper_command` runs them."""
    run = commands.add_parser(
        "run", help="train every (variant, seed) of a config not finished yet into "
                    "<output_dir>/<variant>/seed<k>/, then report (as `nemot runs`)",
        formatter_class=console.HelpFormatter, allow_abbrev=False)
    add_run_flags(run, config_help=f"an experiment TOML (configs/{paper}/)",
                  config_required=True)
    report = commands.add_parser("report", help="mean, SD, 95%% CI and Welch tests over "
                                 "seeds beside the paper's numbers, and the figure (as "
                                 "`nemot runs report`)")
    report.add_argument("output_dir", help="a config's output_dir")
    return run, report


def run_paper_command(command, args, paper):
    """Run ``run`` or ``report`` of :func:`add_paper_commands`; False for another command."""
    from nemot.experiments.report import write_report

    if command == "run":
        run_configured(args, reproduction=paper)
    elif command == "report":
        print(write_report(args.output_dir))
    return command in ("run", "report")


def main(argv=None):
    """Stand-alone entry point: ``python -m nemot.experiments.cli --config ...``."""
    return console.standalone(add_parser, argv, command="runs")


if __name__ == "__main__":
    raise SystemExit(main())
