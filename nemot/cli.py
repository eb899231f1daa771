"""The ``nemot`` command line (``python -m nemot.cli`` is the same).

Each module of :data:`COMMAND_MODULES` has ``add_parser(subparsers)``, which adds its
command(s) with a ``func`` default taking the parsed arguments. Building the parser
imports no TensorFlow: command modules import what runs a command inside its handler,
so ``--help`` and argument errors are immediate. Errors and the quiet start:
:mod:`nemot.console`.
"""

import argparse
import importlib
import importlib.metadata
import json
import sys

from nemot import console, errors, recipes

COMMAND_MODULES = (
    "nemot.cli",
    "nemot.recipes",
    "nemot.training.cli",
    "nemot.evaluation.evaluate_cli",
    "nemot.evaluation.generate_cli",
    "nemot.experiments.cli",
    "nemot.ngt.cli",
    "nemot.pals.cli",
    "nemot.hypergrid.cli",
    "nemot.modact.cli",
)

DESCRIPTION = """\
NeMoT, the Neuromodulated Transformer, in Keras 3: pre-training on C4, fine-tuning
and evaluation on question-answering datasets (K. Knowles' MSc thesis, 2022), and the
related papers NGT, PALs, HyperGrid and modulated activations.

`nemot COMMAND --help` shows a command's options. A first run that needs no download
and a few minutes on a laptop: "Try it small, offline" in the README."""

EXAMPLES = """\
examples:
  nemot info --preset tiny
  nemot pretrain --config configs/pretrain.toml --data-dir data/c4-shards
  nemot finetune --config configs/race.toml --set train.batch_size=8
  nemot evaluate --checkpoint checkpoints/race/model_best_metric.keras \\
                 --dataset race --split dev --data-dir data/RACE --out results/race

"""


def version():
    """The installed package's version (its metadata), else the source tree's."""
    try:
        return importlib.metadata.version("nemot")
    except importlib.metadata.PackageNotFoundError:
        from nemot import __version__

        return __version__


def add_parser(subparsers):
    info = subparsers.add_parser(
        "info", help="print a configuration and its parameter breakdown per component",
        description="Print a model configuration (a preset, or the [model] table of a run "
                    "config) and its parameters per component, counted on a model built "
                    "with random weights.",
        epilog=console.ENV_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = info.add_mutually_exclusive_group()
    source.add_argument("--preset", default=None, help="thesis, small or tiny (default thesis)")
    source.add_argument("--config", default=None, type=recipes.config_argument,
                        help="a run config with a [model] table: a recipe name (nemot "
                             "recipes) or a TOML file")
    info.add_argument("--json", action="store_true", help="print JSON instead of a table")
    info.set_defaults(func=run_info)

    import data_prep.__main__ as data_prep

    prepare = subparsers.add_parser(
        "prepare-data", help="tokenize datasets or C4 into shards, or write small sample "
                             "data (the same as python -m data_prep)",
        **console.describe(data_prep.__doc__))
    data_prep.add_commands(prepare)


def run_info(args):
    import nemot

    source = args.config or f"--preset {args.preset or 'thesis'}"
    try:
        if args.config:
            config = nemot.NeMoTConfig.from_file(args.config)
        else:
            config = nemot.NeMoTConfig.preset(args.preset or "thesis")
    except (TypeError, ValueError) as error:  # a wrong key, value or TOML syntax
        message = str(error)
        raise errors.ConfigError(message if source in message else f"{source}: {message}") \
            from error
    counts = nemot.parameter_breakdown(nemot.build_model(config))
    if args.json:
        print(json.dumps({"config": config.to_dict(), "parameters": counts}, indent=2))
        return
    print("configuration")
    for key, value in config.to_dict().items():
        print(f"  {key:32s} {value}")
    print("\nparameters")
    for key, value in counts.items():
        if key == "output_blocks":
            for name, count in value.items():
                print(f"    output block {name:19s} {count:>13,}")
        else:
            print(f"  {key:32s} {value:>13,}")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="nemot", description=DESCRIPTION, epilog=EXAMPLES + console.ENV_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"nemot {version()}")
    parser.add_argument(console.DEBUG_FLAG, action="store_true",
                        help="show the full traceback of an error (anywhere on the line)")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                       title="commands")
    for name in COMMAND_MODULES:
        module = sys.modules[__name__] if name == __name__ else importlib.import_module(name)
        module.add_parser(subparsers)
    return parser


def main(argv=None):
    """The console script: run ``nemot`` with ``argv`` (default ``sys.argv[1:]``);
    returns the exit status."""
    return console.main(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
