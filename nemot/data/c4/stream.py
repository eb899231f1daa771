"""The C4 pre-training stream as plain numpy (docs/spec.md §4);
:func:`nemot.data.c4.pipeline.c4_dataset` wraps it in ``tf.data``.

The stream is a pure function of ``(seed, position)``, built in this order:

1. **Epochs.** Epoch ``e`` visits every file once, in the order of
   ``default_rng([seed, e]).permutation`` (thesis: random without replacement) or in
   directory order (``file_order="directory"``, the original code).
2. **Groups.** The epoch's files are taken ``cycle_length`` at a time; the files of a
   group are interleaved one window at a time (round robin, like
   ``tf.data.Dataset.interleave(block_length=1)``).
3. **Windows.** Each document is tokenised whole and cut into non-overlapping windows
   of ``n`` inputs ``ids[s:s+n]`` with targets ``ids[s+1:s+n+1]``; the last window of a
   document is right-padded with ``<pad>`` and ignored targets. A window is kept only
   if it has a target. With ``pack=True`` the documents of a chunk of
   :data:`CHUNK_DOCS` documents are concatenated before cutting (no padding except at
   the chunk end); the target of each document's last token is ignored, since it would
   be the next document's first token.
4. **Shuffle.** A seeded shuffle buffer (``default_rng([seed, e, g])``) runs over each
   group's windows and is drained at the group's end, so every group starts from an
   empty buffer.

**Resuming** at window ``p`` therefore needs only each file's window count: whole
groups before ``p`` are skipped without reading them, and only the group holding
``p`` is read again from its start. The counts are recorded in a small JSON index
(:class:`WindowIndex`) whenever a file has been read completely; a pre-tokenised
shard's count comes from its document offsets alone, a raw file missing from the
index is tokenised once to count it.

**Sources.** A "file" is a raw ``.json.gz`` file, a ``data_prep`` shard, or (source
``"tfds"``, :mod:`nemot.data.c4.tfds`) one shard file of a prepared TFDS ``c4/en`` split;
the order above is the same for all three.

Example:
    >>> kind, files = list_files("c4/en", "train")        # doctest: +SKIP
    >>> rows = window_stream(kind, files, n=768, seed=0)  # doctest: +SKIP
    >>> token_ids, task_targets = next(rows)              # [3 + n], [n]
"""

import gzip
import hashlib
import itertools
import json
import logging
import os
import zlib
from pathlib import Path

import numpy as np

from nemot import files, vocab
from nemot.data import shards
from nemot.data.c4 import tfds as c4_tfds
from nemot.data.raw import DataError, decode, read_text

logger = logging.getLogger(__name__)

# Documents tokenised (raw) or sliced (shards) at once; packing never crosses a chunk.
CHUNK_DOCS = 1024
AUX_IDS = np.array([vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("lm")], np.int32)
RAW, SHARDS, TFDS = "raw", "shards", "tfds"
FILE_ORDERS = ("random", "directory")
# data.source: local files (raw or data_prep shards, told apart by their names) or TFDS.
SOURCES = ("files", "tfds")
TFDS_NAME = "c4/en:3.1.0"
# Malformed lines logged one by one as they are met in a pass; the rest are only counted.
SHOWN_AT_ONCE = 5
# Malformed lines a pass may skip before the stream stops (run config data.max_bad_lines).
MAX_BAD_LINES = 100


# ---------------------------------------------------------------- files

def list_files(data_dir, split="train", source="files", tfds_name=TFDS_NAME):
    """``(kind, files)`` of a C4 directory: raw ``*.json.gz`` (HF ``c4/en`` layout) or the
    ``*.npz`` shards of ``python -m data_prep c4``, sorted by name; with
    ``source="tfds"``, the shard files of ``tfds_name`` in the TFDS data directory
    ``data_dir`` (:func:`nemot.data.c4.tfds.list_shards`).

    ``split="train"`` takes every file without ``validation`` in its name,
    ``split="validation"`` only those with it (TFDS: the split of that name). Shards are
    checked against their index (:func:`nemot.data.shards.check_shards`).
    """
    if split not in ("train", "validation"):
        raise ValueError(f"split must be 'train' or 'validation', got {split!r}")
    if source not in SOURCES:
        raise ValueError(f"source must be one of {SOURCES}, got {source!r}")
    if source == "tfds":
        return TFDS, c4_tfds.list_shards(data_dir, tfds_name, split)
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(f"C4 directory {data_dir} does not exist")
    keep = (lambda p: "validation" not in p.name) if split == "train" else (
        lambda p: "validation" in p.name)
    raw = sorted(p for p in data_dir.glob("*.json.gz") if keep(p))
    npz = sorted(p for p in data_dir.glob("*.npz") if keep(p) and not files.is_temporary(p))
    if raw and npz:
        raise DataError(data_dir, f"split {split!r}", "files",
                        "either raw *.json.gz files or data_prep *.npz shards, not both",
                        got=f"{len(raw)} .json.gz and {len(npz)} .npz")
    if not raw and not npz:
        raise DataError(data_dir, f"split {split!r}", "files",
                        "C4 *.json.gz files (HF c4/en layout) or *.npz shards from "
                        "`python -m data_prep c4`", got="none")
    if npz:
        shards.check_shards(npz)
    return (RAW, raw) if raw else (SHARDS, npz)


