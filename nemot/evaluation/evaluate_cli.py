"""The ``nemot evaluate`` command line; the evaluation itself is
:mod:`nemot.evaluation.evaluate`, loaded once the arguments and the checkpoint are
checked (so ``--help`` and their errors need no backend)."""

import argparse
import os

from nemot import console, errors, vocab
from nemot.data.qa import registry
from nemot.ranges import COUNT_OPTION
from nemot.evaluation.options import (DEFAULT_MAX_NEW_TOKENS, MC_MODES, REDUCTIONS, TASKS,
                                      check_checkpoint)

DESCRIPTION = """\
Evaluate a checkpoint (a NeMoT or GPT-2 baseline .keras file) on one split of a dataset:
multiple choice by the option token at <sep> (the thesis' label mode), by generated
option text or by option likelihood; generation scored with the dataset's metric
(F1, ROUGE-L, accuracy); the language-modelling sets by sliding-window perplexity.
Writes <dataset>_<split>_predictions.jsonl, _metrics.json and _report.md (beside the
thesis' numbers) into --out. A checkpoint in a run directory takes the run's
data.task_token, mode and mqa_mode as defaults. Details: docs/evaluation.md."""

EXAMPLE = """\
example:
  nemot evaluate --checkpoint checkpoints/race/model_best_metric.keras \\
                 --dataset race --split dev --data-dir data/RACE --out results/race

"""


def add_parser(subparsers):
    """Add the ``evaluate`` command to an ``argparse`` subparsers object."""
    parser = subparsers.add_parser(
        "evaluate", help="evaluate a checkpoint on a dataset split", description=DESCRIPTION,
        epilog=EXAMPLE + console.ENV_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True,
                        help="a .keras file written by model.save (model_best_metric.keras, ...)")
    parser.add_argument("--dataset", required=True, choices=registry.names())
    parser.add_argument("--split", required=True, help="a split of the dataset (e.g. dev, test)")
    parser.add_argument("--data-dir", help="directory with the raw files (default: download "
                                           "from the Hugging Face hub)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--task", choices=TASKS, help="default: the dataset's task")
    parser.add_argument("--task-token", help="output block / task token (default: the run's "
                        "data.task_token, else the dataset's task: mqa, gqa or lm; the thesis' "
                        "single-dataset runs used lm)")
    parser.add_argument("--mode", choices=vocab.MODES,
                        help="the <mode> token (default: the run's data.mode, else dec)")
    parser.add_argument("--max-new-tokens", type=COUNT_OPTION, default=DEFAULT_MAX_NEW_TOKENS,
                        help="generation limit (gqa)")
    parser.add_argument("--answer-room", type=COUNT_OPTION,
                        help="positions kept for the answer when a prompt must be cut (default: "
                             "1 in label mode, else min(32, max_text_length // 4))")
    parser.add_argument("--batch-size", type=COUNT_OPTION, default=8)
    parser.add_argument("--mc-mode", choices=MC_MODES,
                        help="multiple choice: argmax at <sep> (label), generated option text "
                             "(generate) or option likelihood (score); default: the run's "
                             "data.mqa_mode, else label")
    parser.add_argument("--score-reduction", choices=REDUCTIONS, default="mean",
                        help="--mc-mode score: mean or summed log-probability of the answer tokens")
    parser.add_argument("--sampler", default=None,
                        help="keras_hub sampler name for generation (default greedy, the thesis)")
    parser.add_argument("--window", type=COUNT_OPTION, nargs="+",
                        help="lm: stride(s) w of the sliding window (default: max_text_length; "
                             "thesis 768 and 32)")
    parser.add_argument("--limit", type=COUNT_OPTION,
                        help="evaluate the first N examples/documents only")
    parser.add_argument("--collapse-spaces", action="store_true",
                        help="lm: turn each run of spaces left by the clean-up into one space "
                             "(default: the original code's text, space for space)")
    parser.set_defaults(func=run)
    return parser


def run(args):
    """Check the checkpoint and the data directory, then evaluate
    (:func:`nemot.evaluation.evaluate.main`); returns its paths and scores."""
    check_checkpoint(args.checkpoint)
    if args.data_dir is not None and not os.path.isdir(args.data_dir):
        raise errors.ConfigError(f"--data-dir {args.data_dir}: no such directory (expected "
                                 f"the raw files of {args.dataset})")
    from nemot.evaluation import evaluate

    keys = ["--data-dir DIR (the dataset's raw files)"] if args.data_dir is None else []
    with errors.downloads(*keys):
        return evaluate.main(args)
