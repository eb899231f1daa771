"""The shard formats: tokenized data on disk, written by :mod:`nemot.data.prepare`
(``python -m data_prep``) and read by the pipelines. Plain numpy ``.npz``, no pickles.

**QA shards**: ``{out}/{dataset}-{split}-{k:05d}-of-{n:05d}.npz``, examples in reader
order, formatted by :class:`nemot.data.Formatter` (docs/spec.md §3-4). Ragged lists are
stored flat with offsets: example ``i`` of array ``x`` is
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
``golds``          str     ``[N]`` JSON list of the gold answers of each example (a
                           multi-part answer is a list of its parts)
``subsets``        str     ``[N]`` the example's subset (RACE middle/high, ARC easy/
                           challenge) or ``""``; shards written before it have none
=================  ======  ===========================================================

**C4 shards**: one per input file, ``{out}/c4-train.XXXXX-of-01024.npz`` with ``ids``
(uint16, every document's GPT-2 token ids concatenated; all ids are < 50,257) and
``offsets`` (int64 ``[D + 1]``): document ``d`` is ``ids[offsets[d]:offsets[d + 1]]``.
No BOS/EOS, no padding; the pipeline cuts 768-token windows (docs/spec.md §4).

A shard file exists only once complete (written to ``*.tmp.npz`` and renamed), so a
rerun skips finished shards and readers never see a partial one.
"""

import json
import os
from pathlib import Path

import numpy as np

TMP_SUFFIX = ".tmp.npz"


def flatten(lists, dtype):
    """``(flat, offsets)`` of a list of sequences."""
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(x) for x in lists])
    flat = np.fromiter((v for x in lists for v in x), dtype=dtype, count=int(offsets[-1]))
    return flat, offsets


def unflatten(flat, offsets):
    return [flat[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def save_atomic(path, **arrays):
    """Write ``path`` only once complete, so that a present shard is a finished shard."""
    path = Path(path)
    tmp = path.with_name(path.name[:-len(".npz")] + TMP_SUFFIX)
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


# ---------------------------------------------------------------- QA shards

def qa_shard_name(name, split, k, n_shards):
    return f"{name}-{split}-{k:05d}-of-{n_shards:05d}.npz"


def qa_shard_paths(directory, name, split):
    """The QA shards of ``name``/``split`` in ``directory``, in order."""
    return sorted(Path(directory).glob(f"{name}-{split}-[0-9]*-of-[0-9]*.npz"))


def write_qa_shard(path, formatted):
    """Write a list of :class:`nemot.data.FormattedExample` as one QA shard."""
    token_ids, token_offsets = flatten([f.token_ids for f in formatted], np.int32)
    task_targets, target_offsets = flatten([f.task_targets for f in formatted], np.int32)
    lm_targets, _ = flatten([f.lm_targets for f in formatted], np.int32)
    prompt_ids, prompt_offsets = flatten([f.prompt_ids for f in formatted], np.int32)
    save_atomic(
        path, token_ids=token_ids, token_offsets=token_offsets, task_targets=task_targets,
        lm_targets=lm_targets, target_offsets=target_offsets, prompt_ids=prompt_ids,
        prompt_offsets=prompt_offsets,
        labels=np.array([-1 if f.label is None else f.label for f in formatted], np.int32),
        example_ids=np.array([f.id for f in formatted], dtype=str),
        golds=np.array([json.dumps(list(f.golds)) for f in formatted], dtype=str),
        subsets=np.array([f.subset or "" for f in formatted], dtype=str))


def read_qa_shard(path):
    """Examples of a QA shard as dicts of numpy arrays / strings (see the module docstring)."""
    with np.load(path) as z:
        token_ids = unflatten(z["token_ids"], z["token_offsets"])
        task_targets = unflatten(z["task_targets"], z["target_offsets"])
        lm_targets = unflatten(z["lm_targets"], z["target_offsets"])
        prompt_ids = unflatten(z["prompt_ids"], z["prompt_offsets"])
        labels, ids, golds = z["labels"], z["example_ids"], z["golds"]
        subsets = z["subsets"] if "subsets" in z.files else [""] * len(ids)
    return [{"id": str(ids[i]), "token_ids": token_ids[i], "task_targets": task_targets[i],
             "lm_targets": lm_targets[i], "prompt_ids": prompt_ids[i],
             "label": None if labels[i] < 0 else int(labels[i]),
             "golds": tuple(json.loads(golds[i])), "subset": str(subsets[i]) or None}
            for i in range(len(ids))]


# ---------------------------------------------------------------- C4 shards

def c4_shard_path(source, out_dir):
    """Output shard of one C4 input file: same name, ``.npz`` instead of ``.json.gz``."""
    return Path(out_dir) / (Path(source).name[:-len(".json.gz")] + ".npz")


def write_c4_shard(path, documents):
    """Write token-id lists (one per document) as one C4 shard."""
    ids, offsets = flatten(documents, np.uint16)
    save_atomic(path, ids=ids, offsets=offsets)
    return len(documents), int(offsets[-1])


def read_c4_shard(path):
    """``(ids, offsets)`` of a C4 shard; document ``d`` is ``ids[offsets[d]:offsets[d + 1]]``."""
    with np.load(path) as z:
        return z["ids"], z["offsets"]


def c4_shard_offsets(path):
    """Document offsets of a C4 shard, without reading its token ids."""
    with np.load(path) as z:
        return z["offsets"]
