"""Fuzzing every reader: each starts from its own small valid file and reads mutations of
it (truncated, bytes flipped and inserted, lines and fields dropped or duplicated, JSON
values of the wrong type, bytes that are not UTF-8, empty, a huge line). A reader must
give a valid result or its named error (a one-line user error naming the mutated file),
never another exception and never hang.

Shared by the suite (tests/data/test_fuzz.py: hypothesis draws a few inputs per reader
and shrinks a failure) and ``python -m bench fuzz --examples N`` (the same mutations drawn
from a seeded ``random.Random``, many per reader, counted by outcome).

Example:
    >>> target = TARGETS["boolq"]
    >>> with target.prepared(tmp_dir) as case:                         # doctest: +SKIP
    ...     outcome, detail = case.run(mutated_bytes)                  # "read", "named_error", ...
"""

import contextlib
import csv
import dataclasses
import gzip
import io
import json
import pickle
import shutil
import signal
import time
from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from tests.data import benchmark_files, fixtures

# Seconds one read may take before it counts as a hang (the slowest reads, C4's with three
# huge lines to tokenise and cut into windows, take a few seconds on a loaded 2-core machine).
HANG_SECONDS = 60
# The inserted "huge line": longer than csv's field limit (131,072 characters).
HUGE = 140_000
OUTCOMES = ("read", "named_error", "unnamed_error", "unexpected", "hang")


class Hang(Exception):
    """A read took longer than :data:`HANG_SECONDS`."""


def _named_errors():
    from nemot.errors import UserError

    return (UserError,)


# ---------------------------------------------------------------- what a valid result is

def _check_examples(examples):
    """Registry examples are well-typed: texts are strings, a label indexes the options."""
    from nemot.data import QAExample

    for e in examples:
        if isinstance(e, str):  # a language-modelling document
            continue
        assert isinstance(e, QAExample), type(e)
        assert isinstance(e.question, str) and isinstance(e.id, str), e
        assert e.passage is None or isinstance(e.passage, str), e
        assert all(isinstance(o, str) for o in e.options), e
        for answer in e.answers:
            assert isinstance(answer, str) or all(isinstance(p, str) for p in answer), e
        assert e.label is None or 0 <= e.label < len(e.options), e


def _check_arrays(*arrays):
    for array in arrays:
        assert isinstance(array, np.ndarray), type(array)


# ---------------------------------------------------------------- targets

@dataclasses.dataclass
class Target:
    """One reader and the valid files it starts from.

    Attributes:
        name: the reader's name in the figures.
        kind: how its file is mutated: ``text``, ``json``, ``jsonl``, ``tsv``, ``csv``,
            ``gzip-jsonl``, ``npz``, ``pickle`` or ``toml``.
        write: ``write(root) -> (file to mutate, read)``; ``read()`` reads it (the whole
            dataset, config or shard), returning something :attr:`check` accepts.
        check: asserts a result is valid.
    """

    name: str
    kind: str
    write: object
    check: object = None

    @contextlib.contextmanager
    def prepared(self, root):
        root = Path(root) / self.name
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        path, read = self.write(root)
        yield Case(self, Path(path), read)


@dataclasses.dataclass
class Case:
    target: Target
    path: Path
    read: object

    def __post_init__(self):
        self.original = self.path.read_bytes()

    def run(self, data):
        """Write ``data`` over the file, read, restore the file; returns ``(outcome,
        detail)``, outcome one of :data:`OUTCOMES`."""
        self.path.write_bytes(data)
        try:
            return self._read()
        finally:
            self.path.write_bytes(self.original)

    def _read(self):
        def alarm(signum, frame):
            raise Hang(f"{self.target.name}: a read took over {HANG_SECONDS} s")

        previous = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
        try:
            result = self.read()
            if self.target.check is not None:
                self.target.check(result)
            return "read", None
        except Hang as error:
            return "hang", str(error)
        except _named_errors() as error:
            message = str(error)
            named = str(self.path) in message or self.path.name in message
            if "\n" in message.strip() or not named:
                return "unnamed_error", f"{type(error).__name__}: {message[:300]}"
            return "named_error", type(error).__name__
        except AssertionError as error:
            return "unexpected", f"invalid result: {str(error)[:300]}"
        except Exception as error:  # the figure counts every other exception
            return "unexpected", f"{type(error).__name__}: {str(error)[:300]}"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)


