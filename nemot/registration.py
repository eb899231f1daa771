"""Registering nemot's Keras classes as soon as Keras is loaded, without loading it.

``import nemot`` stays light (no TensorFlow, no Keras: tokenizer and data workers start
fast), yet KerasHub's generic loaders (``keras_hub.models.CausalLM.from_preset(dir)``)
and ``keras.models.load_model`` must find nemot's classes by their registered names. So
``import nemot`` registers them at once when Keras is already loaded, and otherwise
watches the imports of ``keras``, ``keras_hub`` and nemot's own modules: once the last of
those imports in progress has finished and Keras is loaded, the modules that define
nemot's Keras classes (:data:`SERIALIZABLE_MODULES`) are imported.
"""

import importlib
import importlib.abc
import importlib.util
import sys

# Modules whose import registers the Keras classes that saved models and presets name.
SERIALIZABLE_MODULES = ("nemot.models", "nemot.hosts.losses", "nemot.training.schedules",
                        "nemot.optimizers", "nemot.ngt.model")
WATCHED = ("keras", "keras_hub", "nemot")


def register():
    """Import every module that registers nemot's Keras classes."""
    for module in SERIALIZABLE_MODULES:
        importlib.import_module(module)


class _Loader(importlib.abc.Loader):
    def __init__(self, loader, finder):
        self.loader, self.finder = loader, finder

    def __getattr__(self, name):
        # get_code, get_source, is_package, ...: runpy (``python -m``), inspect and
        # importlib.resources ask the loader for them.
        return getattr(self.loader, name)

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.finder.depth += 1
        try:
            self.loader.exec_module(module)
        finally:
            self.finder.depth -= 1
        self.finder.maybe_register()


class _RegisterWhenKerasLoads(importlib.abc.MetaPathFinder):
    """Wraps the loaders of the watched packages' modules; after the outermost of them has
    run, registers once Keras is loaded (then leaves ``sys.meta_path``)."""

    def __init__(self):
        self.depth = 0
        self.busy = False

    def find_spec(self, name, path=None, target=None):
        if self.busy or name.split(".")[0] not in WATCHED:
            return None
        if name.split(".")[0] != "nemot" and "." in name:
            return None  # Keras's submodules: their package is being watched
        self.busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self.busy = False
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, self)
        return spec

    def maybe_register(self):
        if self.depth or "keras" not in sys.modules or self not in sys.meta_path:
            return
        sys.meta_path.remove(self)
        register()


def install():
    """Register now if Keras is loaded, else when it is (see the module docstring)."""
    if "keras" in sys.modules:
        register()
    elif not any(isinstance(f, _RegisterWhenKerasLoads) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterWhenKerasLoads())
