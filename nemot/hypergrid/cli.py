"""``nemot hypergrid ...``: HyperGrid Transformers (Tay et al., seed 004): train the
paper's variants, compare with its tables, count parameters, write the synthetic
benchmark.

Examples::

    nemot hypergrid run --config configs/hypergrid/table4.toml --variants LG baseline
    nemot hypergrid report --config configs/hypergrid/table4.toml
    nemot hypergrid params --config configs/hypergrid/table4.toml
    nemot hypergrid synthetic --out data/hypergrid_synthetic
"""

import json

from nemot import console


def add_parser(subparsers):
    """Add ``hypergrid`` (``run``, ``report``, ``params``, ``synthetic``) to ``subparsers``."""
    parser = subparsers.add_parser(
        "hypergrid", help="HyperGrid Transformers (T5 + task-conditioned weight gating) on "
                          "GLUE + SuperGLUE", **console.describe(__doc__))
    commands = parser.add_subparsers(dest="hypergrid_command", required=True)

    def with_config(command):
        command.add_argument("--config", required=True, help="an experiment TOML "
                                                              "(configs/hypergrid/)")
        command.add_argument("--set", nargs="*", default=[], metavar="SECTION.KEY=VALUE",
                             help="override config values, e.g. train.steps=1000")
        return command

    run = with_config(commands.add_parser("run", help="train every (variant, seed) run into "
                                                      "<output_dir>/<variant>/seed<k>/"))
    run.add_argument("--variants", nargs="+", help="only these variants")
    run.add_argument("--seeds", nargs="+", type=int, help="override the config's seeds")
    with_config(commands.add_parser("report", help="finished runs beside the paper's table"))
    params = with_config(commands.add_parser(
        "params", help="parameters of every variant from the config's sizes (offline), the "
                       "added ones beside the paper's formula"))
    params.add_argument("--variants", nargs="+", help="only these variants")
    synthetic = commands.add_parser("synthetic", help="write the synthetic GLUE + SuperGLUE")
    synthetic.add_argument("--out", required=True)
    synthetic.add_argument("--train-size", type=int, default=256)
    synthetic.add_argument("--dev-size", type=int, default=64)
    synthetic.add_argument("--seed", type=int, default=0)
    parser.set_defaults(func=main_hypergrid)
    return parser


def main_hypergrid(args):
    """Run one parsed ``nemot hypergrid`` command; returns the exit status."""
    if args.hypergrid_command == "synthetic":
        from nemot.data.synthetic.glue import write_benchmark

        print(write_benchmark(args.out, args.train_size, args.dev_size, args.seed))
        return 0
    from nemot.experiments import protocol
    from nemot.hypergrid import experiment as hg
    from nemot.hypergrid.report import report

    experiment = hg.load(args.config, args.set)
    if args.hypergrid_command == "run":
        # The multi-seed runner (resumable, metrics.json per run), then the paper's layout.
        protocol.run_config(args.config, seeds=args.seeds or None, variants=args.variants,
                            overrides=args.set)
        print(report(experiment))
    elif args.hypergrid_command == "report":
        print(report(experiment))
    else:
        print(json.dumps(hg.parameter_counts(experiment, args.variants), indent=2,
                         ensure_ascii=False))
    return 0


def main(argv=None):
    """Stand-alone entry point: ``python -m nemot.hypergrid.cli run --config ...``."""
    return console.standalone(add_parser, argv, command="hypergrid")


if __name__ == "__main__":
    raise SystemExit(main())