def _registry(name, writer, relative, split="train", **options):
    def write(root):
        writer(root)
        path = root / relative

        def read():
            from nemot.data.qa import registry

            return registry.load_examples(name, split, root, **options)

        return path, read

    return write


def _glue(task):
    def write(root):
        from nemot.data.benchmarks import glue
        from nemot.data.synthetic.glue import GLUE_HEADERS, _glue_rows

        rows = _glue_rows(task, np.random.default_rng(0), 6)
        header = [GLUE_HEADERS[task]] if task in GLUE_HEADERS else []
        path = root / task / "train.tsv"
        path.parent.mkdir(parents=True)
        path.write_text("".join("\t".join(r) + "\n" for r in header + rows), encoding="utf-8")
        return path, lambda: glue.read_task(task, root, "train")

    return write


def _minbert(task):
    def write(root):
        from nemot.data.benchmarks import minbert
        from nemot.data.synthetic.minbert import _rows, write_minbert

        columns = {"sst": ("id", "sentence", "sentiment"),
                   "quora": ("id", "sentence1", "sentence2", "is_duplicate"),
                   "sts": ("id", "sentence1", "sentence2", "similarity")}[task]
        path = root / minbert.LAYOUTS[task].files[0].format(split="train")
        write_minbert(path, columns, _rows(task, 6, np.random.default_rng(0)))
        return path, lambda: minbert.read(task, root, "train")

    return write


def _superglue(task):
    def write(root):
        from nemot.data.benchmarks import superglue
        from tests.data.superglue_records import RECORDS

        path = root / task / "train.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS[task]), encoding="utf-8")
        return path, lambda: superglue.load_task(task, "train", root).rows

    return write


def _names(root):
    from nemot.data.benchmarks.names import read_names

    benchmark_files.names(root)
    return root / "Polish.txt", lambda: read_names(root)


def _cifar10(root):
    from nemot.data.benchmarks.cifar10 import read_cifar10

    benchmark_files.cifar10(root, per_batch=3)

    def read():
        data = read_cifar10(root)
        _check_arrays(*data["train"], *data["test"])
        return data

    return root / "data_batch_2", read


_TOKENIZER = []


def _tokenizer():
    if not _TOKENIZER:
        from nemot.data import Tokenizer

        _TOKENIZER.append(Tokenizer())
    return _TOKENIZER[0]


def _c4_stream(root, kind, files):
    from nemot.data.c4 import stream as c4

    rows = c4.window_stream(kind, files, n=16, seed=0, tokenizer=_tokenizer(), repeat=False,
                            shuffle_buffer=4)
    return [(t.shape, y.shape) for t, y in rows]


def _c4_raw(root):
    from nemot.data.c4 import stream as c4

    fixtures.write_c4(root, n_train=2, docs_per_file=4)

    def read():
        kind, files = c4.list_files(root, "train")
        return _c4_stream(root, kind, files)

    return root / "c4-train.00001-of-01024.json.gz", read


def _c4_shard(root):
    from nemot.data import prepare
    from nemot.data.c4 import stream as c4

    raw = root / "raw"
    fixtures.write_c4(raw, n_train=2, docs_per_file=4)
    out = root / "shards"
    prepare.prepare_c4(raw, out, workers=1, progress=False)

    def read():
        kind, files = c4.list_files(out, "train")
        return _c4_stream(out, kind, files)

    return out / "c4-train.00001-of-01024.npz", read


def _shard_index(root):
    path, read = _c4_shard(root)
    from nemot.data import shards

    return shards.index_path(path.parent), read


def _qa_shard(root):
    from nemot.data import prepare, shards

    fixtures.race(root / "raw")
    out = root / "shards"
    (path,) = prepare.prepare_qa("race", "dev", root / "raw", out)

    def read():
        shards.check_shards([path])
        return shards.read_qa_shard(path)

    return path, read


