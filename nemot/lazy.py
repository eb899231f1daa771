"""Public names of a package loaded on first use (PEP 562), so that importing the
package, or a light module in it such as its command line, loads no backend.

Example (a package's ``__init__.py``)::

    from nemot.lazy import lazy_exports

    __getattr__, __dir__, __all__ = lazy_exports(__name__, {
        "NeMoTLoss": ("nemot.models.losses", "NeMoTLoss"),
        "metrics": ("nemot.evaluation.metrics", None),   # None: the module itself
    })
"""

import importlib
import sys


def lazy_exports(package, names):
    """``(__getattr__, __dir__, __all__)`` for ``package``, whose public ``names`` map to
    ``(module, attribute)``: ``package.name`` imports ``module`` on first use and keeps
    its ``attribute`` (the module when None)."""

    def __getattr__(name):
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module_name, attribute = names[name]
        module = importlib.import_module(module_name)
        value = module if attribute is None else getattr(module, attribute)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        return sorted(set(names) | set(vars(sys.modules[package])))

    return __getattr__, __dir__, list(names)
