"""``nemot evaluate``: a checkpoint on one dataset split -> predictions, metrics and a thesis-style table.

Question answering (every dataset of ``nemot.data.qa.registry`` except the LM sets):

- multiple choice (``mqa``), ``--mc-mode label`` (the thesis): the argmax token
  at ``<sep>``, compared with the gold ``(k)``; ``--mc-mode generate``: the
  option's text generated after ``<sep>`` (a run trained with
  ``data.mqa_mode = "generate"``), compared with the gold option's text;
  ``--mc-mode score``: every option appended as the answer and scored by its
  log-likelihood (``--score-reduction mean|sum``), the best one predicted as ``(k)``;
- generation (``gqa``): decoding until ``</s>``, ``--max-new-tokens`` or the end
  of the model's window (greedy by default, ``--sampler`` picks a
  ``keras_hub.samplers`` one), the decoded answer scored with the dataset's
  metric (F1, ROUGE-L, accuracy). Decoding and scoring are
  :mod:`nemot.evaluation.scoring`'s, the same as the validation metric of training.

Prompts are cut only when the prompt and the room left for the answer
(``--answer-room``; default: 1 token in label mode, else
``min(32, max_text_length // 4)``, the formatter's) do not fit the model's
window, and then as training cut its examples: the first token (``<p1>``) and
the prompt's end are kept, the passage loses its start. A prompt that fits is
decoded whole.

Defaults from the run: when the checkpoint sits in a run directory (beside the
``run_config.toml`` that training wrote), its ``[data]`` table's ``task_token``,
``mode`` and ``mqa_mode`` are the defaults of ``--task-token``, ``--mode`` and
``--mc-mode``; flags given on the command line override them.

A model with the highlighting reading strategy gets the POS tags of its inputs
from NLTK's perceptron (``nemot.data.pos_tags``; its data are downloaded once with
``python -m nltk.downloader averaged_perceptron_tagger_eng``), tagging each word
in context or alone as its config says (``compat_tag_words_alone``). It answers
multiple choice in label or score mode; generation and perplexity refuse it.

Writes ``<dataset>_<split>_predictions.jsonl``, ``_metrics.json`` and
``_report.md`` into ``--out`` (``nemot.evaluation.report.write_report``), and prints
the report's table (our scores in the thesis' units beside its rows, with the number
of questions scored), then one JSON line of the scores as fractions. ROUGE-L
datasets (NarrativeQA, DROP) are scored twice: nemot's default ``rouge_l``
and ``rouge_l_thesis``, the implementation whose numbers the thesis printed.

Zero-shot language modelling (``--task lm``, the default for wikitext2,
wikitext103, ptb, lambada): sliding-window perplexity with segments of the
model's ``max_text_length`` advancing by each ``--window`` (thesis: 768 and
32), written as ``lm_perplexity.json`` / ``.md`` beside thesis Table 3.1.

Example::

    nemot evaluate --checkpoint runs/race/model_best_metric.keras \\
        --dataset race --split dev --data-dir data/RACE --out runs/race/eval
"""

import json
import sys
import tomllib
from pathlib import Path

import numpy as np

from nemot import files, vocab
from nemot.data import Formatter, Tokenizer
from nemot.data.pos_tags import needs_pos_tags, pos_tagger_for
from nemot.data.qa import registry
from nemot.data.qa.format import MQA_MODES
from nemot.errors import ConfigError
from nemot.evaluation import choices, scoring
from nemot.evaluation.options import DEFAULT_MAX_NEW_TOKENS, MC_MODES, TASKS, check_checkpoint
from nemot.evaluation.perplexity import perplexity
from nemot.evaluation.report import write_lm_report, write_report
from nemot.models import generation as decoding

MODES = vocab.MODES
RUN_CONFIG = "run_config.toml"


def load_checkpoint(path):
    """A model saved with ``model.save`` (``model_best_metric.keras``, ...); no optimizer state."""
    import nemot

    check_checkpoint(path)
    return nemot.load_model(path, compile=False)


def _check_task(info, task):
    task = task or info.task
    if task not in TASKS:
        raise ConfigError(f"--task {task!r}: expected one of {TASKS}")
    if task != info.task:
        raise ConfigError(f"--task {task}: dataset {info.name} is a {info.task} dataset")
    return task


def _block_of(model, task_token, source="--task-token"):
    if task_token not in model.config.output_blocks:
        raise ConfigError(f"{source} {task_token!r}: the model has no output block for it; "
                         f"its blocks are {list(model.config.output_blocks)}")
    return task_token


