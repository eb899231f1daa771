"""Offline preparation: raw datasets and C4 -> the tokenized shards of
:mod:`nemot.data.shards` (the command line is ``python -m data_prep``)."""

import multiprocessing
import os
from pathlib import Path

import numpy as np

from nemot import files
from nemot.data import shards
from nemot.data.c4 import stream as c4
from nemot.data.qa import registry
from nemot.data.qa.format import Formatter
from nemot.data.tokenizer import Tokenizer


def prepare_qa(name, split, data_dir, out_dir, tokenizer=None, shard_size=10000, expand=None,
               **formatter_kwargs):
    """Tokenize and shard one dataset split; returns the shard paths.

    Args:
        name, split, data_dir: as :func:`nemot.data.qa.registry.load_examples`.
        out_dir: output directory (created).
        tokenizer: a :class:`nemot.data.Tokenizer` (default: the offline GPT-2 one).
        shard_size: examples per shard.
        expand: one example per gold answer; default ``split == "train"``.
        **formatter_kwargs: :class:`nemot.data.Formatter` options (``max_text_length``,
            ``task_token``, ``mode``, ``mqa_mode``, ``max_answer_length``).
    """
    if registry.get(name).task == "lm":
        raise ValueError(f"{name} is a language-modelling set; it has no QA format")
    formatter = Formatter(tokenizer or Tokenizer(), **formatter_kwargs)
    examples = registry.load_examples(name, split, data_dir, expand=expand)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    n_shards = max(1, -(-len(examples) // shard_size))
    paths = []
    with files.run_lock(out_dir, "data_prep"):
        for k in range(n_shards):
            path = out_dir / shards.qa_shard_name(name, split, k, n_shards)
            entry = shards.write_qa_shard(
                path, formatter.format_batch(examples[k * shard_size:(k + 1) * shard_size]))
            shards.record_shards(out_dir, {path.name: entry})
            paths.append(path)
    return paths


_worker_tokenizer = None


def _init_worker(tokenizer_kwargs):
    global _worker_tokenizer
    _worker_tokenizer = Tokenizer(**tokenizer_kwargs)


def _tokenize_c4_file(job):
    source, target = job
    documents = [ids[offsets[d]:offsets[d + 1]]
                 for ids, offsets in c4.raw_chunks(Path(source), _worker_tokenizer,
                                                   c4.Problems(max_bad_lines=0))
                 for d in range(len(offsets) - 1)]
    return (Path(target).name, *shards.write_c4_shard(target, documents))


def prepare_c4(c4_dir, out_dir, split="train", workers=None, progress=True, **tokenizer_kwargs):
    """Pre-tokenize a C4 directory into one shard per input file, in parallel, resumable.

    The input files are those :func:`nemot.data.c4.stream.list_files` streams (raw
    ``*.json.gz``, validation files only for ``split="validation"``); a malformed line
    is an error naming the file and line. A shard is done once its directory's index
    lists it (:mod:`nemot.data.shards`): a rerun writes the others again, so one killed
    in the middle finishes the work.

    Returns ``{"files": n, "skipped": already complete, "documents": ..., "tokens": ...}``
    (documents and tokens of the shards written by this call).
    """
    kind, c4_files = c4.list_files(c4_dir, split)
    if kind != c4.RAW:
        raise ValueError(f"{c4_dir}: holds .npz shards already; expected raw *.json.gz files")
    out_dir = Path(out_dir)
    with files.run_lock(out_dir, "data_prep"):
        return _prepare_c4(c4_files, out_dir, workers, progress, tokenizer_kwargs)


def _prepare_c4(c4_files, out_dir, workers, progress, tokenizer_kwargs):
    from tqdm import tqdm

    done = shards.read_index(out_dir)
    jobs = [(str(f), str(shards.c4_shard_path(f, out_dir))) for f in c4_files
            if not (shards.c4_shard_path(f, out_dir).name in done
                    and shards.c4_shard_path(f, out_dir).exists())]
    summary = {"files": len(c4_files), "skipped": len(c4_files) - len(jobs), "documents": 0,
               "tokens": 0}
    workers = min(workers or os.cpu_count() or 1, max(len(jobs), 1))
    bar = tqdm(total=len(jobs), desc="c4 shards", unit="file", disable=not progress)
    if workers == 1:
        _init_worker(tokenizer_kwargs)
        results = map(_tokenize_c4_file, jobs)
        pool = None
    else:
        # spawn: the parent may hold threads (TensorFlow, tokenizer pools) that fork would copy.
        pool = multiprocessing.get_context("spawn").Pool(workers, _init_worker, (tokenizer_kwargs,))
        results = pool.imap_unordered(_tokenize_c4_file, jobs)
    try:
        for name, documents, tokens, entry in results:
            shards.record_shards(out_dir, {name: entry})
            summary["documents"] += documents
            summary["tokens"] += tokens
            bar.update()
    finally:
        bar.close()
        if pool is not None:
            pool.close()
            pool.join()
    return summary

