"""``DataConfig``: where a run's data is and how it is formatted (the ``[data]`` table
of a run config)."""

import dataclasses

from nemot import ranges, vocab
from nemot.data.c4.stream import FILE_ORDERS, MAX_BAD_LINES, SOURCES, TFDS_NAME
from nemot.data.qa.format import MQA_MODES
from nemot.ranges import Count, NonNegativeInt

SAMPLING = ("uniform", "annealed", "proportional", "sqrt", "round_robin")


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Where the training data is and how it is formatted.

    Args:
        dir: local directory of the raw files (C4 ``*.json.gz`` for pre-training,
            the dataset's raw layout for fine-tuning, one sub-directory per
            dataset name for general training); ``None`` loads from the hub.
        dataset: registry name of the fine-tuning dataset (``race``, ``squad_v2``, ...).
        datasets: general training: the pool's dataset names (empty = the seed datasets).
        train_split, validation_split: split names (validation_split ``""`` = none).
        task_token: output block / task token of fine-tuning examples (thesis: ``lm``);
            ``None`` uses each example's own ``mqa``/``gqa``.
        mode: ``dec`` or ``enc``.
        mqa_mode: ``label`` or ``generate``.
        pack: pre-training: pack documents into windows (off in the thesis).
        file_order: pre-training: ``random`` (seeded) or ``directory`` (original code).
        source: pre-training: ``files`` (``dir`` holds raw C4 files or data_prep shards) or
            ``tfds`` (``dir`` is a TFDS data directory, local or ``gs://``, with
            ``tfds_name`` prepared in it).
        tfds_name: pre-training from TFDS: ``c4/en:VERSION`` (``c4/en`` takes the version
            tensorflow-datasets picks).
        max_bad_lines: pre-training: malformed C4 lines skipped (and logged) per pass over
            the files before the run stops with a ``DataError`` (0: stop at the first).
        validation_examples: how many validation examples the metric decodes (0 = all).
        validation_batches: how many validation batches the loss reads (0 = all).
        max_new_tokens: decoding length limit for generation metrics.
        sampling: general training: ``"uniform"`` draws a dataset per example (the
            thesis); a :class:`nemot.data.sampling.TaskSampler` mode
            (``"annealed"``, ``"proportional"``, ``"sqrt"``, ``"round_robin"``) draws one
            dataset per batch, weighted by dataset size (annealed: over ``train.epochs``).
    """

    dir: str | None = None
    dataset: str | None = None
    datasets: tuple = ()
    train_split: str = "train"
    validation_split: str = "dev"
    task_token: str | None = None
    mode: str = "dec"
    mqa_mode: str = "label"
    pack: bool = False
    file_order: str = "random"
    source: str = "files"
    tfds_name: str = TFDS_NAME
    max_bad_lines: NonNegativeInt = MAX_BAD_LINES
    validation_examples: NonNegativeInt = 0
    validation_batches: NonNegativeInt = 0
    max_new_tokens: Count = 32
    sampling: str = "uniform"

    def check(self, source="config"):
        """Raise ``ValueError`` naming ``source`` and the key for a value out of range."""
        for key, value, choices in (("mode", self.mode, vocab.MODES),
                                    ("mqa_mode", self.mqa_mode, MQA_MODES),
                                    ("file_order", self.file_order, FILE_ORDERS),
                                    ("source", self.source, SOURCES),
                                    ("sampling", self.sampling, SAMPLING)):
            if value not in choices:
                raise ValueError(f"{source}: data.{key} = {value!r}: expected one of "
                                 f"{list(choices)}")
        try:
            ranges.check(self)
        except ValueError as error:
            raise ValueError(f"{source}: data.{error}") from None
