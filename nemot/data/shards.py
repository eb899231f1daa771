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
                           challenge) or ``""``
=================  ======  ===========================================================

**C4 shards**: one per input file, ``{out}/c4-train.XXXXX-of-01024.npz`` with ``ids``
(uint16, every document's GPT-2 token ids concatenated; all ids are < 50,257) and
``offsets`` (int64 ``[D + 1]``): document ``d`` is ``ids[offsets[d]:offsets[d + 1]]``.
No BOS/EOS, no padding; the pipeline cuts 768-token windows (docs/spec.md §4).

A shard file exists only once complete (written under a temporary name and renamed,
:mod:`nemot.files`), so readers never see a partial one. Each shard's size and SHA-256 go
into the directory's index, ``shards.json`` (``{"shards": {name: {"bytes", "sha256"}}}``),
once the shard is in place: a rerun skips the shards the index lists, and a reader
refuses a shard that is not listed or whose size (checked for every shard before a run
starts) or checksum (checked as the shard is opened: hashing every shard of C4 up front
would read all of it once more) differs, naming the shard.
"""

import hashlib
import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np

from nemot import files
from nemot.data.raw import DataError, read_json

INDEX = "shards.json"
_SHA256 = re.compile("[0-9a-f]{64}")


def flatten(lists, dtype):
    """``(flat, offsets)`` of a list of sequences."""
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(x) for x in lists])
    flat = np.fromiter((v for x in lists for v in x), dtype=dtype, count=int(offsets[-1]))
    return flat, offsets


def unflatten(flat, offsets):
    return [flat[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def save_atomic(path, **arrays):
    """Write ``path`` only once complete, so that a present shard is a finished shard;
    returns its index entry (size and SHA-256)."""
    with files.atomic_path(path) as tmp:
        np.savez(tmp, **arrays)
        entry = {"bytes": tmp.stat().st_size, "sha256": checksum(tmp)}
    return entry


# ---------------------------------------------------------------- the index

def checksum(path_or_bytes):
    """SHA-256 (hex) of a file or of bytes."""
    if isinstance(path_or_bytes, bytes):
        return hashlib.sha256(path_or_bytes).hexdigest()
    digest = hashlib.sha256()
    with open(path_or_bytes, "rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def index_path(directory):
    return Path(directory) / INDEX


def read_index(directory):
    """``{shard name: {"bytes", "sha256"}}`` of ``directory``'s index (empty when it has
    none); a malformed index is a :class:`DataError` naming it."""
    path = index_path(directory)
    if not path.is_file():
        return {}
    document = read_json(path)
    entries = document.get("shards") if isinstance(document, dict) else None
    if not isinstance(entries, dict) or not all(
            isinstance(e, dict) and isinstance(e.get("bytes"), int)
            and isinstance(e.get("sha256"), str) and _SHA256.fullmatch(e["sha256"])
            for e in entries.values()):
        raise DataError(path, None, "shards", "an object {shard name: {\"bytes\": int, "
                        "\"sha256\": 64 hex digits}} as data_prep writes it (rerun data_prep to "
                        "rebuild it)")
    return entries


def record_shards(directory, entries):
    """Add ``{shard name: entry}`` to ``directory``'s index (written atomically)."""
    index = read_index(directory)
    index.update(entries)
    files.write_json(index_path(directory), {"shards": dict(sorted(index.items()))}, indent=0)


def _entry(path, index=None):
    path = Path(path)
    index = read_index(path.parent) if index is None else index
    entry = index.get(path.name)
    if entry is None:
        state = f"is not listed in {index_path(path.parent)}" if index else \
            f"has no index {INDEX} beside it"
        raise DataError(path, None, "(shard)", f"a shard that data_prep finished; it {state} "
                        "(an interrupted data_prep: run it again to finish the shards)")
    return entry


