"""Evaluation: multiple choice (:mod:`nemot.evaluation.choices`), metrics on strings,
sliding-window perplexity, reports and plots (docs/spec.md sections 4, 6, 8); GLUE and
SuperGLUE metrics and averages in :mod:`nemot.evaluation.benchmarks`.

The names below load on first use (:mod:`nemot.lazy`), so that ``nemot evaluate --help``
loads no backend.
"""

from nemot.lazy import lazy_exports

_PERPLEXITY = "nemot.evaluation.perplexity"
_PLOTS = "nemot.evaluation.plots"
_REPORT = "nemot.evaluation.report"

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "metrics": ("nemot.evaluation.metrics", None),
    "thesis_numbers": ("nemot.evaluation.thesis_numbers", None),
    **{name: (_PERPLEXITY, name) for name in ("PerplexityResult", "perplexity",
                                               "sliding_windows")},
    **{name: (_PLOTS, name) for name in ("best_epochs", "gate_map", "gate_maps",
                                         "plot_gate_maps", "plot_training_curves",
                                         "read_training_log")},
    **{name: (_REPORT, name) for name in ("evaluate_records", "lm_table", "read_predictions",
                                          "results_table", "write_lm_report", "write_report")},
})