def _window_index(root):
    from nemot.data.c4 import stream as c4

    path = root / "c4-windows.json"
    path.write_text(json.dumps({"/c4/a.npz|10|2|n=16|pack=False": 3,
                                "/c4/b.npz|12|2|n=16|pack=False": 5}, indent=0))

    def read():
        counts = c4.WindowIndex(path, n=16, pack=False).counts
        assert all(isinstance(k, str) and isinstance(v, int) for k, v in counts.items())
        return counts

    return path, read


RUN_CONFIG = """name = "fuzz"
kind = "finetune"
seed = 3

[model]
preset = "tiny"
output_blocks = ["mqa"]

[data]
dataset = "race"
dir = "RACE"

[train]
batch_size = 4
epochs = 2

[schedule]
type = "constant"
rate = 0.001
"""


def _run_config(root):
    from nemot.training.run_config import load_run_config

    path = root / "run.toml"
    path.write_text(RUN_CONFIG, encoding="utf-8")
    return path, lambda: load_run_config(path)


def _model_config(root):
    from nemot.config import NeMoTConfig

    path = root / "model.toml"
    path.write_text('[model]\npreset = "tiny"\nd_model = 48\noutput_blocks = ["lm", "mqa"]\n',
                    encoding="utf-8")
    return path, lambda: NeMoTConfig.from_file(path)


F = fixtures
TARGETS = {t.name: t for t in [
    Target("race", "json", _registry("race", F.race, "RACE/train/high/1.txt"), _check_examples),
    Target("squad_v2", "json", _registry("squad_v2", F.squad_v2, "train-v2.0.json"),
           _check_examples),
    Target("quoref", "json", _registry("quoref", F.quoref,
                                       "quoref-train-dev-v0.1/quoref-train-v0.1.json"),
           _check_examples),
    Target("ropes", "json", _registry("ropes", F.ropes, "ropes-train-dev-v1.0/train-v1.0.json"),
           _check_examples),
    Target("narrativeqa", "csv", _registry("narrativeqa", F.narrativeqa,
                                           "narrativeqa-master/qaps.csv"), _check_examples),
    Target("narrativeqa_summaries", "csv",
           _registry("narrativeqa", F.narrativeqa,
                     "narrativeqa-master/third_party/wikipedia/summaries.csv"), _check_examples),
    Target("boolq", "jsonl", _registry("boolq", F.boolq, "train.jsonl"), _check_examples),
    Target("boolq_cs", "json", _registry("boolq_cs", F.boolq_cs, "BoolQ/boolq_perturbed.json",
                                         split="test"), _check_examples),
    Target("arc", "jsonl", _registry(
        "arc_easy", F.arc, "ARC-V1-Feb2018-2/ARC-Easy/ARC-Easy-Train.jsonl"), _check_examples),
    Target("obqa", "jsonl", _registry("obqa", F.obqa, "OpenBookQA-V1-Sep2018/Data/Main/train.jsonl"),
           _check_examples),
    Target("commonsenseqa", "jsonl", _registry("commonsenseqa", F.commonsenseqa,
                                               "train_rand_split.jsonl"), _check_examples),
    Target("mctest", "tsv", _registry("mctest", F.mctest, "MCTest/mc160.train.tsv"),
           _check_examples),
    Target("mctest_answers", "tsv", _registry("mctest", F.mctest, "MCTest/mc160.train.ans"),
           _check_examples),
    Target("piqa", "jsonl", _registry("piqa", F.piqa, "train.jsonl"), _check_examples),
    Target("piqa_labels", "text", _registry("piqa", F.piqa, "train-labels.lst"),
           _check_examples),
    Target("siqa", "jsonl", _registry("siqa", F.siqa, "socialiqa-train-dev/train.jsonl"),
           _check_examples),
    Target("winogrande", "jsonl", _registry("winogrande", F.winogrande,
                                            "winogrande_1.1/train_xl.jsonl"), _check_examples),
    Target("drop", "json", _registry("drop", F.drop, "drop_dataset/drop_dataset_train.json"),
           _check_examples),
    Target("wikitext2", "text", _registry("wikitext2", F.wikitext,
                                          "wikitext-2/wiki.train.tokens"), _check_examples),
    Target("ptb", "text", _registry("ptb", F.ptb, "simple-examples/data/ptb.train.txt"),
           _check_examples),
    Target("lambada", "text", _registry("lambada", F.lambada,
                                        "lambada/lambada_test_plain_text.txt",
                                        split="test"), _check_examples),
    Target("glue_cola", "tsv", _glue("CoLA")),
    Target("glue_rte", "tsv", _glue("RTE")),
    Target("glue_stsb", "tsv", _glue("STS-B")),
    *[Target(f"superglue_{task.lower()}", "jsonl", _superglue(task))
      for task in ("BoolQ", "CB", "COPA", "MultiRC", "ReCoRD", "RTE", "WiC", "WSC")],
    Target("minbert_sst", "csv-tab", _minbert("sst")),
    Target("minbert_quora", "csv-tab", _minbert("quora")),
    Target("minbert_sts", "csv-tab", _minbert("sts")),
    Target("names", "text", _names),
    Target("cifar10", "pickle", _cifar10),
    Target("c4_raw", "gzip-jsonl", _c4_raw),
    Target("c4_shard", "npz", _c4_shard),
    Target("c4_shard_index", "json", _shard_index),
    Target("qa_shard", "npz", _qa_shard),
    Target("c4_window_index", "json", _window_index),
    Target("run_config", "toml", _run_config),
    Target("model_config", "toml", _model_config),
]}


