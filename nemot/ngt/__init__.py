"""The Neuromodulation Gated Transformer (NGT): BERT with a gating block, on SuperGLUE.

The thesis' successor (ICLR 2023 Tiny Paper):
``model`` (the three variants), ``metrics`` (the paper's aggregation, significance),
``train`` (experiments from ``configs/ngt/*.toml``) and ``cli`` (``nemot ngt``), on the
shared SuperGLUE reader and pair encoder (:mod:`nemot.data.superglue`) and metrics
(:mod:`nemot.evaluation.benchmarks`).
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
from nemot.ngt.train import Experiment, run_experiment, train_run, write_report

__all__ = [
    "BERT_LARGE_CASED",
    "BERT_LARGE_CASED_PRESET",
    "VARIANTS",
    "GatingBlock",
    "NGTModel",
    "build_ngt",
    "load_backbone",
    "Experiment",
    "run_experiment",
    "train_run",
    "write_report",
]
