"""Offline preparation: raw datasets -> tokenized, sharded ``.npz`` files (``python -m data_prep``).

Shard formats (read by the tf.data pipelines; plain numpy ``.npz``, no pickles):

**QA shards** (``python -m data_prep qa``): ``{out}/{dataset}-{split}-{k:05d}-of-{n:05d}.npz``,
examples in reader order, formatted by :class:`nemot.data.Formatter` (SPEC.md §3-4).
Ragged lists are stored flat with offsets: example ``i`` of array ``x`` is
``x[x_offsets[i]:x_offsets[i + 1]]``.

=================  ======  ===========================================================
array              dtype   content
=================  ======  ===========================================================
``token_ids``      int32   ``[<cls>, <mode>, <task>] + text`` (training layout, answer in)
``token_offsets``  int64   ``[N + 1]``
``task_targets``   int32   per text position (``len(token_ids) - 3``), -1 = ignored (L1/L3)
``lm_targets``     int32   per text position, -1 = ignored (L2)
``target_offsets`` int64   ``[N + 1]`` for both target arrays
``prompt_ids``     int32   aux + prompt up to ``<sep>``, cut for generation (evaluation)
``prompt_offsets`` int64   ``[N + 1]``
``labels``         int32   ``[N]`` 0-based option index, -1 for generation/unlabelled
``example_ids``    str     ``[N]``
``golds``          str     ``[N]`` JSON list of the gold strings of each example
=================  ======  ===========================================================

**C4 shards** (``python -m data_prep c4``): one output per input file,
``{out}/c4-train.XXXXX-of-01024.npz`` with ``ids`` (uint16, every document's GPT-2
token ids concatenated; all ids are < 50,257) and ``offsets`` (int64 ``[D + 1]``):
document ``d`` is ``ids[offsets[d]:offsets[d + 1]]``. No BOS/EOS, no padding; the
pipeline cuts 768-token windows (SPEC.md §4). A shard file exists only once
complete (written to ``*.tmp.npz`` and renamed), so a rerun skips finished shards.

Read them back with :func:`read_qa_shard` and :func:`read_c4_shard`.
"""

import json
import multiprocessing
import os
from pathlib import Path

import numpy as np

C4_GLOB = "c4-{split}.*.json.gz"


# ---------------------------------------------------------------- ragged helpers

def _flatten(lists, dtype):
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(x) for x in lists])
    flat = np.fromiter((v for x in lists for v in x), dtype=dtype, count=int(offsets[-1]))
    return flat, offsets