# ---------------------------------------------------------------- mutations
#
# Each mutation draws its choices from a chooser: :class:`HypothesisChoices` in the suite
# (hypothesis generates and shrinks), :class:`RandomChoices` in the benchmark (a seeded
# ``random.Random``: the same mutations at a fraction of hypothesis' cost per input).

class HypothesisChoices:
    def __init__(self, draw):
        self.draw = draw

    def integer(self, low, high):
        return self.draw(st.integers(low, high))

    def fraction(self):
        return self.draw(st.floats(0, 1))

    def choice(self, options):
        return self.draw(st.sampled_from(options))

    def binary(self, low, high):
        return self.draw(st.binary(min_size=low, max_size=high))

    def json_value(self):
        return self.draw(st.recursive(
            st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats()
            | st.text(max_size=8),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                st.text(max_size=6), inner, max_size=3),
            max_leaves=6))


class RandomChoices:
    def __init__(self, rng):
        self.rng = rng

    def integer(self, low, high):
        return self.rng.randint(low, high)

    def fraction(self):
        return self.rng.random()

    def choice(self, options):
        return self.rng.choice(list(options))

    def binary(self, low, high):
        return self.rng.randbytes(self.rng.randint(low, high))

    def _text(self):
        alphabet = "ab \"\\\n\t\u00e9\u2028\ud800\U0001f600{}[]:,"
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randint(0, 8)))

    def json_value(self, depth=0):
        kinds = ["null", "bool", "int", "float", "text"] + (["list", "dict"] if depth < 2 else [])
        kind = self.rng.choice(kinds)
        if kind == "null":
            return None
        if kind == "bool":
            return self.rng.random() < 0.5
        if kind == "int":
            return self.rng.choice([0, -1, 1, 2**31, -2**63, 2**70, self.rng.randint(-9, 9)])
        if kind == "float":
            return self.rng.choice([0.5, -1e300, float("nan"), float("inf"), 1e-320])
        if kind == "text":
            return self._text()
        if kind == "list":
            return [self.json_value(depth + 1) for _ in range(self.rng.randint(0, 3))]
        return {self._text(): self.json_value(depth + 1) for _ in range(self.rng.randint(0, 3))}


BAD_BYTES = [b"\xe9", b"\xff", b"\xc3", b"\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00"]
BYTE_MUTATIONS = ("truncate", "flip", "insert", "delete", "non_utf8", "empty", "huge_line",
                  "drop_line", "duplicate_line", "swap_lines", "nested")


def _lines(data):
    return data.splitlines(keepends=True)


