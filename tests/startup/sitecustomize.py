"""Run at the start of every Python process of the test suite (tests/conftest.py puts
this directory first on ``PYTHONPATH``; the pytest workers run it from there too).

TensorFlow imports JAX whenever it is installed (``tensorflow.lite.python.util``:
``from jax import jit``, for TFLite conversion, inside ``try/except ImportError``), and
the ``test`` extra installs JAX for tests/test_jax_backend.py: 1.5 s of CPU per process
(``import keras, tensorflow``: 5.9 s against 4.5 s on the 2-core machine), in the two
workers and the ~35 processes the suite starts (commands, notebook kernels, distributed
workers). A process on TensorFlow here finds no ``jax``; one with ``KERAS_BACKEND=jax``
is untouched.
"""

import os
import sys


class _NoJax:
    """A meta path finder that answers ``import jax`` (and its submodules) with
    ModuleNotFoundError, as if JAX were not installed."""

    def find_spec(self, name, path=None, target=None):
        if name == "jax" or name.startswith("jax."):
            raise ModuleNotFoundError(f"No module named {name!r} (hidden from TensorFlow "
                                      "processes by tests/startup/sitecustomize.py)", name=name)
        return None


if os.environ.get("KERAS_BACKEND", "tensorflow") == "tensorflow" and "jax" not in sys.modules \
        and not any(isinstance(finder, _NoJax) or type(finder).__name__ == "_NoJax"
                    for finder in sys.meta_path):
    sys.meta_path.insert(0, _NoJax())
