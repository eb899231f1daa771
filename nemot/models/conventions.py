"""Keras and KerasHub conventions that nemot's language models follow (NeMoT, the GPT-2
baseline): KerasHub's preset directories and ``fit``'s defaults.

A **preset directory** is what a KerasHub model's ``save_to_preset`` writes, so the
files read as KerasHub users expect (docs/spec.md section 10)::

    config.json                      the model's Keras config (``keras.saving`` format)
    model.weights.h5                 its weights
    metadata.json                    nemot and Keras versions, parameter count, date
    tokenizer.json                   the tokenizer: GPT-2 BPE + nemot's 55 added tokens
    assets/tokenizer/vocabulary.json GPT-2's token -> id map (KerasHub's asset names)
    assets/tokenizer/merges.txt      GPT-2's BPE merges

``NeMoT.from_preset(directory)`` loads one; ``nemot.Tokenizer(directory)`` (or
:func:`load_tokenizer`, which also checks ``tokenizer.json``) reads its tokenizer. A
``.keras`` file (``model.save``) holds the config and weights in one file (and the
optimizer of a compiled model); a preset directory holds the tokenizer beside them,
as a KerasHub checkpoint does.
"""

import datetime
import inspect
import json
import shutil
from pathlib import Path

import keras

from nemot import __version__, vocab

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.weights.h5"
METADATA_FILE = "metadata.json"
TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_ASSETS = Path("assets") / "tokenizer"
TOKENIZER_CLASS = "nemot.data.tokenizer.Tokenizer"


def _read_json(path, what):
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file; a preset directory holds {what}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: line {error.lineno}: not valid JSON ({error.msg})") from None


class PresetMixin:
    """``from_preset`` / ``save_to_preset`` in KerasHub's layout (see the module doc).

    A class using it defines ``config_for_preset(name)``: the ``NeMoTConfig`` a preset
    name stands for.
    """

    @classmethod
    def from_preset(cls, preset, load_weights=True):
        """The model of a preset directory, or of a preset name.

        Args:
            preset: a directory written by :meth:`save_to_preset`, or a preset name
                (``"thesis"``, ``"small"``, ``"tiny"``; the baseline also takes
                ``"gpt2_medium"``, ``"gpt2_small"``). No NeMoT weights are published,
                so a name gives the architecture only: it needs ``load_weights=False``.
            load_weights: load ``model.weights.h5`` (False: fresh weights).

        Example:
            >>> model = NeMoT.from_preset("tiny", load_weights=False)
            >>> model.save_to_preset("my_nemot")
            >>> same = NeMoT.from_preset("my_nemot")
        """
        path = Path(preset)
        if not path.is_dir():
            try:
                config = cls.config_for_preset(str(preset))
            except ValueError as error:
                raise ValueError(f"preset {str(preset)!r}: not a directory, and {error}") \
                    from None
            if load_weights:
                raise ValueError(
                    f"preset {str(preset)!r} names an architecture; no weights are published "
                    f"for it. {cls.__name__}.from_preset({str(preset)!r}, load_weights=False) "
                    "builds it with fresh weights; a directory written by save_to_preset "
                    "loads trained ones")
            model = cls(config)
            model.build()
            return model
        serialized = _read_json(path / CONFIG_FILE, "the model's config")
        found = keras.saving.get_registered_object(serialized.get("registered_name", ""))
        if not (inspect.isclass(found) and issubclass(found, cls)):
            raise ValueError(f"{path / CONFIG_FILE}: holds a {serialized.get('class_name')!r} "
                             f"model, not a {cls.__name__}")
        model = keras.saving.deserialize_keras_object(serialized)
        model.build()
        if load_weights:
            weights = path / WEIGHTS_FILE
            if not weights.is_file():
                raise FileNotFoundError(f"{weights}: no such file; a preset directory holds "
                                        "the model's weights (or pass load_weights=False)")
            model.load_weights(weights)
        return model

    def save_to_preset(self, preset_dir, tokenizer=None):
        """Write the config, weights, metadata and tokenizer into ``preset_dir``.

        Args:
            preset_dir: directory to write (created if missing).
            tokenizer: a ``nemot.Tokenizer`` whose files go into the preset (default:
                ``Tokenizer()``, GPT-2's files shipped with nemot's dependencies).

        Returns:
            ``preset_dir`` as a ``Path``.
        """
        from nemot.data.tokenizer import Tokenizer

        preset_dir = Path(preset_dir)
        preset_dir.mkdir(parents=True, exist_ok=True)
        serialized = keras.saving.serialize_keras_object(self)
        for key in ("compile_config", "build_config"):
            serialized.pop(key, None)
        (preset_dir / CONFIG_FILE).write_text(json.dumps(serialized, indent=2))
        self.save_weights(preset_dir / WEIGHTS_FILE)
        (preset_dir / METADATA_FILE).write_text(json.dumps({
            "nemot_version": __version__, "keras_version": keras.version(),
            "parameter_count": self.count_params(),
            "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}, indent=2))
        save_tokenizer(tokenizer or Tokenizer(), preset_dir)
        return preset_dir


def save_tokenizer(tokenizer, preset_dir):
    """``tokenizer.json`` and the GPT-2 files under ``assets/tokenizer/``."""
    assets = Path(preset_dir) / TOKENIZER_ASSETS
    assets.mkdir(parents=True, exist_ok=True)
    vocabulary, merges = tokenizer.files
    shutil.copyfile(vocabulary, assets / "vocabulary.json")
    shutil.copyfile(merges, assets / "merges.txt")
    (Path(preset_dir) / TOKENIZER_FILE).write_text(json.dumps({
        "class_name": TOKENIZER_CLASS, "config": {"engine": tokenizer.engine},
        "vocabulary_size": vocab.VOCAB_SIZE, "added_tokens": vocab.ADDED_TOKEN_IDS}, indent=2))


def load_tokenizer(preset_dir):
    """The ``nemot.Tokenizer`` of a preset directory, after checking its ``tokenizer.json``
    names nemot's tokenizer with nemot's added tokens at their fixed ids."""
    from nemot.data.tokenizer import Tokenizer

    path = Path(preset_dir) / TOKENIZER_FILE
    spec = _read_json(path, "the tokenizer's description")
    if spec.get("class_name") != TOKENIZER_CLASS:
        raise ValueError(f"{path}: class_name {spec.get('class_name')!r}; expected "
                         f"{TOKENIZER_CLASS!r}")
    if spec.get("added_tokens") != vocab.ADDED_TOKEN_IDS:
        raise ValueError(f"{path}: field added_tokens differs from nemot's added tokens and "
                         "their fixed ids (nemot.vocab.ADDED_TOKEN_IDS)")
    return Tokenizer(preset_dir, **spec.get("config", {}))


class DatasetFitMixin:
    """``fit`` with ``shuffle`` defaulting to False for datasets and generators.

    Keras shuffles only in-memory arrays; given a ``tf.data.Dataset`` (what
    ``nemot.data.pipelines`` returns, already in its seeded order), a ``PyDataset`` or
    a generator with its default ``shuffle=True``, it warns that the flag is ignored.
    """

    def fit(self, x=None, y=None, *args, **kwargs):
        if "shuffle" not in kwargs and len(args) < 7 and _is_stream(x):
            kwargs["shuffle"] = False
        return super().fit(x, y, *args, **kwargs)


def _is_stream(x):
    """Data that Keras reads in its own order: datasets, ``PyDataset``s, generators."""
    return (hasattr(x, "element_spec") or isinstance(x, keras.utils.PyDataset)
            or inspect.isgenerator(x))
