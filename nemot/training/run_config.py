"""Run configs: one TOML file per thesis run (``configs/*.toml``), plus overrides.

A run config has a few top-level keys and five tables::

    name = "race"               # run name; output goes to checkpoints/<name> by default
    kind = "finetune"           # "pretrain" | "finetune" | "general"
    seed = 0
    model_name = "nemot"        # "nemot" | "gpt2_baseline"
    gpt2 = "gpt2_base_en"       # GPT-2 weights for the vanilla set (KerasHub preset / dir);
                                # optional: absent or "" = random weights

    [model]      # NeMoTConfig fields; ``preset = "tiny"`` starts from a preset
    [data]       # DataConfig: where the data is and how it is formatted
    [train]      # TrainConfig: batch, epochs, checkpoints, precision, ...
    [schedule]   # nemot.training.build_schedule table
    [loss]       # NeMoTLoss weights (0 switches a term off)

Overrides use dotted keys with TOML values, e.g. ``train.batch_size=4``,
``schedule.rate=1e-4``, ``data.dir="/data/RACE"``, ``model.preset="tiny"``
(a bare word that is not valid TOML is taken as a string: ``data.dataset=race``).

Example:
    >>> cfg = load_run_config("configs/race.toml", overrides=["train.batch_size=4"])
    >>> cfg.train.batch_size
    4
"""

import dataclasses

from nemot.config import NeMoTConfig
from nemot.data.config import DataConfig
from nemot.models.losses import NeMoTLoss
from nemot.models.registry import MODEL_NAMES
from nemot import ranges
from nemot.ranges import NonNegativeFloat
from nemot.training.distributed import ALL_STRATEGIES
from nemot.training.loop import TrainConfig
from nemot.training.schedules import build_schedule
# The TOML side, without a backend; dump_toml is also this module's for its callers.
from nemot.training.toml_files import (RunConfigError, dump_toml, parse_override, read_toml,
                                       toml_value)

KINDS = ("pretrain", "finetune", "general")
MIXED_PRECISION = (None, "mixed_bfloat16", "mixed_float16")
# Keys a resumed run may change from its run_config.toml: how long it runs, how it logs,
# saves and computes, never what it computes (train.resume_allow adds more).
RESUMABLE = frozenset((
    "name", "train.epochs", "train.steps_per_epoch", "train.verbose", "train.log_every",
    "train.checkpoint_every", "train.keep_checkpoints", "train.strategy", "train.jit_compile",
    "train.decode_jit_compile", "train.resume_allow", "model.attention_implementation",
    "model.remat_layers", "model.scan_layers"))


