"""Suite-wide pytest hooks."""

# The files whose tests take minutes on 2 CPU cores (``make test --durations``), longest
# first: they start first, so that pytest-xdist's workers (``--dist loadfile``) end
# together instead of one running a long file alone at the end.
SLOW_FIRST = ("tests/test_notebooks.py", "tests/training/test_runs.py",
              "tests/test_jax_backend.py", "tests/training/test_learning.py",
              "tests/training/test_learning_span.py", "tests/test_demo.py")


def pytest_collection_modifyitems(items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        return SLOW_FIRST.index(path) if path in SLOW_FIRST else len(SLOW_FIRST)

    items.sort(key=rank)  # stable: the order inside a file is kept