class Problems:
    """Malformed lines met in one pass over the files (an epoch), counted as they come.

    The first :data:`SHOWN_AT_ONCE` are logged at once (file, line, why), the count at
    the pass's end. More than ``max_bad_lines`` in the pass stop the stream with a
    :class:`DataError` naming the last one (0: the first one stops it).

    Args:
        max_bad_lines: the limit (run config ``data.max_bad_lines``).
        quiet: count without logging (files read only to count their windows).
    """

    def __init__(self, max_bad_lines=MAX_BAD_LINES, quiet=False):
        self.max_bad_lines = max_bad_lines
        self.quiet = quiet
        self.count = 0

    def add(self, path, line_no, line):
        self.count += 1
        expected = "a JSON object with a string field 'text'"
        if self.count > self.max_bad_lines:
            if self.max_bad_lines:
                expected += (f" (malformed line {self.count} of this pass over the data, more "
                             f"than max_bad_lines = {self.max_bad_lines}: data.max_bad_lines "
                             "in a run config)")
            raise DataError(path, line_no, "text", expected, got=line[:60])
        if not self.quiet and self.count <= SHOWN_AT_ONCE:
            logger.warning("C4: skipped malformed line %d of this pass%s: %s", self.count,
                           " (more are only counted)" if self.count == SHOWN_AT_ONCE else "",
                           DataError(path, line_no, "text", expected, got=line[:60]))

    def report(self, epoch):
        """Log the pass's count (when any); returns it and starts counting again."""
        count, self.count = self.count, 0
        if count and not self.quiet:
            logger.warning("C4 epoch %d: skipped %d malformed line(s) (at most %d allowed: "
                           "data.max_bad_lines)", epoch, count, self.max_bad_lines)
        return count


def _gzip_lines(path):
    """``(line_number, line)`` of a gzip file of UTF-8 text; a file that is not gzip, is cut
    short or holds a byte that is not UTF-8 is a :class:`DataError` naming it."""
    line_no, offset = 0, 0
    try:
        with gzip.open(path, "rb") as f:
            for line_no, raw in enumerate(f, 1):
                yield line_no, decode(path, raw, offset, line_no)
                offset += len(raw)
    except (OSError, EOFError, zlib.error) as error:
        raise DataError(path, line_no + 1, "(gzip)", "a complete gzip file of JSON lines (as "
                        f"the C4 download has; {type(error).__name__}: {error}, after "
                        f"{offset} bytes of text)") from None


def _raw_texts(path, problems):
    for line_no, line in _gzip_lines(path):
        try:
            text = json.loads(line)["text"]
        # ValueError: JSONDecodeError, or a number too long for Python to convert.
        except (ValueError, KeyError, TypeError, IndexError, RecursionError):
            problems.add(path, line_no, line)
            continue
        if not isinstance(text, str):
            problems.add(path, line_no, line)
            continue
        yield text


def _flat(docs):
    offsets = np.zeros(len(docs) + 1, np.int64)
    offsets[1:] = np.cumsum([len(d) for d in docs])
    ids = np.fromiter(itertools.chain.from_iterable(docs), np.int32, count=int(offsets[-1]))
    return ids, offsets


def encode_chunk(texts, tokenizer):
    """``(ids, offsets)`` of a chunk of documents, each tokenised whole."""
    return _flat(tokenizer.encode_batch(texts))


def raw_chunks(path, tokenizer, problems):
    """``(ids, offsets)`` of each chunk of :data:`CHUNK_DOCS` documents of a ``.json.gz`` file."""
    texts = _raw_texts(path, problems)
    while batch := list(itertools.islice(texts, CHUNK_DOCS)):
        yield encode_chunk(batch, tokenizer)


def shard_chunks(path):
    """``(ids, offsets)`` of each chunk of :data:`CHUNK_DOCS` documents of a data_prep shard."""
    ids, offsets = shards.read_c4_shard(path)
    for d in range(0, len(offsets) - 1, CHUNK_DOCS):
        part = offsets[d:d + CHUNK_DOCS + 1]
        yield ids[part[0]:part[-1]], part - part[0]