class ResumeConflict(RunConfigError):
    """A run directory holds a run of another config than the one given to resume it."""


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A whole run: see the module docstring for the file layout."""

    name: str
    kind: str
    model: NeMoTConfig
    data: DataConfig = DataConfig()
    train: TrainConfig = TrainConfig()
    schedule: dict = dataclasses.field(default_factory=lambda: {"type": "constant", "rate": 1e-5})
    loss: NeMoTLoss = NeMoTLoss()
    seed: int = 0
    model_name: str = "nemot"
    gpt2: str | None = None
    source: str = "<dict>"

    def to_dict(self):
        """A TOML-shaped dict (what ``run_config.toml`` in the output directory holds)."""
        out = {"name": self.name, "kind": self.kind, "seed": self.seed,
               "model_name": self.model_name}
        if self.gpt2 is not None:
            out["gpt2"] = self.gpt2
        out["model"] = self.model.to_dict()
        out["data"] = {k: (list(v) if isinstance(v, tuple) else v)
                       for k, v in dataclasses.asdict(self.data).items() if v is not None}
        out["train"] = {k: v for k, v in dataclasses.asdict(self.train).items() if v is not None}
        out["schedule"] = dict(self.schedule)
        out["loss"] = {f"{term}_weight": weight for term, weight in self.loss.weights().items()}
        return out


@dataclasses.dataclass(frozen=True)
class LossWeights:
    """The ``[loss]`` table: :class:`~nemot.models.losses.NeMoTLoss`'s weights, checked as
    the other tables are."""

    task_weight: NonNegativeFloat = 1.0
    lm_weight: NonNegativeFloat = 0.2
    vanilla_weight: NonNegativeFloat = 0.5


_TOP_LEVEL = {"name", "kind", "seed", "model_name", "gpt2"}
_TABLES = {"model", "data", "train", "schedule", "loss"}


def _table(cls, values, source, table):
    """Build dataclass ``cls`` from ``values``, naming unknown keys and bad types."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise RunConfigError(f"{source}: [{table}]: unknown key(s) {unknown}; "
                             f"expected some of {sorted(fields)}")
    checked = {}
    for key, value in values.items():
        default = fields[key].default
        if isinstance(default, bool) and not isinstance(value, bool):
            raise RunConfigError(f"{source}: {table}.{key} = {value!r}: expected true or false")
        if isinstance(default, int) and not isinstance(default, bool) and (
                not isinstance(value, int) or isinstance(value, bool)):
            raise RunConfigError(f"{source}: {table}.{key} = {value!r}: expected an integer")
        if isinstance(default, float) and not isinstance(value, (int, float)):
            raise RunConfigError(f"{source}: {table}.{key} = {value!r}: expected a number")
        if isinstance(default, tuple):
            if not isinstance(value, (list, tuple)):
                raise RunConfigError(f"{source}: {table}.{key} = {value!r}: expected a list")
            value = tuple(value)
        checked[key] = value
    built = cls(**checked)
    try:
        ranges.check(built)
    except ValueError as error:
        raise RunConfigError(f"{source}: {table}.{error}") from None
    return built


def _choice(source, key, value, choices):
    if value not in choices:
        raise RunConfigError(f"{source}: {key} = {value!r}: expected one of {list(choices)}")


def _model_config(values, source):
    values = dict(values)
    try:
        base = NeMoTConfig.preset(values.pop("preset")) if "preset" in values else NeMoTConfig()
        NeMoTConfig.from_dict(values, source=f"{source}: [model]")
        return base.replace(**{k: (tuple(v) if k == "output_blocks" else v)
                               for k, v in values.items()})
    except (TypeError, ValueError) as error:
        raise RunConfigError(f"{source}: [model]: {error}") from None


