"""nemot: the Neuromodulated Transformer (NeMoT) in Keras 3, in KerasHub's shape.

``import nemot`` is cheap: it loads the configuration only (no TensorFlow, no Keras), so
that tokenizers and data-preparation workers start fast. The other public names are
imported on first use. nemot's Keras classes are registered with Keras as
soon as Keras is loaded (:mod:`nemot.registration`), so KerasHub's generic loaders
(``keras_hub.models.CausalLM.from_preset(dir)``) and ``keras.models.load_model`` read
nemot's presets and ``.keras`` files; ``nemot.load_model(path)`` does the latter too.

TensorFlow, when it loads after ``import nemot``, loads without its start-up notices
(CUDA, oneDNN and CPU-feature lines; :func:`nemot.console.quiet_backend`), in scripts and
notebooks as on the command line; ``NEMOT_BACKEND_LOGS=1`` keeps them.
"""

from nemot import console as _console
from nemot.config import NeMoTConfig
from nemot.lazy import lazy_exports

if not _console.backend_logs_wanted():
    _console.quiet_backend()

__version__ = "0.1.0"

_LAZY = {
    "Tokenizer": ("nemot.data.tokenizer", "Tokenizer"),
    "attention_mask": ("nemot.layers.masks", "attention_mask"),
    "NeMoTBackbone": ("nemot.models.nemot_backbone", "NeMoTBackbone"),
    "NeMoTCausalLM": ("nemot.models.nemot_causal_lm", "NeMoTCausalLM"),
    "NeMoTPreprocessor": ("nemot.models.nemot_preprocessor", "NeMoTPreprocessor"),
    "NeMoTTokenizer": ("nemot.models.nemot_tokenizer", "NeMoTTokenizer"),
    "build_model": ("nemot.models.nemot_causal_lm", "build_model"),
    "parameter_breakdown": ("nemot.models.nemot_causal_lm", "parameter_breakdown"),
    "load_weights_partial": ("nemot.models.nemot_causal_lm", "load_weights_partial"),
    "load_model": ("nemot.models.weights", "load_model"),
    "GPT2BaselineBackbone": ("nemot.models.baseline", "GPT2BaselineBackbone"),
    "GPT2BaselineCausalLM": ("nemot.models.baseline", "GPT2BaselineCausalLM"),
    "build_baseline": ("nemot.models.baseline", "build_baseline"),
    "config_from_gpt2": ("nemot.models.gpt2", "config_from_gpt2"),
    "export_vanilla_set": ("nemot.models.gpt2", "export_vanilla_set"),
    "NeMoTLoss": ("nemot.models.losses", "NeMoTLoss"),
    "ModulationSpec": ("nemot.modulation.spec", "ModulationSpec"),
    "generate": ("nemot.models.generation", "generate"),
    "perplexity": ("nemot.evaluation.perplexity", "perplexity"),
    "metrics": ("nemot.evaluation.metrics", None),
    "optimizers": ("nemot.optimizers", None),
}

__getattr__, __dir__, _lazy_names = lazy_exports(__name__, _LAZY)
__all__ = ["NeMoTConfig", *_lazy_names]


from nemot import registration  # noqa: E402  (after the names the models import)

registration.install()