def byte_mutation(c, data):
    """One mutation of ``data`` at the byte level."""
    op = c.choice(BYTE_MUTATIONS)
    at = int(c.fraction() * len(data))
    if op == "truncate":
        return data[:at]
    if op == "flip" and data:
        at = min(at, len(data) - 1)
        return data[:at] + bytes([data[at] ^ c.integer(1, 255)]) + data[at + 1:]
    if op == "insert":
        return data[:at] + c.binary(1, 8) + data[at:]
    if op == "delete":
        return data[:at] + data[at + c.integer(1, 64):]
    if op == "non_utf8":
        return data[:at] + c.choice(BAD_BYTES) + data[at:]
    if op == "empty":
        return b""
    if op == "huge_line":
        filler = c.choice([b"x", b"9", b" ", b"\t", b","])
        return data[:at] + filler * HUGE + c.choice([b"", b"\n"]) + data[at:]
    if op == "nested":  # deeper than Python's recursion limit
        return data[:at] + c.choice([b"[", b"{\"a\":"]) * 3_000 + data[at:]
    lines = _lines(data)
    if not lines:
        return data
    i = c.integer(0, len(lines) - 1)
    if op == "drop_line":
        del lines[i]
    elif op == "duplicate_line":
        lines.insert(i, lines[i])
    elif op == "swap_lines":
        j = c.integer(0, len(lines) - 1)
        lines[i], lines[j] = lines[j], lines[i]
    return b"".join(lines)