def _records(examples, formatted, predictions, extra=None):
    records = []
    for i, (example, item, prediction) in enumerate(zip(examples, formatted, predictions)):
        if not item.golds:
            raise ConfigError(f"{example.dataset} example {example.id!r}: no gold answer (an "
                             "unlabelled split cannot be scored)")
        record = {"id": example.id, "prediction": prediction, "golds": list(item.golds)}
        if example.subset is not None:
            record["subset"] = example.subset
        if extra is not None:
            record.update(extra[i])
        records.append(record)
    return records


def evaluate_qa(model, examples, dataset, split, out_dir, task_token, metric, tokenizer=None,
                max_new_tokens=DEFAULT_MAX_NEW_TOKENS, batch_size=8, mc_mode="label",
                score_reduction="mean", sampler=None, model_name="NeMoT (this run)",
                pos_tagger=None, mode="dec", answer_room=None):
    """Answer ``examples`` (``QAExample``) and write the report files; returns ``write_report``'s dict.

    Args:
        model: a NeMoT (or GPT-2 baseline) taking ``{"token_ids"}``.
        examples: one dataset's examples (not expanded: each keeps all its golds).
        dataset, split: names for the files and the thesis rows.
        out_dir: output folder.
        task_token: output block name put at auxiliary position 2.
        metric: a ``nemot.evaluation.metrics`` name, or a list (the first the primary).
        tokenizer: default ``Tokenizer()``.
        max_new_tokens: generation limit (the window's end also stops generation).
        batch_size: prompts per model call.
        mc_mode: ``"label"``, ``"generate"`` or ``"score"`` for multiple choice.
        score_reduction: ``"mean"`` or ``"sum"`` (``mc_mode="score"``).
        sampler: ``keras_hub.samplers`` sampler or name for generation; ``None`` = greedy.
        model_name: label of our row in the table.
        pos_tagger: tags the inputs of a highlighting model (default:
            ``pos_tagger_for(model.config)``, NLTK's perceptron); unused otherwise.
        mode: the ``<mode>`` token, ``"dec"`` or ``"enc"`` (generation needs ``"dec"``).
        answer_room: positions kept free for the answer when deciding whether a
            prompt must be cut (default: the formatter's, 1 in label mode, else
            ``min(32, max_text_length // 4)``).
    """
    if mc_mode not in MC_MODES:
        raise ConfigError(f"mc_mode={mc_mode!r}: expected one of {MC_MODES}")
    tokenizer = tokenizer or Tokenizer()
    tasks = {example.task for example in examples}
    if len(tasks) != 1:
        raise ConfigError(f"{dataset}: expected examples of one task, got {sorted(tasks)}")
    task = tasks.pop()
    label_mode = task == "mqa" and mc_mode == "label"
    if task == "gqa" or mc_mode == "generate":
        decoding.check_generation_supported(model)
    if pos_tagger is None:
        pos_tagger = pos_tagger_for(model.config, tokenizer=tokenizer)
    formatter = Formatter(tokenizer, max_text_length=model.config.max_text_length, mode=mode,
                          task_token=task_token,
                          mqa_mode="generate" if mc_mode == "generate" else "label",
                          max_answer_length=answer_room)
    formatted = formatter.format_batch(examples)
    extra = None
    if task == "mqa" and mc_mode == "score":
        scores = choices.score_options(model, formatter, examples, score_reduction, batch_size,
                                       pos_tagger)
        predictions = [f"({int(np.argmax(s)) + 1})" for s in scores]
        extra = [{"option_scores": s} for s in scores]
    else:
        predictions = scoring.decode_predictions(
            model, formatted, label_mode=label_mode, tokenizer=tokenizer,
            max_new_tokens=max_new_tokens, batch_size=batch_size, sampler=sampler,
            pos_tagger=pos_tagger)
    records = _records(examples, formatted, predictions, extra)
    return write_report(out_dir, records, metric, dataset, split, model_name=model_name)


def evaluate_lm(model, documents, dataset, out_dir, windows, tokenizer=None, batch_size=8,
                task_token="lm", model_name="NeMoT (this run)"):
    """Perplexity of ``documents`` (strings) at every window (stride) in ``windows``.

    Segments are ``model.config.max_text_length`` tokens; returns
    ``write_lm_report``'s paths plus ``"results"``: ``{window: PerplexityResult}``.
    """
    if needs_pos_tags(model.config):
        raise ConfigError("perplexity of a model with the highlighting reading strategy is not "
                         "supported (its inputs need POS tags); evaluate it on a QA dataset")
    tokenizer = tokenizer or Tokenizer()
    ids = tokenizer.encode_batch(list(documents))
    aux = ("<cls>", "<dec>", vocab.task_token(task_token))
    size = model.config.max_text_length
    results = {}
    for window in windows:
        if not 1 <= window <= size:
            raise ConfigError(f"--window {window}: expected 1..{size} (the segment length "
                             "is the model's max_text_length)")
        results[window] = perplexity(model, ids, window=size, stride=window,
                                     batch_size=batch_size, aux_tokens=aux)
    paths = write_lm_report(out_dir, {(dataset, w): r for w, r in results.items()}, model_name)
    return dict(paths, results=results)


