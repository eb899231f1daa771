"""Public alias: ``nemot.schedules.WarmupCosine`` (API.md)."""

from nemot.training.schedules import WarmupCosine, build_schedule

__all__ = ["WarmupCosine", "build_schedule"]
