# One-command entry points; each creates the virtualenv, installs and resolves the jars itself.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.eos-installed
# The tested versions (Airflow's convention): setup.cfg declares ranges, this file pins a run.
CONSTRAINTS := constraints-3.11.txt
PYSPARK_PIN = $$(sed -n 's/^pyspark==//p' $(CONSTRAINTS))
# The Spark side (spark-submit, the job) and the test tools; an Airflow worker that only runs
# pre-flight, health and recovery installs the package without extras.
EXTRAS ?= spark,dev
PYTEST_ARGS ?=
SOAK_ARGS ?=
# Two pytest workers (pytest-xdist), each with its own broker and Spark: much of the chaos suite
# waits on timeouts, so two workers on two cores finish well before one. PYTEST_WORKERS=0 runs serially.
# worksteal: an idle worker takes pending tests from a busy one (plain `load` hands the first
# chunk, all of tests/chaos, to one worker and leaves the other idle for half an hour).
PYTEST_WORKERS ?= 2

# Debian packages for the browser (UI) tests: Playwright drives the system's Chromium (its own browser
# download cannot work here). Skipped when chromium is installed; without root, passwordless sudo or
# apt-get it only warns, and the browser tests skip (under CI they fail).
SYSTEM_PACKAGES := chromium fonts-liberation
CHROMIUM ?= chromium
APT_INSTALL := apt-get -qq update && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SYSTEM_PACKAGES)

.PHONY: install system demo test lint bench soak constraints clean

install: system $(STAMP)

system:
	@if command -v $(CHROMIUM) >/dev/null 2>&1; then :; \
	elif ! command -v apt-get >/dev/null 2>&1; then echo "make system: no apt-get; install Chromium yourself (or set EOS_CHROMIUM)" >&2; \
	elif [ "$$(id -u)" = 0 ]; then echo "make system: apt-get install $(SYSTEM_PACKAGES)"; $(APT_INSTALL); \
	elif sudo -n true 2>/dev/null; then echo "make system: sudo apt-get install $(SYSTEM_PACKAGES)"; sudo sh -c '$(APT_INSTALL)'; \
	else echo "make system: not root: skipping apt-get install $(SYSTEM_PACKAGES); the browser tests will skip" >&2; fi

$(STAMP): setup.cfg pyproject.toml $(CONSTRAINTS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[$(EXTRAS)]" -c $(CONSTRAINTS)
	# The Spark provider pulls in pyspark-client, which shares the `pyspark` import name and
	# lacks Spark's jars: put the full distribution back on top, at the tested version.
	$(PY) -m pip install -q --force-reinstall --no-deps "pyspark==$(PYSPARK_PIN)"
	$(VENV)/bin/eos jars
	touch $(STAMP)

demo: install
	$(VENV)/bin/eos demo

lint: install
	$(VENV)/bin/ruff check .

test: lint
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal --durations=30 $(PYTEST_ARGS)

bench: install
	$(PY) -m bench

# The long fault-injection soak (hours): its own 3 brokers and Spark standalone cluster; results in
# soak/results. A smoke run: make soak SOAK_ARGS="--records 30000 --faults 9 --seed 1".
soak: install
	$(PY) -m soak $(SOAK_ARGS)

# After moving a range in setup.cfg and a green `make test`: record the versions that passed.
constraints: install
	{ sed -n '1,2p' $(CONSTRAINTS); $(PY) -m pip freeze --exclude-editable | grep -vi '^airflow-provider-eos'; } > $(CONSTRAINTS).new
	mv $(CONSTRAINTS).new $(CONSTRAINTS)

clean:
	rm -rf $(VENV) .cache build *.egg-info
