"""``nemot ngt ...``: the Neuromodulation Gated Transformer (Knowles et al.): train its
variants on SuperGLUE and report them with the paper's table (``run`` is ``nemot runs`` for
an NGT config, with the same flags; ``report`` is ``nemot runs report``), count
parameters.

Examples::

    nemot ngt run --config configs/ngt/table1.toml --seeds 3
    nemot ngt run --config configs/ngt/table1.toml --seed-list 3 4 --set tasks.RTE.epochs=1
    nemot ngt report runs/ngt/table1
    nemot ngt params --config configs/ngt/table1.toml --paper-sizes
"""

import json

from nemot import console, recipes
from nemot.ranges import COUNT_OPTION


def add_parser(subparsers):
    """Add the ``ngt`` command (``run``, ``report``, ``params``) to an argparse subparsers
    object."""
    from nemot.experiments.cli import add_paper_commands

    parser = subparsers.add_parser(
        "ngt", help="Neuromodulation Gated Transformer (BERT + gating block) on SuperGLUE",
        **console.describe(__doc__))
    commands = parser.add_subparsers(dest="ngt_command", required=True)
    add_paper_commands(commands, "ngt")
    params = commands.add_parser("params", help="parameter count of every variant of a "
                                                "config (no weights loaded)")
    params.add_argument("--config", required=True, type=recipes.config_argument)
    params.add_argument("--num-classes", type=COUNT_OPTION, default=1, help="head units (CB: 3)")
    params.add_argument("--paper-sizes", action="store_true", help="use bert-large-cased "
                        "sizes instead of model.backbone (nothing downloaded)")
    parser.set_defaults(func=main_ngt)
    return parser


def main_ngt(args):
    """Run one parsed ``nemot ngt`` command; returns the process exit status."""
    import dataclasses

    from nemot.experiments.cli import run_paper_command
    from nemot.ngt import experiment as ngt

    if not run_paper_command(args.ngt_command, args, "ngt"):
        loaded = ngt.load(args.config)
        if args.paper_sizes:
            from nemot.hosts.bert import BERT_LARGE_CASED

            loaded = dataclasses.replace(loaded, model=dataclasses.replace(
                loaded.model, backbone=BERT_LARGE_CASED))
        print(json.dumps(ngt.parameter_counts(loaded, args.num_classes), indent=2))
    return 0


def main(argv=None):
    """Stand-alone entry point: ``python -m nemot.ngt.cli run --config ...``."""
    return console.standalone(add_parser, argv, command="ngt")


if __name__ == "__main__":
    raise SystemExit(main())
