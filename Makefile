# One-command entry points; each creates the virtualenv, installs and resolves the jars itself.
# Python 3.11, 3.12 or 3.13 (`make install PYTHON=python3.12`). A name the shell cannot run (pyenv's
# shim for a version that is installed but not selected) is looked up among pyenv's versions.
PYTHON ?= python3.11
PYTHON_EXE := $(shell $(PYTHON) -c 'import sys; print(sys.executable)' 2>/dev/null || \
	PYENV_VERSION="$$(pyenv whence $(PYTHON) 2>/dev/null | tail -1)" pyenv which $(PYTHON) 2>/dev/null)
PYVER := $(shell $(PYTHON_EXE) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
# 3.11 keeps `.venv` (the tools and docs name it); another version gets its own, so two never clobber.
VENV ?= $(if $(filter 3.11,$(PYVER)),.venv,.venv-$(PYVER))
PY := $(VENV)/bin/python
# uv installs what pip would (the same constraints, the same wheels) in a fraction of pip's time: CI builds
# three virtualenvs, one per Python. A user's `pip install` path is the wheel-install test's.
UV_VERSION := 0.13.9
UV_INSTALL := $(PY) -m uv pip install --python $(PY)
STAMP := $(VENV)/.eos-installed
# The tested versions (Airflow's convention): setup.cfg declares ranges, one file per Python pins a run.
# A new version's first file: make constraints PYTHON=python3.13 CONSTRAINTS=constraints-3.12.txt
CONSTRAINTS ?= constraints-$(PYVER).txt
CONSTRAINTS_OUT := constraints-$(PYVER).txt
PYSPARK_VERSION = $(shell sed -n 's/^pyspark==//p' $(CONSTRAINTS))
WHEELHOUSE ?= $(HOME)/.cache/airflow-provider-eos/wheels
# The Spark side (spark-submit, the job), the test tools, the docs site (the suite builds it) and the
# bench's and soak's charts (matplotlib; the suite draws them too); an Airflow worker that only runs
# pre-flight, health and recovery installs the package without extras.
EXTRAS ?= spark,dev,docs,bench
PYTEST_ARGS ?=
SOAK_ARGS ?=
# Two pytest workers (pytest-xdist) sharing one broker, one secured broker, one YARN cluster and one
# Airflow deployment (tests/support/shared_services.py); each has its own Spark. PYTEST_WORKERS=0 runs
# serially. The tests arrive longest module first (tests/durations.json, kept in that order by
# --no-loadscope-reorder): a worker with at most two tests queued takes the next, so the long ones start
# early and both workers end together. The tests that hold a fixture one at a time (the Celery deployment's
# workers, the broker the silent-broker tests pause) are one scope, run by one worker in a row, which so
# never waits on the other's lock (tests/support/durations.py, make_scheduler).
PYTEST_WORKERS ?= 2
PYTEST := $(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder

# Debian packages for the browser (UI) tests: Playwright drives the system's Chromium (its own browser
# download cannot work here). And for `eos airflow up --executor celery --db postgres` (tests/deployment_celery):
# redis-server and PostgreSQL's server binaries, which the deployment starts itself, in its own folder on free
# ports (Debian's own cluster is not even created: createcluster.d). And Prometheus for the metrics tests
# (tests/observability), which start their own on 127.0.0.1. Each is skipped when installed; without
# root, passwordless sudo or apt-get it only warns, and those tests fail naming the package.
CHROMIUM ?= chromium
# The packages whose command is missing (PostgreSQL's binaries live off PATH).
MISSING_PACKAGES = $(strip $(if $(shell command -v $(CHROMIUM)),,chromium fonts-liberation) \
	$(if $(shell command -v redis-server),,redis-server) \
	$(if $(wildcard /usr/lib/postgresql/*/bin/initdb),,postgresql) \
	$(if $(shell command -v prometheus),,prometheus))
NO_MAIN_CLUSTER := mkdir -p /etc/postgresql-common/createcluster.d && \
	echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/eos-no-main-cluster.conf
APT_INSTALL = $(NO_MAIN_CLUSTER) && apt-get -qq update && DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends $(MISSING_PACKAGES)

.PHONY: install system demo test smoke test-compat compat compat-airflow test-long durations lint docs screenshots kafka-version bench soak constraints clean

install: system $(STAMP)

system:
	@if [ -z "$(MISSING_PACKAGES)" ]; then :; \
	elif ! command -v apt-get >/dev/null 2>&1; then echo "make system: no apt-get; install $(MISSING_PACKAGES) yourself (or set EOS_CHROMIUM)" >&2; \
	elif [ "$$(id -u)" = 0 ]; then echo "make system: apt-get install $(MISSING_PACKAGES)"; $(APT_INSTALL); \
	elif sudo -n true 2>/dev/null; then echo "make system: sudo apt-get install $(MISSING_PACKAGES)"; sudo sh -c '$(APT_INSTALL)'; \
	else echo "make system: not root: skipping apt-get install $(MISSING_PACKAGES); the browser tests skip, the Celery deployment's fail" >&2; fi

# The JVM executor writer's Maven module (`executor_writer: jvm`): a change to it rebuilds the jar.
JVM_SOURCES := $(shell find jvm -type f -not -path 'jvm/target/*' 2>/dev/null)

$(STAMP): setup.cfg pyproject.toml $(CONSTRAINTS) tools/install-excludes.txt $(JVM_SOURCES)
	@test -n "$(PYVER)" || { echo "make: $(PYTHON) does not run (PYTHON=python3.11, python3.12 or python3.13)" >&2; exit 1; }
	test -x $(PY) || $(PYTHON_EXE) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip "uv==$(UV_VERSION)"
	# PySpark comes as an sdist only, and the registry's answer for it is not cacheable: uv downloaded
	# and rebuilt it into a new 1 GB entry of its cache on every install. Build its wheel once per
	# machine and version instead (pure Python: every Python version shares it).
	test -n "$$(ls $(WHEELHOUSE)/pyspark-$(PYSPARK_VERSION)-*.whl 2>/dev/null)" || \
		$(PY) -m pip wheel -q --no-deps --no-cache-dir -w $(WHEELHOUSE) "pyspark==$(PYSPARK_VERSION)"
	# The Spark provider pulls in pyspark-client, which shares the `pyspark` import name and lacks
	# Spark's jars: leave it out, so the full distribution's files stay whole.
	$(UV_INSTALL) -q -e ".[$(EXTRAS)]" -c $(CONSTRAINTS) --excludes tools/install-excludes.txt \
		--find-links $(WHEELHOUSE)
	# Resolves the Kafka and connector jars and builds jvm/ (mvn package) into $$EOS_HOME/jars/eos-executor-writer.
	$(VENV)/bin/eos jars
	touch $(STAMP)

demo: install
	$(PY) -m demo

lint: install
	$(VENV)/bin/ruff check .

# The documentation site (mkdocs.yml, docs/) into site/: first the pages generated from the code (the spec
# reference, its JSON schema, the pre-flight catalog), then a --strict build, so a broken link or a missing
# page fails here (tests/docs builds it the same way in `make test`).
docs: install
	$(PY) -m tools.docs_reference
	$(PY) -m mkdocs build --strict --site-dir site

# The docs' Airflow screenshots (docs/airflow-*.png) taken anew on the example pipeline: its own broker and
# Airflow deployment, headless Chromium, everything stopped at the end (tools/docs_screenshots.py).
screenshots: install
	$(PY) -m tools.docs_screenshots

test: lint
	$(PYTEST) --durations=30 $(PYTEST_ARGS)

# The smoke subset (marker `smoke`) on another Python: CI runs `make test` on 3.11 and, beside it, this on 3.12
# and 3.13 (`make smoke PYTHON=python3.12`): the install, the provider registered, the DAGs parse, the
# exactly-once crash test and recovery.
smoke: install
	$(PYTEST) -m "smoke and not long" --durations=10 $(PYTEST_ARGS)

# The long proofs kept out of `make test` (marker `long`: random kills over 50,000-200,000 records and
# the at-least-once control under the same schedule); run before every bench and soak.
test-long: install
	$(PYTEST) -m long --durations=0 $(PYTEST_ARGS)

# The broker-version subset (marker `compat`) on the oldest tested Kafka: CI runs it beside `make test`, which
# runs everything on the default broker. `make compat` runs the whole matrix (every tested version, the long
# compat tests too) and writes docs/compatibility.md; it stays out of CI.
OLDEST_KAFKA ?= 3.9.2
# CI's share of it: the executor writers' crash, recovery, health, pre-flight and transactions v2 (the driver
# writer's crash and the DAG-level abort stay in `make compat`, within CI's budget).
test-compat: install
	EOS_TEST_KAFKA_VERSION=$(OLDEST_KAFKA) $(PYTEST) -m "compat and not long and not airflow" \
		-k "not after_produce-driver" --durations=10 $(PYTEST_ARGS)

compat: install
	$(PY) -m tools.compat

# The Airflow-version matrix: the lowest Airflow and provider versions setup.cfg claims and the newest, each in
# its own virtualenv outside the repository (~/.cache/airflow-provider-eos/venvs, or EOS_COMPAT_VENVS) through
# its constraints file (constraints-airflow-X.Y.Z.txt; `python -m tools.compat_airflow lock` writes them anew),
# then the Airflow subset of the suite in each, into docs/compatibility.md. Out of CI, like `make compat`. Like
# `make test` it leaves the `long` tests out, but for the deployed streaming test (tests/deployment/
# test_streaming_pipeline.py, ~5 min per Airflow): the one run of a real deployment end to end.
# COMPAT_AIRFLOW_ARGS="--only DAGs --workers 0" runs a part; the rest of the table keeps its last results.
COMPAT_AIRFLOW_ARGS ?=
compat-airflow: install
	$(PY) -m tools.compat_airflow $(COMPAT_AIRFLOW_ARGS)

# Record every test's duration (tests/durations.json: the order tests start in, and their timeouts).
durations: install
	mkdir -p .cache && $(PYTEST) --durations=0 $(PYTEST_ARGS) | tee .cache/durations.log
	$(PY) -m tests.support.durations .cache/durations.log

# The brokers `make bench` and `make soak` start: KAFKA_VERSION=X.Y.Z (e.g. the oldest tested, 3.9.2), resolved
# from Maven Central on first use; empty: the devstack's default. Refused before the long proofs run when the
# devstack cannot start it, with its message (the value, the tested versions). The long proofs they run first stay
# on the default broker (EOS_TEST_KAFKA_VERSION=X.Y.Z moves them too). Recorded in the results' meta.
KAFKA_VERSION ?=
KAFKA_VERSION_ARGS = $(if $(KAFKA_VERSION),--kafka-version $(KAFKA_VERSION))
kafka-version: install
	@if [ -n "$(KAFKA_VERSION)" ]; then $(PY) -c 'import sys; sys.excepthook = lambda kind, error, tb: \
	sys.stderr.write(f"KAFKA_VERSION: {error}\n"); from airflow_provider_eos.devstack.jars import \
	check_kafka_version; check_kafka_version(sys.argv[1])' '$(KAFKA_VERSION)'; fi

# Every benchmark (hours); BENCH_ARGS picks a part, e.g. BENCH_ARGS="--quick --only throughput".
BENCH_ARGS ?=
bench: kafka-version test-long
	$(PY) -m bench $(KAFKA_VERSION_ARGS) $(BENCH_ARGS)

# The long fault-injection soak (hours): its own 3 brokers and Spark standalone cluster; results in
# soak/results. A smoke run: make soak SOAK_ARGS="--records 30000 --faults 9 --seed 1".
soak: kafka-version test-long
	$(PY) -m soak $(KAFKA_VERSION_ARGS) $(SOAK_ARGS)

# After moving a range in setup.cfg and a green `make test`: record the versions that passed.
constraints: install
	{ sed -n '1,2p' $(CONSTRAINTS); $(PY) -m pip freeze --exclude-editable | grep -vi '^airflow-provider-eos'; } > $(CONSTRAINTS_OUT).new
	mv $(CONSTRAINTS_OUT).new $(CONSTRAINTS_OUT)

clean:
	rm -rf $(VENV) .cache build *.egg-info jvm/target site