def file_chunks(path, kind, tokenizer, problems):
    """``(ids, offsets)`` of each chunk of a file of ``kind`` (:data:`RAW`, :data:`SHARDS` or
    :data:`TFDS`, whose files are :class:`nemot.data.c4.tfds.TfdsShard` s)."""
    if kind == SHARDS:
        return shard_chunks(path)
    if kind == RAW:
        return raw_chunks(path, tokenizer, problems)
    return (encode_chunk(texts, tokenizer) for texts in path.texts(CHUNK_DOCS))


# ---------------------------------------------------------------- windows

def windows(offsets, n, pack=False):
    """``(starts, lengths)`` of the windows of a chunk with document ``offsets``.

    Window ``w`` has inputs ``ids[starts[w]:starts[w] + lengths[w]]``; only windows
    with at least one target are returned.
    """
    offsets = np.asarray(offsets, np.int64)
    if pack:
        total = int(offsets[-1])
        starts = np.arange(0, total, n, dtype=np.int64)
        lengths = np.minimum(n, total - starts)
        # A target at p counts unless p + 1 starts a document or is the end.
        boundaries = np.unique(offsets[1:])
        ignored = (np.searchsorted(boundaries, starts + lengths, "right")
                   - np.searchsorted(boundaries, starts, "right"))
        keep = lengths > ignored
        return starts[keep], lengths[keep]
    doc_lengths = np.diff(offsets)
    counts = np.where(doc_lengths >= 2, (doc_lengths - 2) // n + 1, 0)
    first = np.cumsum(counts) - counts
    index_in_doc = np.arange(int(counts.sum())) - np.repeat(first, counts)
    starts = np.repeat(offsets[:-1], counts) + n * index_in_doc
    lengths = np.minimum(n, np.repeat(offsets[1:], counts) - starts)
    return starts, lengths


def materialize(ids, offsets, starts, lengths, n):
    """Rows ``token_ids [w, 3 + n]`` (``[<cls>, <dec>, <lm>]`` + inputs, ``<pad>``-padded) and
    ``task_targets [w, n]`` (next token; ignored past a document's end and at padding)."""
    ids = np.asarray(ids, np.int32)
    total = len(ids)
    positions = starts[:, None] + np.arange(n)
    inside = np.arange(n) < lengths[:, None]
    token_ids = np.empty((len(starts), 3 + n), np.int32)
    token_ids[:, :3] = AUX_IDS
    token_ids[:, 3:] = np.where(inside, ids[np.minimum(positions, total - 1)], vocab.PAD_ID)
    following = positions + 1
    k = np.minimum(np.searchsorted(offsets, following), len(offsets) - 1)
    counts = inside & (offsets[k] != following)
    targets = np.where(counts, ids[np.minimum(following, total - 1)], vocab.IGNORE_ID)
    return token_ids, targets.astype(np.int32)


# ---------------------------------------------------------------- window counts

class WindowIndex:
    """Recorded window count of each file, so that resuming skips files unread.

    A JSON file ``{key: count}``; the key holds the file's name, size and mtime, the
    window length, packing and the tokenizer, so a changed file or setting is counted
    again. ``path=None`` keeps the counts in memory only.

    Example:
        >>> index = WindowIndex("/tmp/c4-windows.json", n=768, pack=False)   # doctest: +SKIP
        >>> index.count(Path("c4-train.00000-of-01024.npz"), SHARDS)         # doctest: +SKIP
    """

    def __init__(self, path, n, pack, tokenizer=None):
        self.path = Path(path) if path is not None else None
        self.settings = f"n={n}|pack={bool(pack)}"
        if tokenizer is not None:
            self.settings += f"|tok={tokenizer.engine}:{tokenizer.files[0]}:{tokenizer.files[1]}"
        self.n, self.pack, self.tokenizer = n, pack, tokenizer
        self.counts = {}
        if self.path is not None and self.path.is_file():
            expected = "a JSON object of window counts (delete the file to rebuild it)"
            try:
                self.counts = json.loads(read_text(self.path))
            except (ValueError, RecursionError) as err:  # JSONDecodeError is a ValueError
                raise DataError(self.path, getattr(err, "lineno", None), "counts",
                                expected) from None
            if not isinstance(self.counts, dict) or not all(
                    isinstance(v, int) and not isinstance(v, bool) and v >= 0
                    for v in self.counts.values()):
                raise DataError(self.path, None, "counts", expected)

    def key(self, path):
        if isinstance(path, (str, os.PathLike)):
            stat = Path(path).stat()
            return f"{Path(path).resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{self.settings}"
        # A TfdsShard: a file of a versioned (never rewritten) TFDS dataset.
        return f"{path.key}|{self.settings}"

    def record(self, path, count):
        key = self.key(path)
        if self.counts.get(key) == count:
            return
        self.counts[key] = count
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            files.write_json(self.path, self.counts, indent=0)

    def count(self, path, kind, problems):
        """Windows of ``path``: recorded, from a shard's offsets, or by tokenising a raw file
        or TFDS shard."""
        key = self.key(path)
        if key not in self.counts:
            if kind == SHARDS:
                offsets = shards.c4_shard_offsets(path)
                chunks = (offsets[d:d + CHUNK_DOCS + 1] - offsets[d]
                          for d in range(0, len(offsets) - 1, CHUNK_DOCS))
            else:
                logger.info("counting the windows of %s to resume (tokenising it once)", path)
                chunks = (o for _, o in file_chunks(path, kind, self.tokenizer, problems))
            self.record(path, sum(len(windows(o, self.n, self.pack)[0]) for o in chunks))
        return self.counts[key]


def default_index_path(data_dir):
    """``$NEMOT_CACHE`` (default ``~/.cache/nemot``) ``/c4-windows/<hash of data_dir>.json``
    (``data_dir`` may be remote, e.g. a ``gs://`` TFDS directory)."""
    cache = Path(os.environ.get("NEMOT_CACHE", "~/.cache/nemot")).expanduser()
    where = str(data_dir) if "://" in str(data_dir) else str(Path(data_dir).resolve())
    digest = hashlib.sha1(where.encode()).hexdigest()[:16]
    return cache / "c4-windows" / f"{digest}.json"


# ---------------------------------------------------------------- the stream

def _file_rows(path, kind, n, pack, tokenizer, problems, index):
    count = 0
    for ids, offsets in file_chunks(path, kind, tokenizer, problems):
        starts, lengths = windows(offsets, n, pack)
        token_ids, targets = materialize(ids, offsets, starts, lengths, n)
        count += len(starts)
        yield from zip(token_ids, targets)
    index.record(path, count)


def _interleave(iterators):
    """Round robin, one item at a time; exhausted iterators drop out."""
    active = list(iterators)
    while active:
        for it in list(active):
            item = next(it, None)
            if item is None:
                active.remove(it)
            else:
                yield item


def shuffled(items, buffer_size, rng):
    """``tf.data``'s shuffle-buffer semantics with a numpy generator; drains at the end."""
    if buffer_size <= 1:
        yield from items
        return
    buffer, draws = [], iter(())
    for item in items:
        if len(buffer) < buffer_size:
            buffer.append(item)
            continue
        j = next(draws, None)
        if j is None:
            draws = iter(rng.integers(buffer_size, size=4096).tolist())
            j = next(draws)
        yield buffer[j]
        buffer[j] = item
    for j in rng.permutation(len(buffer)):
        yield buffer[j]


def file_order(files, seed, epoch, order):
    """The files of ``epoch``: seeded random order without replacement, or directory order."""
    if order == "directory":
        return list(files)
    return [files[i] for i in np.random.default_rng([seed, epoch]).permutation(len(files))]


def window_stream(kind, files, *, n, seed=0, start=0, pack=False, max_bad_lines=MAX_BAD_LINES,
                  order="random", cycle_length=4, shuffle_buffer=8192, tokenizer=None, index=None,
                  repeat=True):
    """Rows ``(token_ids [3 + n], task_targets [n])`` of the stream from window ``start`` on.

    See the module docstring for the order. ``index`` is a :class:`WindowIndex`
    (default: in memory). Malformed lines are skipped and logged as they come
    (:class:`Problems`); more than ``max_bad_lines`` in one epoch raise :class:`DataError`
    (``max_bad_lines=0``: the first one does).
    """
    if order not in FILE_ORDERS:
        raise ValueError(f"file_order must be one of {FILE_ORDERS}, got {order!r}")
    if kind != SHARDS and tokenizer is None:
        raise ValueError(f"{kind} C4 files need a tokenizer")
    index = index or WindowIndex(None, n, pack, tokenizer if kind != SHARDS else None)
    skip = int(start)
    for epoch in itertools.count():
        problems = Problems(max_bad_lines)
        epoch_windows = 0
        files_e = file_order(files, seed, epoch, order)
        for g in range(0, len(files_e), cycle_length):
            group = files_e[g:g + cycle_length]
            if skip:
                # Lines of skipped files were reported by the run that read them.
                total = sum(index.count(f, kind, Problems(max_bad_lines, quiet=True))
                            for f in group)
                epoch_windows += total
                if skip >= total:
                    skip -= total
                    continue
            rows = _interleave(_file_rows(f, kind, n, pack, tokenizer, problems, index)
                               for f in group)
            rows = shuffled(rows, shuffle_buffer, np.random.default_rng([seed, epoch, g]))
            for row in itertools.islice(rows, skip, None):
                epoch_windows += 1
                yield row
            skip = 0
        problems.report(epoch)
        if epoch_windows == 0:
            raise DataError(files[0].parent, None, "text",
                            "at least one document of two or more tokens", got="none")
        if not repeat:
            return
