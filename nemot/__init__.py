"""nemot: the Neuromodulated Transformer (NeMoT) in Keras 3 / TensorFlow.

``import nemot`` registers the model classes with Keras, so that
``keras.models.load_model("model.keras")`` works right after it (NGT models:
``import nemot.ngt``). The other public names (API.md) are imported on first use.
"""

import importlib

from nemot import models as _models  # noqa: F401  (registers NeMoT's Keras classes)
from nemot import schedules as _schedules  # noqa: F401  (registers WarmupCosine)
from nemot.config import NeMoTConfig

__version__ = "0.1.0"

_LAZY = {
    "Tokenizer": ("nemot.data.tokenizer", "Tokenizer"),
    "attention_mask": ("nemot.layers.masks", "attention_mask"),
    "NeMoT": ("nemot.models.nemot", "NeMoT"),
    "build_model": ("nemot.models.nemot", "build_model"),
    "parameter_breakdown": ("nemot.models.nemot", "parameter_breakdown"),
    "load_weights_partial": ("nemot.models.nemot", "load_weights_partial"),
    "GPT2Baseline": ("nemot.models.gpt2", "GPT2Baseline"),
    "build_baseline": ("nemot.models.gpt2", "build_baseline"),
    "config_from_gpt2": ("nemot.models.gpt2", "config_from_gpt2"),
    "export_vanilla_set": ("nemot.models.gpt2", "export_vanilla_set"),
    "NeMoTLoss": ("nemot.training.losses", "NeMoTLoss"),
    "generate": ("nemot.evaluation.decoding", "generate"),
    "perplexity": ("nemot.evaluation.perplexity", "perplexity"),
    "metrics": ("nemot.evaluation.metrics", None),
    "schedules": ("nemot.schedules", None),
}

__all__ = ["NeMoTConfig", *_LAZY]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'nemot' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