def run_defaults(checkpoint):
    """``{"task_token", "mode", "mqa_mode"}`` from the ``run_config.toml`` beside ``checkpoint``.

    Training writes the resolved run config into the run directory, next to its
    ``model_*.keras`` files; keys the run left unset (``task_token`` of a run that
    used each example's own ``mqa``/``gqa``) are absent. ``{}`` when there is no
    such file (a checkpoint outside a run directory).
    """
    path = Path(checkpoint).parent / RUN_CONFIG
    if not path.is_file():
        return {}
    text = files.read_text(path, ConfigError)
    try:
        data = tomllib.loads(text).get("data", {})
    except ValueError as error:  # TOMLDecodeError, or a number too long to convert
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: [data] must be a table")
    defaults = {key: data[key] for key in ("task_token", "mode", "mqa_mode") if key in data}
    for key, allowed in (("mode", MODES), ("mqa_mode", MQA_MODES)):
        if key in defaults and defaults[key] not in allowed:
            raise ConfigError(f"{path}: [data] {key} = {defaults[key]!r}: expected one of {allowed}")
    return defaults


def main(args):
    """Handler of ``nemot evaluate``; returns the written paths and the scores."""
    info = registry.get(args.dataset)
    task = _check_task(info, args.task)
    run = run_defaults(args.checkpoint)
    # Only what the run decides: a flag given on the command line wins over its key.
    flags = {"task_token": args.task_token, "mode": args.mode, "mqa_mode": args.mc_mode}
    taken = {key: value for key, value in run.items() if flags[key] is None}
    if taken:
        print(f"nemot evaluate: defaults from {Path(args.checkpoint).parent / RUN_CONFIG}: "
              + ", ".join(f"{key} = {value}" for key, value in taken.items()), file=sys.stderr)
    model = load_checkpoint(args.checkpoint)
    if args.task_token is None and "task_token" in run:
        task_token = _block_of(model, run["task_token"],
                               f"{Path(args.checkpoint).parent / RUN_CONFIG}: [data] task_token")
    else:
        task_token = _block_of(model, args.task_token or task)
    mode = args.mode or run.get("mode", "dec")
    options = {}
    if args.collapse_spaces:
        if task != "lm":
            raise ConfigError(f"--collapse-spaces: dataset {args.dataset} is a {task} dataset; "
                             "the option is for the language-modelling sets")
        options["collapse_spaces"] = True
    items = registry.load_examples(args.dataset, args.split, args.data_dir, expand=False,
                                   **options)
    if args.limit is not None:
        items = items[:args.limit]
    if not items:
        raise ConfigError(f"{args.dataset}/{args.split}: no examples found in {args.data_dir}")
    # The architecture's name (NeMoT, GPT2Baseline), not its KerasHub task's class.
    model_name = f"{type(model).__name__.removesuffix('CausalLM')} ({Path(args.checkpoint).name})"
    out = Path(args.out)
    if task == "lm":
        windows = args.window or [model.config.max_text_length]
        result = evaluate_lm(model, items, args.dataset, out, windows,
                             batch_size=args.batch_size, task_token=task_token,
                             model_name=model_name)
        summary = {w: r.perplexity for w, r in result["results"].items()}
        print(result["report"].read_text(encoding="utf-8"))
        print(json.dumps({"dataset": args.dataset, "perplexity": summary}))
        return result
    result = evaluate_qa(model, items, args.dataset, args.split, out, task_token,
                         [info.metric, *info.extra_metrics],
                         max_new_tokens=args.max_new_tokens, batch_size=args.batch_size,
                         mc_mode=args.mc_mode or run.get("mqa_mode", "label"),
                         score_reduction=args.score_reduction, sampler=args.sampler,
                         model_name=model_name, mode=mode, answer_room=args.answer_room)
    print(result["report"].read_text(encoding="utf-8"))
    print(json.dumps({"dataset": args.dataset, "split": args.split, "metric": info.metric,
                      "num_questions": len(items), "scores": result["scores"],
                      "report": str(result["report"])}))
    return result
