"""``nemot hypergrid ...``: HyperGrid Transformers (Tay et al.): train the paper's variants
and report them beside its tables (``run`` is ``nemot runs`` for a HyperGrid config, with
the same flags; ``report`` is ``nemot runs report``), count parameters, write the
synthetic benchmark.

Examples::

    nemot hypergrid run --config configs/hypergrid/table4.toml --variants LG baseline
    nemot hypergrid run --config configs/hypergrid/table4.toml --variants baseline --seeds 4
    nemot hypergrid report runs/hypergrid/table4
    nemot hypergrid params --config configs/hypergrid/table4.toml
    nemot hypergrid synthetic --out data/hypergrid_synthetic
"""

import json

from nemot import console, recipes
from nemot.ranges import COUNT_OPTION, SEED_OPTION


def add_parser(subparsers):
    """Add ``hypergrid`` (``run``, ``report``, ``params``, ``synthetic``) to ``subparsers``."""
    from nemot.experiments.cli import add_paper_commands

    parser = subparsers.add_parser(
        "hypergrid", help="HyperGrid Transformers (T5 + task-conditioned weight gating) on "
                          "GLUE + SuperGLUE", **console.describe(__doc__))
    commands = parser.add_subparsers(dest="hypergrid_command", required=True)
    add_paper_commands(commands, "hypergrid")
    params = commands.add_parser(
        "params", help="parameters of every variant from the config's sizes (offline), the "
                       "added ones beside the paper's formula")
    params.add_argument("--config", required=True, type=recipes.config_argument, help="an experiment TOML "
                                                         "(configs/hypergrid/)")
    params.add_argument("--set", dest="overrides", action="append", default=[],
                        metavar="KEY=VALUE", help="override a config value, e.g. "
                                                  "hypergrid.grid=[16,64] (repeat --set for "
                                                  "each)")
    params.add_argument("--variants", nargs="+", help="only these variants")
    synthetic = commands.add_parser("synthetic", help="write the synthetic GLUE + SuperGLUE")
    synthetic.add_argument("--out", required=True)
    synthetic.add_argument("--train-size", type=COUNT_OPTION, default=256)
    synthetic.add_argument("--dev-size", type=COUNT_OPTION, default=64)
    synthetic.add_argument("--seed", type=SEED_OPTION, default=0)
    parser.set_defaults(func=main_hypergrid)
    return parser


def main_hypergrid(args):
    """Run one parsed ``nemot hypergrid`` command; returns the exit status."""
    from nemot.experiments.cli import run_paper_command

    if run_paper_command(args.hypergrid_command, args, "hypergrid"):
        return 0
    if args.hypergrid_command == "synthetic":
        from nemot.data.synthetic.glue import write_benchmark

        print(write_benchmark(args.out, args.train_size, args.dev_size, args.seed))
        return 0
    from nemot.hypergrid import experiment as hg

    print(json.dumps(hg.parameter_counts(hg.load(args.config, args.overrides), args.variants),
                     indent=2, ensure_ascii=False))
    return 0


def main(argv=None):
    """Stand-alone entry point: ``python -m nemot.hypergrid.cli run --config ...``."""
    return console.standalone(add_parser, argv, command="hypergrid")


if __name__ == "__main__":
    raise SystemExit(main())