def _unflatten(flat, offsets):
    return [flat[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def _save_atomic(path, **arrays):
    """Write ``path`` only once complete, so that a present shard is a finished shard."""
    tmp = path.with_name(path.name[:-len(".npz")] + ".tmp.npz")
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


# ---------------------------------------------------------------- QA shards

def prepare_qa(name, split, data_dir, out_dir, tokenizer=None, shard_size=10000, expand=None,
               **formatter_kwargs):
    """Tokenize and shard one dataset split; returns the shard paths.

    Args:
        name, split, data_dir: as :func:`nemot.data.registry.load_examples`.
        out_dir: output directory (created).
        tokenizer: a :class:`nemot.data.Tokenizer` (default: the offline GPT-2 one).
        shard_size: examples per shard.
        expand: one example per gold answer; default ``split == "train"``.
        **formatter_kwargs: :class:`nemot.data.Formatter` options (``max_text_length``,
            ``task_token``, ``mode``, ``mqa_mode``, ``max_answer_length``).
    """
    from nemot.data import Formatter, Tokenizer, registry

    if registry.get(name).task == "lm":
        raise ValueError(f"{name} is a language-modelling set; it has no QA format")
    formatter = Formatter(tokenizer or Tokenizer(), **formatter_kwargs)
    examples = registry.load_examples(name, split, data_dir, expand=expand)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    n_shards = max(1, -(-len(examples) // shard_size))
    paths = []
    for k in range(n_shards):
        formatted = formatter.format_batch(examples[k * shard_size:(k + 1) * shard_size])
        path = out_dir / f"{name}-{split}-{k:05d}-of-{n_shards:05d}.npz"
        token_ids, token_offsets = _flatten([f.token_ids for f in formatted], np.int32)
        task_targets, target_offsets = _flatten([f.task_targets for f in formatted], np.int32)
        lm_targets, _ = _flatten([f.lm_targets for f in formatted], np.int32)
        prompt_ids, prompt_offsets = _flatten([f.prompt_ids for f in formatted], np.int32)
        _save_atomic(
            path, token_ids=token_ids, token_offsets=token_offsets, task_targets=task_targets,
            lm_targets=lm_targets, target_offsets=target_offsets, prompt_ids=prompt_ids,
            prompt_offsets=prompt_offsets,
            labels=np.array([-1 if f.label is None else f.label for f in formatted], np.int32),
            example_ids=np.array([f.id for f in formatted], dtype=str),
            golds=np.array([json.dumps(list(f.golds)) for f in formatted], dtype=str))
        paths.append(path)
    return paths


def read_qa_shard(path):
    """Examples of a QA shard as dicts of numpy arrays / strings (see the module docstring)."""
    with np.load(path) as z:
        token_ids = _unflatten(z["token_ids"], z["token_offsets"])
        task_targets = _unflatten(z["task_targets"], z["target_offsets"])
        lm_targets = _unflatten(z["lm_targets"], z["target_offsets"])
        prompt_ids = _unflatten(z["prompt_ids"], z["prompt_offsets"])
        labels, ids, golds = z["labels"], z["example_ids"], z["golds"]
    return [{"id": str(ids[i]), "token_ids": token_ids[i], "task_targets": task_targets[i],
             "lm_targets": lm_targets[i], "prompt_ids": prompt_ids[i],
             "label": None if labels[i] < 0 else int(labels[i]), "golds": tuple(json.loads(golds[i]))}
            for i in range(len(ids))]


# ---------------------------------------------------------------- C4 shards

def c4_files(c4_dir, split="train"):
    """Input files of ``split`` in directory order; validation files never count as training."""
    files = sorted(Path(c4_dir).glob(C4_GLOB.format(split=split)))
    if split == "train":
        files = [f for f in files if "validation" not in f.name]
    if not files:
        from nemot.data import DataError
        raise DataError(c4_dir, f"split {split!r}", "files",
                        f"files matching {C4_GLOB.format(split=split)}", got="none")
    return files


def c4_shard_path(source, out_dir):
    """Output shard of one C4 input file: same name, ``.npz`` instead of ``.json.gz``."""
    return Path(out_dir) / (source.name[:-len(".json.gz")] + ".npz")


def _iter_texts(path):
    import gzip

    from nemot.data import DataError

    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            try:
                text = json.loads(line)["text"]
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise DataError(path, line_no, "text", "a JSON object with a string field 'text'",
                                got=line[:60]) from err
            yield text


_worker_tokenizer = None


def _init_worker(tokenizer_kwargs):
    global _worker_tokenizer
    from nemot.data import Tokenizer

    _worker_tokenizer = Tokenizer(**tokenizer_kwargs)


def _tokenize_c4_file(job):
    source, target, batch_size = job
    ids, lengths, batch = [], [], []

    def flush():
        for doc in _worker_tokenizer.encode_batch(batch):
            ids.append(np.asarray(doc, dtype=np.uint16))
            lengths.append(len(doc))
        batch.clear()

    for text in _iter_texts(source):
        batch.append(text)
        if len(batch) == batch_size:
            flush()
    flush()
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(lengths)
    flat = np.concatenate(ids) if ids else np.zeros(0, np.uint16)
    _save_atomic(Path(target), ids=flat, offsets=offsets)
    return len(lengths), int(offsets[-1])


def prepare_c4(c4_dir, out_dir, split="train", workers=None, batch_size=256, progress=True,
               **tokenizer_kwargs):
    """Pre-tokenize a C4 directory into one shard per input file, in parallel, resumable.

    Returns ``{"files": n, "skipped": already complete, "documents": ..., "tokens": ...}``
    (documents and tokens of the shards written by this call).
    """
    from tqdm import tqdm

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = c4_files(c4_dir, split)
    jobs = [(str(f), str(c4_shard_path(f, out_dir)), batch_size) for f in files
            if not c4_shard_path(f, out_dir).exists()]
    summary = {"files": len(files), "skipped": len(files) - len(jobs), "documents": 0, "tokens": 0}
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
        for documents, tokens in results:
            summary["documents"] += documents
            summary["tokens"] += tokens
            bar.update()
    finally:
        bar.close()
        if pool is not None:
            pool.close()
            pool.join()
    return summary


def read_c4_shard(path):
    """``(ids, offsets)`` of a C4 shard; document ``d`` is ``ids[offsets[d]:offsets[d + 1]]``."""
    with np.load(path) as z:
        return z["ids"], z["offsets"]


def iter_c4_documents(path):
    """Token ids (uint16 arrays) of each document of a C4 shard."""
    ids, offsets = read_c4_shard(path)
    return iter(_unflatten(ids, offsets))
