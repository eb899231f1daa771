"""HyperGrid Transformers (Tay et al.): T5 with task-conditioned weight gating,
co-trained on GLUE and SuperGLUE (docs/hypergrid.md).

The layers live in :mod:`nemot.modulation.hypergrid` (kinds ``hypergrid`` and
``hypergrid_og``, also hosted by NeMoT), the T5 host in :mod:`nemot.hosts.t5`, the
text-to-text data in :mod:`nemot.data.benchmarks.text_to_text` and
:mod:`nemot.data.benchmarks.mixture`, its scoring in :mod:`nemot.evaluation.rank_classification`; this package is the paper's
recipe: the wiring (:mod:`.model`), the experiments, the paper's numbers and its table
(:mod:`.experiment`) and the command line (:mod:`.cli`).
"""
