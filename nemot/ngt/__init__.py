"""The Neuromodulation Gated Transformer (NGT): BERT with a gating block, on SuperGLUE.

The thesis' successor (ICLR 2023 Tiny Paper):
``model`` (the three variants on :class:`nemot.models.bert.ModulatedBert`), ``superglue`` (readers and pair encoding),
``metrics`` (SuperGLUE scores, the paper's aggregation, significance),
``train`` (experiments from ``configs/ngt/*.toml``) and ``cli`` (``nemot ngt``).
"""

from nemot.ngt.model import VARIANTS, NGTModel, build_ngt
from nemot.ngt.superglue import TASKS, PairEncoder, PairRow, SuperGLUEFormatError, TaskData, load_task, read_task
from nemot.ngt.train import Experiment, run_experiment, train_run, write_report

__all__ = [
    "VARIANTS",
    "TASKS",
    "NGTModel",
    "build_ngt",
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
