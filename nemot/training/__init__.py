"""Training: run configs, the trainer, schedules, callbacks, checkpoints and distribution.

``NeMoTLoss`` lives with the models (:mod:`nemot.models.losses`) and is re-exported here.
The names load on first use (:mod:`nemot.lazy`), so that the ``nemot pretrain|finetune``
command line starts without a backend.
"""

from nemot.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "NeMoTLoss": ("nemot.models.losses", "NeMoTLoss"),
    "WarmupCosine": ("nemot.training.schedules", "WarmupCosine"),
    "build_schedule": ("nemot.training.schedules", "build_schedule"),
})
