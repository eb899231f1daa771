"""NeMoT and its GPT-2 baseline in KerasHub's shape (backbone, causal LM task, preprocessor,
tokenizer), their loss, and GPT-2 checkpoints. Importing this registers the classes with
Keras (``import nemot`` does it as soon as Keras is loaded: :mod:`nemot.registration`)."""

from nemot.models.baseline import (GPT2BaselineBackbone, GPT2BaselineCausalLM,
                                   GPT2BaselinePreprocessor, GPT2BaselineTokenizer, build_baseline)
from nemot.models.losses import NeMoTLoss
from nemot.models.nemot_backbone import NeMoTBackbone
from nemot.models.nemot_causal_lm import (NeMoTCausalLM, build_model, load_weights_partial,
                                          parameter_breakdown)
from nemot.models.nemot_preprocessor import NeMoTPreprocessor
from nemot.models.nemot_tokenizer import NeMoTTokenizer
from nemot.models.registry import MODEL_NAMES, build
