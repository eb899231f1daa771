"""GLUE + SuperGLUE as one multi-task stream for a T5 backbone: the text-to-text examples
(:mod:`nemot.data.benchmarks.text_to_text`) tokenised and mixed in proportion to each task's size
(T5's ``en_mix``; rate cap optional), with their dev sets for scoring
(:mod:`nemot.evaluation.rank_classification`).

Mixing is per example, as T5's mixtures: example ``k`` of the stream comes from
``TaskSampler(mode="proportional", cap=K).task_at(k)`` and is that task's next example
in its own seeded order (a new permutation per pass), so a run resumed at batch ``s``
continues with exactly the examples it would have seen (:func:`sampled_batches` at
example ``s × batch``). A task's size is its number of training sequences (ReCoRD:
one per gold answer, as T5).

Model inputs (:class:`nemot.hosts.t5.ModulatedT5`'s): ``encoder_token_ids`` (the input
and ``</s>``, cut to ``max_input_length``), ``decoder_token_ids`` (``<pad>`` then the
target shifted right, T5's decoder start), their padding masks, ``task_index``; targets:
the target and ``</s>``, ``-1`` at padding.

Example:
    >>> mixture = load_mixture(tokenizer, glue_dir="glue_data", superglue_dir="SuperGLUE")
    >>> ds = mixture.train_dataset(start_batch=0, batch_size=128)
"""

import dataclasses
import itertools

import numpy as np

from nemot.data.batching import epoch_indices, generator_dataset, replica_share
from nemot.data.benchmarks import glue, superglue, text_to_text
from nemot.data.benchmarks.text_to_text import GLUE_TASKS, TASKS
from nemot.data.sampling import TaskSampler, sampled_batches

PAD_ID = 0
IGNORE = -1
# Dev sets scored per task key: MNLI also on its mismatched file.
EXTRA_DEV = {"glue/MNLI": ("MNLI-mm",)}


@dataclasses.dataclass
class DevSet:
    """One scored dev file: its examples and (SuperGLUE) the reader's rows."""

    name: str
    examples: list
    data: object = None


@dataclasses.dataclass
class TokenizedTask:
    """A task's training sequences ``(input_ids, target_ids)`` and its dev sets."""

    key: str
    train: list
    dev: list


def token_ids(tokenizer, texts, max_length):
    """Token ids of ``texts`` with ``</s>``, keeping the first ``max_length`` - 1 tokens."""
    eos = tokenizer.token_to_id("</s>")
    out = []
    for start in range(0, len(texts), 1024):
        ids = tokenizer(list(texts[start:start + 1024]))
        ids = ids.to_list() if hasattr(ids, "to_list") else ids
        out.extend(np.array(list(i[:max_length - 1]) + [eos], np.int32) for i in ids)
    return out


def _split_examples(key, split, glue_dir, superglue_dir, glue_source="files",
                    superglue_source="files"):
    """The text-to-text examples of one task split, and (SuperGLUE) the reader's data."""
    benchmark, task = key.split("/")
    if benchmark == "glue":
        rows = glue.read_task(task, glue_dir, split, source=glue_source)
        return [text_to_text.glue_example(e) for e in rows], None
    data = superglue.load_task(task, "val" if split == "dev" else split, superglue_dir,
                               source=superglue_source)
    return text_to_text.superglue_examples(data), data


def load_task(key, tokenizer, glue_dir=None, superglue_dir=None, max_input_length=512,
              max_target_length=32, dev=True, glue_source="files", superglue_source="files"):
    """Read, format and tokenise one task's train split (and its dev sets); the sources
    are those of :func:`nemot.data.benchmarks.glue.read_task` and
    :func:`nemot.data.benchmarks.superglue.load_task` (files, a TFDS directory, the hub)."""
    if key not in TASKS:
        raise ValueError(f"task {key!r}: expected one of {list(TASKS)}")
    directory = glue_dir if key in GLUE_TASKS else superglue_dir
    if directory is None and (glue_source if key in GLUE_TASKS else superglue_source) != "hub":
        raise ValueError(f"task {key!r} needs data.{key.split('/')[0]}_dir")
    sources = dict(glue_source=glue_source, superglue_source=superglue_source)
    examples, _ = _split_examples(key, "train", glue_dir, superglue_dir, **sources)
    pairs = [(e.inputs, t) for e in examples for t in e.targets]
    train = list(zip(token_ids(tokenizer, [p[0] for p in pairs], max_input_length),
                     token_ids(tokenizer, [p[1] for p in pairs], max_target_length)))
    dev_sets = []
    if dev:
        examples, data = _split_examples(key, "dev", glue_dir, superglue_dir, **sources)
        dev_sets.append(DevSet(key.split("/")[1], examples, data))
        for extra in EXTRA_DEV.get(key, ()):
            rows = glue.read_task(extra, glue_dir, "dev", source=glue_source)
            dev_sets.append(DevSet(extra, [text_to_text.glue_example(e) for e in rows]))
    return TokenizedTask(key, train, dev_sets)


