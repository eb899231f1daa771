"""Evaluation: metrics on strings, sliding-window perplexity, reports and plots (docs/spec.md sections 4, 6, 8)."""

from nemot.evaluation import metrics, thesis_numbers
from nemot.evaluation.perplexity import PerplexityResult, perplexity, sliding_windows
from nemot.evaluation.plots import (
    best_epochs,
    gate_map,
    gate_maps,
    plot_gate_maps,
    plot_training_curves,
    read_training_log,
)
from nemot.evaluation.report import (
    evaluate_records,
    lm_table,
    read_predictions,
    results_table,
    write_lm_report,
    write_report,
)
