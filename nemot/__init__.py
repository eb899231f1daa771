"""nemot: the Neuromodulated Transformer (NeMoT) in Keras 3.

``import nemot`` is cheap: it loads the configuration only (no TensorFlow, no Keras), so
that tokenizers and data-preparation workers start fast. The other public names are
imported on first use, and Keras learns the model classes when their modules load:
``nemot.load_model(path)`` loads a saved ``.keras`` NeMoT, baseline or NGT model
(``keras.models.load_model`` works too once ``nemot.models`` is imported).

TensorFlow, when it loads after ``import nemot``, loads without its start-up notices
(CUDA, oneDNN and CPU-feature lines; :func:`nemot.console.quiet_backend`), in scripts and
notebooks as on the command line; ``NEMOT_BACKEND_LOGS=1`` keeps them.
"""

import importlib

from nemot import console as _console
from nemot.config import NeMoTConfig
from nemot.lazy import lazy_exports

if not _console.backend_logs_wanted():
    _console.quiet_backend()

__version__ = "0.1.0"

_LAZY = {
    "Tokenizer": ("nemot.data.tokenizer", "Tokenizer"),
    "attention_mask": ("nemot.layers.masks", "attention_mask"),
    "NeMoT": ("nemot.models.nemot", "NeMoT"),
    "build_model": ("nemot.models.nemot", "build_model"),
    "parameter_breakdown": ("nemot.models.nemot", "parameter_breakdown"),
    "load_weights_partial": ("nemot.models.nemot", "load_weights_partial"),
    "GPT2Baseline": ("nemot.models.baseline", "GPT2Baseline"),
    "build_baseline": ("nemot.models.baseline", "build_baseline"),
    "config_from_gpt2": ("nemot.models.gpt2", "config_from_gpt2"),
    "export_vanilla_set": ("nemot.models.gpt2", "export_vanilla_set"),
    "NeMoTLoss": ("nemot.models.losses", "NeMoTLoss"),
    "ModulationSpec": ("nemot.modulation.spec", "ModulationSpec"),
    "generate": ("nemot.evaluation.decoding", "generate"),
    "perplexity": ("nemot.evaluation.perplexity", "perplexity"),
    "metrics": ("nemot.evaluation.metrics", None),
    "schedules": ("nemot.schedules", None),
    "optimizers": ("nemot.optimizers", None),
}

# Modules whose import registers Keras classes that saved models name.
SERIALIZABLE_MODULES = ("nemot.models", "nemot.schedules", "nemot.optimizers", "nemot.ngt.model")

__getattr__, __dir__, _lazy_names = lazy_exports(__name__, _LAZY)
__all__ = ["NeMoTConfig", "load_model", *_lazy_names]


def load_model(path, compile=True, **kwargs):
    """``keras.models.load_model`` after registering nemot's Keras classes."""
    for module in SERIALIZABLE_MODULES:
        importlib.import_module(module)
    import keras

    return keras.models.load_model(path, compile=compile, **kwargs)
