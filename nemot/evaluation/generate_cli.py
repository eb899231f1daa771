"""``nemot generate``: answer questions typed in the unified format with a checkpoint.

Each prompt is text in the unified format up to ``<sep>``, e.g.
``"<p1> The cat sat. <q> Where did the cat sit? <sep>"``; the auxiliary tokens
``[<cls>, <dec>, <task>]`` are added here. Prompts come from ``--prompt``
(repeatable) or a file with one prompt per line (``--input``, ``-`` for
standard input); one JSON line per prompt is printed. The task token defaults to
the run's ``data.task_token`` when the checkpoint sits in a run directory (see
``nemot evaluate``), else ``gqa``. Generation stops at ``</s>``,
``--max-new-tokens`` or the end of the model's window.
"""

import json
import os
import sys

import numpy as np

from nemot import console, vocab
from nemot.errors import ConfigError
from nemot.evaluation.options import check_checkpoint
from nemot.ranges import COUNT_OPTION


def add_parser(subparsers):
    parser = subparsers.add_parser("generate", help="greedy (or sampled) answers from a checkpoint",
                                   **console.describe(__doc__))
    parser.add_argument("--checkpoint", required=True, help="a .keras file written by model.save")
    parser.add_argument("--prompt", action="append", default=[], help="a prompt (repeatable)")
    parser.add_argument("--input", default=None, help="file with one prompt per line, - for stdin")
    parser.add_argument("--task-token", default=None,
                        help="output block / task token (default: the run's data.task_token, "
                             "else gqa)")
    parser.add_argument("--max-new-tokens", type=COUNT_OPTION, default=32,
                        help="most tokens generated per prompt (default 32)")
    parser.add_argument("--sampler", default=None,
                        help="a keras_hub sampler name (default greedy)")
    parser.add_argument("--tokenizer", default=None,
                        help="GPT-2 tokenizer directory (default: the offline GPT-2 tokenizer)")
    parser.set_defaults(func=main)


def read_prompts(args):
    prompts = list(args.prompt)
    if args.input:
        if args.input != "-" and not os.path.isfile(args.input):
            raise ConfigError(f"--input {args.input}: no such file (one prompt per line, - for "
                              "standard input)")
        handle = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
        with handle:
            prompts += [line.strip() for line in handle if line.strip()]
    if not prompts:
        raise ConfigError("nemot generate: no prompt; give --prompt TEXT or --input FILE")
    for i, prompt in enumerate(prompts):
        if not prompt.endswith("<sep>"):
            raise ConfigError(f"prompt {i + 1} ({prompt[:40]!r}...): expected it to end with "
                              "<sep>, the position where the answer starts")
    return prompts


def main(args):
    prompts = read_prompts(args)
    check_checkpoint(args.checkpoint)
    from nemot.data import Tokenizer
    from nemot.evaluation.evaluate import load_checkpoint, run_defaults
    from nemot.models.generation import generate, get_sampler

    try:  # None: the model's own compiled loop (greedy)
        sampler = None if args.sampler is None else get_sampler(args.sampler)
    except ValueError as error:
        raise ConfigError(f"--{error}") from None
    tokenizer = Tokenizer(args.tokenizer)
    task_token = args.task_token or run_defaults(args.checkpoint).get("task_token", "gqa")
    source = "--task-token" if args.task_token else "the run's data.task_token"
    try:
        aux = [vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(task_token)]
    except ValueError as error:
        raise ConfigError(f"{source} {task_token!r}: {error}") from None
    model = load_checkpoint(args.checkpoint)
    try:
        model.check_batch(np.array([aux + [vocab.PAD_ID]]))
    except ValueError as error:
        raise ConfigError(f"{source} {task_token!r}: {error}") from None
    ids = [aux + tokenizer.encode(prompt) for prompt in prompts]
    outputs = generate(model, ids, max_new_tokens=args.max_new_tokens, sampler=sampler)
    results = []
    for prompt, generated in zip(prompts, outputs):
        record = {"prompt": prompt, "answer": tokenizer.decode(generated).strip(), "ids": generated}
        print(json.dumps(record))
        results.append(record)
    return results
