"""nemot: the Neuromodulated Transformer (NeMoT) in Keras 3 / TensorFlow."""

from nemot.config import NeMoTConfig

__version__ = "0.1.0"
