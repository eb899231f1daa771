"""The Neuromodulation Gated Transformer (NGT): BERT with a gating block, on SuperGLUE.

The thesis' successor (ICLR 2023 Tiny Paper):
``model`` (the three variants on :class:`nemot.hosts.bert.ModulatedBert`), ``metrics``
(the paper's aggregation, significance), ``train`` (one fine-tuning run), ``experiment``
(the recipe of ``configs/ngt/*.toml`` in the experiment protocol) and ``cli`` (``nemot ngt``), on the shared SuperGLUE reader and
pair encoder (:mod:`nemot.data.benchmarks.superglue`) and metrics
(:mod:`nemot.evaluation.benchmarks`).

The names load on first use (:mod:`nemot.lazy`), so that ``nemot ngt --help`` loads no
backend.
"""

from nemot.lazy import lazy_exports

_MODEL = "nemot.ngt.model"
_RECIPE = "nemot.ngt.experiment"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    **{name: (_MODEL, name) for name in ("VARIANTS", "NGTModel", "build_ngt")},
    **{name: (_RECIPE, name) for name in ("Experiment", "load", "run_one")},
    "train_run": ("nemot.ngt.train", "train_run"),
})
