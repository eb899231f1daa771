"""NeMoT and its baselines as keras.Models."""

from nemot.models.nemot import NeMoT, build_model, parameter_breakdown
