"""TensorFlow as if it were not installed: a process with this folder first on its
``PYTHONPATH`` fails ``import tensorflow`` as a machine without it does (a GPU machine with
JAX alone, say), so a test can run nemot's JAX paths there."""

raise ModuleNotFoundError("No module named 'tensorflow' (hidden by tests/no_tensorflow)",
                          name="tensorflow")
