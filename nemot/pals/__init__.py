"""PALs: projected attention layers and annealed sampling (Rotzal's report, after Stickland &
Murray 2019), reproduced on SST-5, Quora and STS-B.

The mechanism is :mod:`nemot.modulation.pals` (kind ``"pals"``) and the sampler
:mod:`nemot.data.sampling`; this package is the thin reproduction: ``model``
(:class:`~nemot.pals.model.PALBert`, BERT with PALs and the task heads), ``tasks``,
``data`` (minBERT and GLUE readers, encoding, the annealed batch stream), ``metrics``,
``experiment`` (``configs/pals/*.toml``, ``run_one``, the paper's numbers), ``cli``
(``nemot pals``) and ``synthetic`` (data and a BERT for runs without downloads).
See docs/pals.md.
"""
