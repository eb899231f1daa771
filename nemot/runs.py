"""``nemot.runs``: the experiment protocol's names, kept here for existing code; they live
in :mod:`nemot.experiments` (``protocol``, ``config``, ``report``). See docs/runs.md."""

from nemot.experiments.config import settings as table
from nemot.experiments.protocol import (MANIFEST, METRICS, REPRODUCTIONS, apply_overrides,
                                        collect, experiment_module, is_synthetic, load,
                                        protocol_keys, read_config, read_experiment, register,
                                        reproduction_of, run_and_record, run_config, run_dir,
                                        run_metrics, select_epoch)
from nemot.experiments.report import (CONFIDENCE, FIGURE, Summary, hedges_g, json_safe,
                                      paper_numbers, plot_report, report, summarize, welch,
                                      write_report)

__all__ = ["CONFIDENCE", "FIGURE", "MANIFEST", "METRICS", "REPRODUCTIONS", "Summary",
           "apply_overrides", "collect", "experiment_module", "hedges_g", "is_synthetic",
           "json_safe", "load", "paper_numbers", "plot_report", "protocol_keys", "read_config",
           "read_experiment", "register", "report", "reproduction_of", "run_and_record",
           "run_config", "run_dir", "run_metrics", "select_epoch", "summarize", "table",
           "welch", "write_report"]
