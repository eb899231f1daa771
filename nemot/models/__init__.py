"""NeMoT and its GPT-2 baseline as keras.Models, their loss, and GPT-2 checkpoints
(importing this registers the model classes with Keras)."""

from nemot.models.baseline import GPT2Baseline, build_baseline
from nemot.models.losses import NeMoTLoss
from nemot.models.nemot import NeMoT, build_model, load_weights_partial, parameter_breakdown
from nemot.models.registry import MODEL_NAMES, build
