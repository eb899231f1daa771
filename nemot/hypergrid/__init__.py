"""HyperGrid Transformers (Tay et al., seed 004): T5 with task-conditioned weight gating,
co-trained on GLUE and SuperGLUE (issue 17; docs/hypergrid.md).

The layers live in :mod:`nemot.modulation.hypergrid` (kinds ``hypergrid`` and
``hypergrid_og``, also hosted by NeMoT); this package is the paper's reproduction: the T5
wiring (:mod:`.model`, :mod:`.t5`), the data (:mod:`.glue`, :mod:`.text_to_text`,
:mod:`.data`, :mod:`.synthetic`), the metrics, the experiment protocol of ``nemot runs``
(:mod:`.experiment`), the report and the command line (:mod:`.cli`).
"""
