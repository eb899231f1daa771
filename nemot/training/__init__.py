"""Training: run configs, the trainer, schedules, callbacks, checkpoints and distribution.

``NeMoTLoss`` lives with the models (:mod:`nemot.models.losses`) and is re-exported here.
"""

from nemot.models.losses import NeMoTLoss
from nemot.training.schedules import WarmupCosine, build_schedule
