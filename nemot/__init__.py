"""nemot: the Neuromodulated Transformer (NeMoT) in Keras 3 / TensorFlow."""

from nemot import schedules
from nemot.config import NeMoTConfig
from nemot.layers.masks import attention_mask
from nemot.models import NeMoT, build_model, parameter_breakdown

__version__ = "0.1.0"
