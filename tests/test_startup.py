"""The suite's processes start with tests/startup/sitecustomize.py (tests/conftest.py)."""

import os
import sys

from tests.conftest import STARTUP


def test_tensorflow_processes_of_the_suite_do_not_import_jax():
    import tensorflow  # noqa: F401 (its import is what would bring JAX in)

    assert "jax" not in sys.modules
    assert str(STARTUP) in os.environ["PYTHONPATH"].split(os.pathsep)  # and the subprocesses'