def check_shards(paths):
    """Before a run: every shard in ``paths`` is listed in its directory's index with its
    size; raises a :class:`DataError` naming the first that is not."""
    indexes = {}
    for path in map(Path, paths):
        index = indexes.setdefault(path.parent, read_index(path.parent))
        entry = _entry(path, index)
        size = path.stat().st_size
        if size != entry["bytes"]:
            raise DataError(path, None, "(shard)", f"the {entry['bytes']} bytes data_prep "
                            f"wrote ({index_path(path.parent)}); the file was changed or cut "
                            "short: run data_prep again", got=f"{size} bytes")


def _open(path, keys, dtypes, verify=True):
    """The arrays ``keys`` of a shard, checked against its index entry (size; SHA-256 with
    ``verify``) and ``dtypes`` (numpy kinds, e.g. ``"iu"``)."""
    path = Path(path)
    entry = _entry(path)
    if verify:
        with open(path, "rb") as f:
            data = f.read()
        actual = checksum(data)
        if len(data) != entry["bytes"] or actual != entry["sha256"]:
            raise DataError(path, None, "(shard)", f"the shard data_prep wrote (SHA-256 "
                            f"{entry['sha256'][:16]}..., {entry['bytes']} bytes, in "
                            f"{index_path(path.parent)}); it was changed or cut short: run "
                            f"data_prep again", got=f"SHA-256 {actual[:16]}..., {len(data)} bytes")
        source = io.BytesIO(data)
    else:
        check_shards([path])
        source = path
    try:
        with np.load(source, allow_pickle=False) as z:
            missing = [k for k in keys if k not in z.files]
            if missing:
                raise DataError(path, None, missing[0], f"a shard with arrays {list(keys)}",
                                got=sorted(z.files))
            arrays = {k: z[k] for k in keys}
    except (zipfile.BadZipFile, ValueError, OSError, EOFError, KeyError) as error:
        if isinstance(error, DataError):
            raise
        raise DataError(path, None, "(shard)", f"a .npz shard as data_prep writes it "
                        f"({type(error).__name__}: {error})") from None
    for key, array in arrays.items():
        kinds = dtypes.get(key)
        if kinds and (array.dtype.kind not in kinds or array.ndim != 1):
            raise DataError(path, None, key, f"a 1-D array of kind {kinds!r}",
                            got=f"{array.dtype} {list(array.shape)}")
    return arrays


def _check_offsets(path, key, offsets, total, count=None):
    """``offsets`` start at 0, never decrease and end at ``total`` (``count + 1`` of them)."""
    ok = (len(offsets) >= 1 and offsets[0] == 0 and offsets[-1] == total
          and bool(np.all(np.diff(offsets) >= 0)))
    if not ok or (count is not None and len(offsets) != count + 1):
        raise DataError(path, None, key, f"offsets from 0 to {total}, never decreasing"
                        + ("" if count is None else f", {count + 1} of them"))


# ---------------------------------------------------------------- QA shards

def qa_shard_name(name, split, k, n_shards):
    return f"{name}-{split}-{k:05d}-of-{n_shards:05d}.npz"


def qa_shard_paths(directory, name, split):
    """The QA shards of ``name``/``split`` in ``directory``, in order."""
    return sorted(p for p in Path(directory).glob(f"{name}-{split}-[0-9]*-of-[0-9]*.npz")
                  if not files.is_temporary(p))


def write_qa_shard(path, formatted):
    """Write a list of :class:`nemot.data.FormattedExample` as one QA shard; returns its
    index entry."""
    token_ids, token_offsets = flatten([f.token_ids for f in formatted], np.int32)
    task_targets, target_offsets = flatten([f.task_targets for f in formatted], np.int32)
    lm_targets, _ = flatten([f.lm_targets for f in formatted], np.int32)
    prompt_ids, prompt_offsets = flatten([f.prompt_ids for f in formatted], np.int32)
    return save_atomic(
        path, token_ids=token_ids, token_offsets=token_offsets, task_targets=task_targets,
        lm_targets=lm_targets, target_offsets=target_offsets, prompt_ids=prompt_ids,
        prompt_offsets=prompt_offsets,
        labels=np.array([-1 if f.label is None else f.label for f in formatted], np.int32),
        example_ids=np.array([f.id for f in formatted], dtype=str),
        golds=np.array([json.dumps(list(f.golds)) for f in formatted], dtype=str),
        subsets=np.array([f.subset or "" for f in formatted], dtype=str))


