"""Training: the combined loss, schedules and run orchestration."""

from nemot.training.losses import NeMoTLoss
from nemot.training.schedules import WarmupCosine, build_schedule
