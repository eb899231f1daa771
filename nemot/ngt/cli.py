"""``nemot ngt ...``: the Neuromodulation Gated Transformer (seed 000): train its variants
on SuperGLUE, report the paper's table, count parameters.

Examples::

    nemot ngt train --config configs/ngt/table1.toml --tasks RTE CB --seeds 0 1 2
    nemot ngt report --config configs/ngt/table1.toml
    nemot ngt params --config configs/ngt/table1.toml --paper-sizes
"""

import json

from nemot import console
from nemot.data.superglue import TASKS


def add_parser(subparsers):
    """Add the ``ngt`` command (with ``train``, ``report``, ``params``) to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "ngt",
        help="Neuromodulation Gated Transformer (BERT + gating block) on SuperGLUE",
        **console.describe(__doc__),
    )
    commands = parser.add_subparsers(dest="ngt_command", required=True)

    train = commands.add_parser("train", help="fine-tune every (variant, task, seed) run of a config")
    train.add_argument("--config", required=True, help="an experiment TOML file (configs/ngt/)")
    train.add_argument("--tasks", nargs="+", choices=TASKS, help="only these tasks (default: all in the config)")
    train.add_argument("--variants", nargs="+", help="only these variants (names of [variants.<name>])")
    train.add_argument("--seeds", nargs="+", type=int, help="override the config's seeds")
    train.add_argument("--output-dir", help="override output_dir")
    train.add_argument("--data-dir", help="override data.dir ('hub' for the Hugging Face hub)")
    train.add_argument("--backbone", help="override model.backbone (preset name or directory)")
    train.add_argument("--verbose", type=int, default=1, help="keras fit verbosity (0, 1, 2)")

    report = commands.add_parser("report", help="aggregate finished runs into the paper's table")
    source = report.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", help="the experiment TOML (its output_dir and variant order)")
    source.add_argument("--runs", help="a directory of <variant>/<task>/seed*/metrics.jsonl")

    params = commands.add_parser("params", help="parameter count of every variant of a config (no weights loaded)")
    params.add_argument("--config", required=True)
    params.add_argument("--num-classes", type=int, default=1, help="head units (CB: 3)")
    params.add_argument(
        "--paper-sizes", action="store_true",
        help="use bert-large-cased sizes instead of model.backbone (nothing downloaded)",
    )

    parser.set_defaults(func=main_ngt)
    return parser


def _experiment(args):
    from nemot.ngt.train import Experiment

    experiment = Experiment.from_toml(args.config)
    overrides = {}
    if getattr(args, "output_dir", None):
        overrides["output_dir"] = args.output_dir
    if getattr(args, "data_dir", None):
        overrides["data_dir"] = None if args.data_dir == "hub" else args.data_dir
    if getattr(args, "backbone", None):
        overrides["backbone"] = args.backbone
    return experiment.replace(**overrides)


def main_ngt(args):
    """Run one parsed ``nemot ngt`` command; returns the process exit status."""
    from nemot.ngt import train as ngt_train

    if args.ngt_command == "train":
        experiment = _experiment(args)
        ngt_train.run_experiment(experiment, args.tasks, args.variants, args.seeds, verbose=args.verbose)
        print(ngt_train.write_report(experiment.output_dir, [v.name for v in experiment.variants]))
    elif args.ngt_command == "report":
        if args.config:
            experiment = _experiment(args)
            print(ngt_train.write_report(experiment.output_dir, [v.name for v in experiment.variants]))
        else:
            print(ngt_train.write_report(args.runs))
    elif args.ngt_command == "params":
        experiment = _experiment(args)
        if args.paper_sizes:
            from nemot.models.bert import BERT_LARGE_CASED

            experiment = experiment.replace(backbone=BERT_LARGE_CASED)
        print(json.dumps(ngt_train.parameter_counts(experiment, args.num_classes), indent=2))
    return 0


def main(argv=None):
    """Stand-alone entry point: ``python -m nemot.ngt.cli train --config ...``."""
    return console.standalone(add_parser, argv, command="ngt")


if __name__ == "__main__":
    raise SystemExit(main())