def run_config_from_dict(data, source="<dict>"):
    """A :class:`RunConfig` from a TOML-shaped dict; errors name ``source`` and the key."""
    unknown = sorted(set(data) - _TOP_LEVEL - _TABLES)
    if unknown:
        raise RunConfigError(f"{source}: unknown key(s) {unknown}; expected top-level "
                             f"{sorted(_TOP_LEVEL)} and tables {sorted(_TABLES)}")
    for key in ("name", "kind"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise RunConfigError(f"{source}: {key}: expected a non-empty string, "
                                 f"got {data.get(key)!r}")
    _choice(source, "kind", data["kind"], KINDS)
    _choice(source, "model_name", data.get("model_name", "nemot"), MODEL_NAMES)
    for table in _TABLES:
        if not isinstance(data.get(table, {}), dict):
            raise RunConfigError(f"{source}: [{table}] must be a table")
    model = _model_config(data.get("model", {}), source)
    data_cfg = _table(DataConfig, data.get("data", {}), source, "data")
    train = _table(TrainConfig, data.get("train", {}), source, "train")
    loss = NeMoTLoss(**dataclasses.asdict(_table(LossWeights, data.get("loss", {}), source,
                                                   "loss")))
    try:
        data_cfg.check(source)
    except ValueError as error:
        raise RunConfigError(str(error)) from None
    _choice(source, "train.strategy", train.strategy, ALL_STRATEGIES)
    _choice(source, "train.optimizer", train.optimizer, ("adam", "sgd"))
    _choice(source, "train.mixed_precision", train.mixed_precision, MIXED_PRECISION)
    if data["kind"] == "finetune" and not data_cfg.dataset:
        raise RunConfigError(f"{source}: data.dataset: a finetune run needs a dataset name")
    if data["kind"] != "finetune" and not train.steps_per_epoch:
        raise RunConfigError(f"{source}: train.steps_per_epoch: a {data['kind']} run reads an "
                             "infinite stream; give the steps per epoch")
    if data.get("model_name") == "gpt2_baseline" and loss.vanilla_weight:
        raise RunConfigError(f"{source}: loss.vanilla_weight = {loss.vanilla_weight}: the GPT-2 "
                             "baseline has no vanilla set; set it to 0")
    _check_resume_allow(source, train.resume_allow)
    seed = data.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise RunConfigError(f"{source}: seed = {toml_value(seed)}: expected an integer")
    schedule = dict(data.get("schedule", {"type": "constant", "rate": 1e-5}))
    try:
        build_schedule(schedule)
    except ValueError as error:
        raise RunConfigError(f"{source}: [schedule]: {error}") from None
    return RunConfig(name=data["name"], kind=data["kind"], model=model, data=data_cfg,
                     train=train, schedule=schedule, loss=loss, seed=seed,
                     model_name=data.get("model_name", "nemot"), gpt2=data.get("gpt2") or None,
                     source=source)


def _known_key(key):
    """Whether dotted ``key`` can appear in a run config (``schedule.*`` takes any name)."""
    table, _, field = key.partition(".")
    if not field:
        return table in _TOP_LEVEL
    if table == "schedule":
        return True
    classes = {"model": NeMoTConfig, "data": DataConfig, "train": TrainConfig, "loss": LossWeights}
    return table in classes and field in {f.name for f in dataclasses.fields(classes[table])}


def _check_resume_allow(source, keys):
    for key in keys:
        if not isinstance(key, str) or not _known_key(key):
            raise RunConfigError(f"{source}: train.resume_allow: {key!r} is not a run-config "
                                 "key; expected dotted keys such as 'train.batch_size' or "
                                 "'schedule.rate'")
        if key == "model_name" or key.startswith("model."):
            raise RunConfigError(f"{source}: train.resume_allow: {key!r}: the model cannot "
                                 "change in a resumed run (its checkpoint holds that model's "
                                 "weights); start a new run with train.init_from instead")


def flat_items(data):
    """``{dotted key: value}`` of a TOML-shaped dict (``{"train": {"epochs": 2}}`` ->
    ``{"train.epochs": 2}``)."""
    flat = {}
    for key, value in data.items():
        if isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def changed_keys(saved, new):
    """``[(dotted key, saved value, new value)]`` where two :meth:`RunConfig.to_dict`
    differ (a value missing on one side is None)."""
    saved, new = flat_items(saved), flat_items(new)
    keys = list(saved) + [k for k in new if k not in saved]
    return [(k, saved.get(k), new.get(k)) for k in keys if saved.get(k) != new.get(k)]


def apply_overrides(data, overrides):
    """A copy of the TOML-shaped ``data`` with ``KEY=VALUE`` overrides applied."""
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    for text in overrides:
        path, value = parse_override(text)
        if len(path) == 1:
            data[path[0]] = value
        else:
            if path[0] not in _TABLES:
                raise RunConfigError(f"override {text!r}: unknown table {path[0]!r}; "
                                     f"expected one of {sorted(_TABLES)}")
            table = data.setdefault(path[0], {})
            if path[0] == "schedule" and path[1] == "type" and value != table.get("type"):
                table.clear()  # another schedule type: its old fields do not apply
            table[path[1]] = value
    return data


def load_run_config(path, overrides=()):
    """Read a TOML run config and apply ``overrides`` (``["train.batch_size=4", ...]``)."""
    return run_config_from_dict(apply_overrides(read_toml(path), overrides), source=str(path))
