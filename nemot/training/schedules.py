"""Learning-rate schedules of the thesis runs (docs/spec.md section 5)."""

import dataclasses
import math

import keras
from keras import ops

from nemot import ranges
from nemot.ranges import Count, NonNegativeFloat, NonNegativeInt, PositiveFloat, Probability


@keras.saving.register_keras_serializable(package="nemot")
class WarmupCosine(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up then cosine decay with a floor, as the original code computed it.

    For ``step < warmup_steps``: ``start + (peak - start) * step / warmup_steps``;
    otherwise ``max(peak * (1 + cos(pi * min(max(step - W, 1), D) / D)) / 2, floor)``.
    (The ``max(., 1)`` is the original's: the first step after warm-up is
    already one decay step in.)

    Args:
        start, peak, floor: learning rates ("start, warm-up, decay" of Table 3.3).
        warmup_steps: W.
        decay_steps: D.

    Example:
        >>> lr = WarmupCosine(start=5e-5, peak=1e-4, floor=1e-5,
        ...                   warmup_steps=2000, decay_steps=120000)
        >>> float(lr(1000))   # 7.5e-05
    """

    def __init__(self, start, peak, floor, warmup_steps, decay_steps):
        self.start = start
        self.peak = peak
        self.floor = floor
        self.warmup_steps = warmup_steps
        self.decay_steps = decay_steps

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = float(self.warmup_steps)
        decay = float(self.decay_steps)
        warm = self.start + (self.peak - self.start) * step / max(warmup, 1.0)
        progress = ops.minimum(ops.maximum(step - warmup, 1.0), decay) / decay
        cosine = ops.maximum(self.peak * 0.5 * (1.0 + ops.cos(math.pi * progress)), self.floor)
        return ops.where(step < warmup, warm, cosine)

    def get_config(self):
        return {"start": self.start, "peak": self.peak, "floor": self.floor,
                "warmup_steps": self.warmup_steps, "decay_steps": self.decay_steps}


@dataclasses.dataclass(frozen=True)
class Constant:
    """``type = "constant"``: one learning rate throughout."""

    rate: PositiveFloat


@dataclasses.dataclass(frozen=True)
class Cosine:
    """``type = "cosine"``: Keras ``CosineDecay`` from ``rate`` to ``alpha * rate`` over
    ``decay_steps`` (pre-training)."""

    rate: PositiveFloat
    decay_steps: Count
    alpha: Probability = 0.0


@dataclasses.dataclass(frozen=True)
class WarmupCosineTable:
    """``type = "warmup_cosine"``: :class:`WarmupCosine`'s arguments."""

    start: NonNegativeFloat
    peak: PositiveFloat
    floor: NonNegativeFloat
    warmup_steps: NonNegativeInt
    decay_steps: Count


TABLES = {"constant": Constant, "cosine": Cosine, "warmup_cosine": WarmupCosineTable}


def build_schedule(spec):
    """A schedule from a config table.

    ``{"type": "constant", "rate": 1e-5}``, ``{"type": "cosine", "rate": 1e-4,
    "decay_steps": 1000000}`` (Keras ``CosineDecay`` to 0, pre-training) or
    ``{"type": "warmup_cosine", "start": ..., "peak": ..., "floor": ...,
    "warmup_steps": ..., "decay_steps": ...}``. A missing or unknown key, or a value of
    the wrong type or out of its range (:data:`TABLES`), raises ``ValueError`` naming it.
    """
    spec = dict(spec)
    kind = spec.pop("type", None)
    if kind not in TABLES:
        raise ValueError(f"learning-rate schedule type {kind!r}: expected 'constant', "
                         "'cosine' or 'warmup_cosine'")
    table = TABLES[kind]
    fields = {f.name: f for f in dataclasses.fields(table)}
    unknown = sorted(set(spec) - set(fields))
    missing = [name for name, f in fields.items()
               if name not in spec and f.default is dataclasses.MISSING]
    if unknown or missing:
        raise ValueError(f"learning-rate schedule {kind!r}: "
                         f"{f'unknown key(s) {unknown}' if unknown else f'missing {missing}'}; "
                         f"expected {sorted(fields)}")
    values = table(**spec)
    ranges.check(values)
    if kind == "constant":
        return float(values.rate)
    if kind == "cosine":
        return keras.optimizers.schedules.CosineDecay(values.rate, values.decay_steps,
                                                      alpha=values.alpha)
    return WarmupCosine(**dataclasses.asdict(values))
