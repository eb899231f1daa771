"""The comparison of every modulation mechanism on one backbone and the same multi-task
data: the model wiring (:mod:`.model`), the recipe for ``nemot runs``
(:mod:`.experiment`, on the PALs report's minBERT tasks; :mod:`.pool`, on a thesis run) and the
side-by-side step timing (:mod:`.timing`). Design and choices: ``docs/compare.md``."""