QA_ARRAYS = {"token_ids": "i", "token_offsets": "i", "task_targets": "i", "lm_targets": "i",
             "target_offsets": "i", "prompt_ids": "i", "prompt_offsets": "i", "labels": "i",
             "example_ids": "U", "golds": "U", "subsets": "U"}


def read_qa_shard(path):
    """Examples of a QA shard as dicts of numpy arrays / strings (see the module docstring);
    a shard that is not as :func:`write_qa_shard` wrote it is a :class:`DataError`."""
    z = _open(path, tuple(QA_ARRAYS), QA_ARRAYS)
    ids, labels, golds, subsets = z["example_ids"], z["labels"], z["golds"], z["subsets"]
    n = len(ids)
    for key, flat in (("token_offsets", "token_ids"), ("target_offsets", "task_targets"),
                      ("prompt_offsets", "prompt_ids")):
        _check_offsets(path, key, z[key], len(z[flat]), n)
    if len(z["lm_targets"]) != len(z["task_targets"]) or not len(labels) == len(golds) == \
            len(subsets) == n:
        raise DataError(path, None, "(shard)", f"{n} labels, golds and subsets and as many "
                        "lm_targets as task_targets")
    token_ids = unflatten(z["token_ids"], z["token_offsets"])
    task_targets = unflatten(z["task_targets"], z["target_offsets"])
    lm_targets = unflatten(z["lm_targets"], z["target_offsets"])
    prompt_ids = unflatten(z["prompt_ids"], z["prompt_offsets"])
    examples = []
    for i in range(n):
        try:
            gold = json.loads(golds[i])
        except json.JSONDecodeError as error:
            raise DataError(path, f"example {i}", "golds", "a JSON list of answers",
                            got=str(error)) from None
        if not isinstance(gold, list):
            raise DataError(path, f"example {i}", "golds", "a JSON list of answers", got=gold)
        examples.append({
            "id": str(ids[i]), "token_ids": token_ids[i], "task_targets": task_targets[i],
            "lm_targets": lm_targets[i], "prompt_ids": prompt_ids[i],
            "label": None if labels[i] < 0 else int(labels[i]), "golds": tuple(gold),
            "subset": str(subsets[i]) or None})
    return examples


# ---------------------------------------------------------------- C4 shards

def c4_shard_path(source, out_dir):
    """Output shard of one C4 input file: same name, ``.npz`` instead of ``.json.gz``."""
    return Path(out_dir) / (Path(source).name[:-len(".json.gz")] + ".npz")


def write_c4_shard(path, documents):
    """Write token-id lists (one per document) as one C4 shard; returns ``(documents,
    tokens, index entry)``."""
    ids, offsets = flatten(documents, np.uint16)
    entry = save_atomic(path, ids=ids, offsets=offsets)
    return len(documents), int(offsets[-1]), entry


C4_ARRAYS = {"ids": "u", "offsets": "i"}


def read_c4_shard(path):
    """``(ids, offsets)`` of a C4 shard; document ``d`` is ``ids[offsets[d]:offsets[d + 1]]``.
    The shard is checked against its index entry (SHA-256) and its offsets against its ids."""
    z = _open(path, tuple(C4_ARRAYS), C4_ARRAYS)
    _check_offsets(path, "offsets", z["offsets"], len(z["ids"]))
    return z["ids"], z["offsets"]


def c4_shard_offsets(path):
    """Document offsets of a C4 shard, without reading (or hashing) its token ids; its size
    is checked against its index entry."""
    z = _open(path, ("offsets",), C4_ARRAYS, verify=False)
    offsets = z["offsets"]
    if len(offsets) and (offsets[0] != 0 or np.any(np.diff(offsets) < 0)):
        raise DataError(path, None, "offsets", "offsets from 0, never decreasing")
    return offsets
