"""What ``nemot evaluate`` and ``nemot generate`` accept, known without loading a
backend: the choices of their flags, and which saved models they take.

Example:
    >>> check_checkpoint("runs/pals/table2/full/seed0/model_last.keras")  # doctest: +SKIP
    ConfigError: --checkpoint runs/pals/...: holds a PALBert of the PALs reproduction; ...
"""

import json
import zipfile
from pathlib import Path

from nemot.errors import ConfigError

TASKS = ("lm", "mqa", "gqa")
MC_MODES = ("label", "generate", "score")
REDUCTIONS = ("mean", "sum")
DEFAULT_MAX_NEW_TOKENS = 32

# Keras' registered names of the models evaluation decodes (nemot.models).
EVALUATED_MODELS = ("nemot>NeMoTCausalLM", "nemot>GPT2BaselineCausalLM")
# The paper reproductions' models, each scored by its own command as it trains.
REPRODUCTIONS = {
    "nemot.pals": ("PALs", "nemot pals"),
    "nemot.hypergrid": ("HyperGrid", "nemot hypergrid"),
    "nemot.ngt": ("NGT", "nemot ngt"),
    "nemot.modact": ("modulated activations", "nemot runs"),
}


def saved_model_class(path):
    """``(registered name, module, class name)`` of the model in a ``.keras`` file, read
    from its ``config.json`` (nothing is loaded); a :class:`ConfigError` for a file that
    is not a ``.keras`` archive."""
    try:
        with zipfile.ZipFile(path) as archive:
            config = json.loads(archive.read("config.json"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError, UnicodeDecodeError):
        raise ConfigError(f"{path}: not a .keras file (a zip archive with config.json, as "
                          "model.save writes)") from None
    return config.get("registered_name"), config.get("module") or "", config.get("class_name")


def check_checkpoint(path, flag="--checkpoint"):
    """Raise, naming ``flag``, unless ``path`` is a ``.keras`` NeMoT or GPT-2 baseline;
    for a paper reproduction's model, say which command scores it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{flag} {path}: no such file (expected a .keras file "
                                "written by model.save, e.g. model_best_metric.keras)")
    if path.suffix != ".keras":
        raise ConfigError(f"{flag} {path}: expected a .keras file written by model.save")
    registered, module, class_name = saved_model_class(path)
    if registered in EVALUATED_MODELS:
        return
    takes = ("`nemot evaluate` and `nemot generate` take NeMoT and GPT-2 baseline models "
             "(the model_*.keras files of nemot pretrain / finetune / train-general)")
    for package, (paper, command) in REPRODUCTIONS.items():
        if module == package or module.startswith(package + "."):
            raise ConfigError(
                f"{flag} {path}: holds a {class_name} of the {paper} reproduction; {takes}. "
                f"{paper} runs are scored as they train: `{command} --help`, and `nemot runs "
                "report DIR` prints their tables")
    raise ConfigError(f"{flag} {path}: holds a {class_name} ({module or registered}); {takes}")
