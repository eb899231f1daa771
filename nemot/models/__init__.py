"""NeMoT and its GPT-2 baseline as keras.Models (importing this registers both with Keras)."""

from nemot.models.gpt2 import GPT2Baseline, build, build_baseline
from nemot.models.nemot import NeMoT, build_model, load_weights_partial, parameter_breakdown
