# The two commands of the README: `make demo` and `make test`.
# Each creates .venv when missing and installs the package first, every requirement at the
# version of constraints.txt.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.nemot-installed
UV_VERSION := 0.13.8
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test bench install dist clean

install: $(STAMP)

# uv installs the same pinned packages as pip in half the time (a fresh venv on 2 cores:
# 52 s against 98 s, most of pip's being its one-core bytecode compilation, which uv runs on
# every core). The bytecode is compiled at install because nothing writes it later where
# PYTHONDONTWRITEBYTECODE is set: each process would compile TensorFlow again (16 s).
$(STAMP): setup.cfg pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet uv==$(UV_VERSION)
	$(VENV)/bin/uv pip install --quiet --python $(PY) --compile-bytecode \
		-e ".[test]" --constraint constraints.txt --config-settings editable_mode=compat
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m nemot.demo

# Three pytest-xdist workers on two cores: a third runs while another waits on a subprocess
# (tests/conftest.py says what was measured).
test: $(STAMP)
	$(PY) -m pytest -n 3 --dist loadfile --no-loadscope-reorder --durations=15

bench: $(STAMP)
	$(PY) -m bench

# The wheel and the sdist, checked as a package index would (twine check).
dist: $(STAMP)
	rm -rf dist
	$(PY) -m build
	$(PY) -m twine check --strict dist/*

clean:
	rm -rf $(VENV) build dist *.egg-info
