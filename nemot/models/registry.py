"""Model names of run configs and the command line -> the function that builds them."""

from nemot.models.baseline import build_baseline
from nemot.models.nemot_causal_lm import build_model

BUILDERS = {"nemot": build_model, "gpt2_baseline": build_baseline}
MODEL_NAMES = tuple(BUILDERS)


def build(model_name, config, gpt2=None):
    """Build model ``model_name`` (:data:`MODEL_NAMES`) from a ``NeMoTConfig``.

    Example:
        >>> model = build("gpt2_baseline", NeMoTConfig.preset("tiny"))
    """
    if model_name not in BUILDERS:
        raise ValueError(f"model name {model_name!r}: expected one of {MODEL_NAMES}")
    return BUILDERS[model_name](config, gpt2=gpt2)
