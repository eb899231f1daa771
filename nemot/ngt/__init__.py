"""The Neuromodulation Gated Transformer (NGT): BERT with a gating block, on SuperGLUE.

The thesis' successor (ICLR 2023 Tiny Paper):
``model`` (the three variants), ``superglue`` (readers and pair encoding),
``metrics`` (SuperGLUE scores, the paper's aggregation, significance),
``train`` (experiments from ``configs/ngt/*.toml``) and ``cli`` (``nemot ngt``).
"""

from nemot.ngt.model import (
    BERT_LARGE_CASED,
    BERT_LARGE_CASED_PRESET,
    VARIANTS,
    GatingBlock,
    NGTModel,
    build_ngt,
    load_backbone,
)
from nemot.ngt.superglue import TASKS, PairEncoder, PairRow, SuperGLUEFormatError, TaskData, load_task, read_task
from nemot.ngt.train import Experiment, run_experiment, train_run, write_report

__all__ = [
    "BERT_LARGE_CASED",
    "BERT_LARGE_CASED_PRESET",
    "VARIANTS",
    "TASKS",
    "GatingBlock",
    "NGTModel",
    "build_ngt",
    "load_backbone",
    "PairEncoder",
    "PairRow",
    "SuperGLUEFormatError",
    "TaskData",
    "load_task",
    "read_task",
    "Experiment",
    "run_experiment",
    "train_run",
    "write_report",
]