def _pad(arrays, length, value):
    out = np.full((len(arrays), length), value, np.int32)
    for i, a in enumerate(arrays):
        out[i, :len(a)] = a
    return out


def model_batch(inputs, targets, task_index, max_input_length, max_target_length):
    """``(x, y)`` numpy arrays for :class:`nemot.hosts.t5.ModulatedT5`."""
    encoder = _pad(inputs, max_input_length, PAD_ID)
    labels = _pad(targets, max_target_length, IGNORE)
    decoder = np.concatenate([np.full((len(targets), 1), PAD_ID, np.int32),
                              np.maximum(labels[:, :-1], PAD_ID)], axis=1)
    x = {"encoder_token_ids": encoder,
         "encoder_padding_mask": (np.arange(max_input_length)[None]
                                  < np.array([len(a) for a in inputs])[:, None]).astype(np.int32),
         "decoder_token_ids": decoder,
         "decoder_padding_mask": (labels != IGNORE).astype(np.int32),
         "task_index": np.asarray(task_index, np.int32)}
    return x, labels


class Mixture:
    """The tokenised tasks and their mixture for training (their dev sets are scored by
    :func:`nemot.evaluation.rank_classification.evaluate`).

    Args:
        tasks: :class:`TokenizedTask` s; their order is the task index.
        tokenizer: the T5 tokenizer (candidate targets are tokenised with it).
        max_input_length, max_target_length: padded lengths (inputs are cut).
        cap: examples-proportional mixing's rate cap K (None: uncapped).
        seed: mixing and per-task orders.
    """

    def __init__(self, tasks, tokenizer, max_input_length=512, max_target_length=32, cap=None,
                 seed=0):
        self.tasks = list(tasks)
        self.index = {t.key: i for i, t in enumerate(self.tasks)}
        self.tokenizer = tokenizer
        self.max_input_length, self.max_target_length = max_input_length, max_target_length
        self.seed = seed
        self.sampler = TaskSampler({t.key: len(t.train) for t in self.tasks}, mode="proportional",
                                   cap=cap, seed=seed)

    @property
    def keys(self):
        return [t.key for t in self.tasks]

    def _task_stream(self, key, start):
        """``key``'s training sequences from its ``start``-th draw: a new seeded order per pass."""
        train = self.tasks[self.index[key]].train
        for i in epoch_indices(len(train), (self.seed, self.index[key]), start):
            yield train[i]

    def examples(self, start_example=0):
        """``(task index, (input_ids, target_ids))`` from example ``start_example`` on, forever."""
        for key, pair in sampled_batches(self._task_stream, self.sampler, start_example):
            yield self.index[key], pair

    def train_batches(self, start_batch, batch_size, input_context=None):
        """Per-replica ``(x, y)`` numpy batches from global batch ``start_batch`` on."""
        per_replica, first, share = replica_share(batch_size, input_context)
        stream = self.examples(start_batch * batch_size)
        while True:
            block = list(itertools.islice(stream, batch_size))[first:first + share]
            for r in range(0, share, per_replica):
                rows = block[r:r + per_replica]
                yield model_batch([p[0] for _, p in rows], [p[1] for _, p in rows],
                                  [t for t, _ in rows], self.max_input_length,
                                  self.max_target_length)

    def train_dataset(self, start_batch, batch_size, input_context=None):
        """The infinite ``tf.data`` training stream (the trainer's ``DataSource.train``)."""
        import tensorflow as tf

        per_replica = replica_share(batch_size, input_context)[0]

        def spec(width):
            return tf.TensorSpec([per_replica, width], tf.int32)

        x_spec = {"encoder_token_ids": spec(self.max_input_length),
                  "encoder_padding_mask": spec(self.max_input_length),
                  "decoder_token_ids": spec(self.max_target_length),
                  "decoder_padding_mask": spec(self.max_target_length),
                  "task_index": tf.TensorSpec([per_replica], tf.int32)}
        return generator_dataset(  # rows are split per global batch in train_batches
            lambda: self.train_batches(start_batch, batch_size, input_context),
            (x_spec, spec(self.max_target_length)), input_context)


def load_mixture(tokenizer, glue_dir=None, superglue_dir=None, tasks=TASKS, max_input_length=512,
                 max_target_length=32, cap=None, seed=0, dev=True, glue_source="files",
                 superglue_source="files"):
    """:class:`Mixture` of ``tasks`` (default: GLUE without WNLI and SuperGLUE, the 16 tasks
    the HyperGrid paper co-trains)."""
    loaded = [load_task(key, tokenizer, glue_dir, superglue_dir, max_input_length,
                        max_target_length, dev, glue_source, superglue_source) for key in tasks]
    return Mixture(loaded, tokenizer, max_input_length, max_target_length, cap, seed)
