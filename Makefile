# The two commands of the README: `make demo` and `make test`.
# Each creates .venv when missing and installs the pinned package first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.nemot-installed
export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: demo test bench install clean

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]" --config-settings editable_mode=compat
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m nemot.demo

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=15

bench: $(STAMP)
	$(PY) -m bench

clean:
	rm -rf $(VENV) build *.egg-info
