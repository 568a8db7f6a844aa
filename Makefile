# One-command entry points; each creates the virtualenv, installs and resolves the jars itself.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.eos-installed
PYSPARK_PIN = $$(sed -n 's/^ *pyspark==//p' setup.cfg)
PYTEST_ARGS ?=

.PHONY: install demo test lint bench clean

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	# The Spark provider pulls in pyspark-client, which shares the `pyspark` import name and
	# lacks Spark's jars: put the full distribution back on top, at the pinned version.
	$(PY) -m pip install -q --force-reinstall --no-deps "pyspark==$(PYSPARK_PIN)"
	$(VENV)/bin/eos jars
	touch $(STAMP)

demo: install
	$(VENV)/bin/eos demo

lint: install
	$(VENV)/bin/ruff check .

test: lint
	$(PY) -m pytest -q $(PYTEST_ARGS)

bench: install
	$(PY) -m bench

clean:
	rm -rf $(VENV) .cache build *.egg-info