def _json_nodes(value, path=()):
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _json_nodes(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _json_nodes(item, path + (index,))


def _replace(value, path, op, new=None):
    """``value`` with the node at ``path`` replaced by ``new``, deleted or duplicated."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    value = dict(value) if isinstance(value, dict) else list(value)
    if rest:
        value[head] = _replace(value[head], rest, op, new)
    elif op == "delete":
        del value[head]
    elif op == "duplicate":
        if isinstance(value, list):
            value.insert(head, value[head])
        else:
            value[f"{head}_"] = value[head]
    else:
        value[head] = new
    return value


def json_mutation(c, document):
    """``document`` (parsed JSON) with one node replaced by a value of another type,
    deleted or duplicated."""
    path, _ = c.choice(list(_json_nodes(document)))
    op = c.choice(["type", "delete", "duplicate"]) if path else "type"
    return _replace(document, path, op, c.json_value() if op == "type" else None)


def field_mutation(c, data, delimiter):
    """A line of a delimited file with a field dropped, duplicated, emptied or quoted."""
    lines = _lines(data)
    if not lines:
        return data
    i = c.integer(0, len(lines) - 1)
    ending = b"\n" if lines[i].endswith(b"\n") else b""
    fields = lines[i][:len(lines[i]) - len(ending)].split(delimiter)
    j = c.integer(0, len(fields) - 1)
    op = c.choice(["drop", "duplicate", "empty", "quote"])
    if op == "drop":
        del fields[j]
    elif op == "duplicate":
        fields.insert(j, fields[j])
    elif op == "empty":
        fields[j] = b""
    else:
        fields[j] = b'"' + fields[j]
    lines[i] = delimiter.join(fields) + ending
    return b"".join(lines)


def _npz_mutation(c, data):
    with np.load(io.BytesIO(data)) as z:
        arrays = {k: z[k] for k in z.files}
    key = c.choice(sorted(arrays))
    op = c.choice(["drop", "dtype", "shape", "values", "object"])
    if op == "drop":
        del arrays[key]
    elif op == "dtype":
        arrays[key] = arrays[key].astype(c.choice(
            ["float32", "int8", "uint64", "<U3", "bool", "complex64"]))
    elif op == "shape":
        arrays[key] = np.resize(arrays[key], c.choice(
            [(0,), (2, 2), (1,), (len(arrays[key]) + 5,)]))
    elif op == "values" and arrays[key].size and arrays[key].dtype.kind in "iu":
        flat = arrays[key].reshape(-1).copy()
        flat[c.integer(0, flat.size - 1)] = c.integer(0, 2**15)
        arrays[key] = flat.reshape(arrays[key].shape)
    elif op == "object":
        arrays[key] = np.array([{"a": 1}, None], dtype=object)
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _pickle_mutation(c, data):
    batch = pickle.loads(data, encoding="bytes")
    key = c.choice(sorted(batch))
    op = c.choice(["drop", "value", "data"])
    if op == "drop":
        del batch[key]
    elif op == "value":
        batch[key] = c.json_value()
    else:
        batch[key] = c.choice([
            np.zeros((3, 3072), "float32"), np.zeros((3, 100), "uint8"), np.zeros(5, "int64"),
            [1, 2, 3], b"bytes", np.zeros((3, 3072), "uint8")[:, ::2]])
    return pickle.dumps(batch, protocol=2)


def _toml_mutation(c, data):
    lines = _lines(data)
    i = c.integer(0, len(lines) - 1)
    key = lines[i].split(b"=")[0].strip() or b"x"
    value = c.choice([b"1", b"-3", b'"x"', b"[]", b"true", b"{a = 1}", b"1e400", b"nan",
                      b'[1, "a"]', b"2024-01-01"])
    op = c.choice(["value", "duplicate", "drop"])
    if op == "value":
        lines[i] = key + b" = " + value + b"\n"
    elif op == "duplicate":
        lines.insert(i, lines[i])
    else:
        del lines[i]
    return b"".join(lines)


def structured_mutation(c, kind, data):
    """A mutation of the structure ``kind`` has (a field, a value's type, an array's dtype),
    or None when it has none."""
    if kind == "json":
        return json.dumps(json_mutation(c, json.loads(data))).encode()
    if kind == "jsonl":
        lines = _lines(data)
        i = c.integer(0, len(lines) - 1)
        lines[i] = json.dumps(json_mutation(c, json.loads(lines[i]))).encode() + b"\n"
        return b"".join(lines)
    if kind in ("tsv", "csv-tab"):
        return field_mutation(c, data, b"\t")
    if kind == "csv":
        return field_mutation(c, data, b",")
    if kind == "gzip-jsonl":
        text = gzip.decompress(data)
        if c.choice([True, False]):
            text = byte_mutation(c, text)
        else:
            lines = _lines(text)
            i = c.integer(0, len(lines) - 1)
            lines[i] = json.dumps(json_mutation(c, json.loads(lines[i]))).encode() + b"\n"
            text = b"".join(lines)
        return gzip.compress(text, mtime=0)
    if kind == "npz":
        return _npz_mutation(c, data)
    if kind == "pickle":
        return _pickle_mutation(c, data)
    if kind == "toml":
        return _toml_mutation(c, data)
    return None


def mutate(c, kind, data):
    """1-3 mutations of the valid file ``data`` of ``kind``: the first structural or at the
    byte level, the others at the byte level."""
    for k in range(c.integer(1, 3)):
        new = None
        if k == 0 and c.choice([True, False]):
            try:
                new = structured_mutation(c, kind, data)
            except (ValueError, TypeError):
                new = None  # e.g. an array that no cast fits: mutate its bytes instead
        data = new if new is not None else byte_mutation(c, data)
    return data


@st.composite
def mutated(draw, kind, data):
    """The hypothesis strategy of :func:`mutate`'s inputs."""
    return mutate(HypothesisChoices(draw), kind, data)


def tally(outcomes, seconds):
    """The figure of one reader: inputs tried, outcomes by kind, time, the first few
    unexpected ones."""
    counts = {kind: 0 for kind in OUTCOMES}
    examples = {}
    for kind, detail in outcomes:
        counts[kind] += 1
        if kind not in ("read", "named_error") and detail not in examples:
            examples[detail] = kind
    return {"inputs": len(outcomes), "outcomes": counts, "seconds": round(seconds, 1),
            "unexpected_examples": list(examples)[:5]}


def run_target(target, root, examples, seed=0):
    """Read ``examples`` mutated inputs of ``target`` (:class:`RandomChoices` seeded by
    ``seed``); returns :func:`tally`'s figure. The readers' warnings (C4's skipped lines)
    are not shown."""
    import logging
    import random

    logging.getLogger("nemot").setLevel(logging.ERROR)
    rng = random.Random(f"{seed}:{target.name}")
    with target.prepared(root) as case:
        start = time.perf_counter()
        outcomes = [case.run(mutate(RandomChoices(rng), target.kind, case.original))
                    for _ in range(examples)]
        return tally(outcomes, time.perf_counter() - start)


# csv's limit on a field, raised nowhere by the readers: the huge line must meet it.
assert csv.field_size_limit() < HUGE
