# Two entry points for a new user: `make serve` and `make test`. Both set up .venv first.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
LISTEN ?= 127.0.0.1:6875
METRICS_LISTEN ?= 127.0.0.1:6878
CONSOLE_LISTEN ?= 127.0.0.1:6876
DATA_DIR ?= mzdata
SCALE ?= 0.1
# a psycopg checkout for `make psycopg-suite` (empty: clone the installed version's tag)
PSYCOPG_SRC ?=
# what psycopg's test suite needs beyond our test extra (its `test` extra, less mypy,
# pytest-cov and pytest-randomly); pytest-timeout stops a hung test
PSYCOPG_SUITE_DEPS := anyio==4.16.0 pproxy==2.7.9 pytest-timeout==2.4.0
# where `make tpch` keeps the generated Parquet files; `make serve` lets COPY read them
TPCH_DATA ?= tpch-data

# `make serve-multi`: PostgreSQL, two environmentd processes (clusters quickstart and
# analytics) and the balancer on $(LISTEN); data under $(MULTI_DIR)
MULTI_DIR ?= mzdata-multi
# dbt (tests/test_dbt.py) has a venv of its own: it pins protobuf<7, Spark Connect needs 7
DBT_VENV := .venv-dbt
DBT_STAMP := $(DBT_VENV)/.installed
DBT_REQUIREMENTS := tests/dbt_project/requirements.txt

.PHONY: cds serve serve-multi test tpch bench-tpch bench-scaleout psycopg-suite setup clean dbt-venv browser-deps jdbc-deps function-coverage

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "Python 3.11 is required ($(PYTHON) not found)"; exit 1; }
	@command -v java >/dev/null 2>&1 || { echo "Java 17 is required to run Spark (java not found)"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

setup: $(STAMP) cds

# the replica JVM's class-data archive (spark_exec/cds.py): replicas start in about half the
# CPU time with it; built once per machine, JDK and Spark (a minute or two), then a no-op
cds: $(STAMP)
	-$(BIN)/python -m spark_exec.cds

# Debian's headless Chromium and its WebDriver, for the console's browser tests
# (tests/test_console_browser.py skips without them). Installs as root only; elsewhere it
# says what to run and the browser tests skip.
browser-deps:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		if [ "$$(id -u)" = 0 ]; then \
			{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; } || \
				echo "browser tests skipped: installing Debian's chromium failed"; \
		else echo "browser tests skipped: run 'sudo make browser-deps' for Debian's chromium"; fi

# PostgreSQL's JDBC driver (Debian's package) for the JDBC client test; javac comes with Java 17.
jdbc-deps:
	@test -f /usr/share/java/postgresql.jar || \
		if [ "$$(id -u)" = 0 ]; then \
			{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libpostgresql-jdbc-java; } || \
				echo "JDBC test skipped: installing Debian's libpostgresql-jdbc-java failed"; \
		else echo "JDBC test skipped: run 'sudo make jdbc-deps' for Debian's libpostgresql-jdbc-java"; fi

# RELEASE_BUILD=1: dbt-materialize's sdist then leaves out its `dev` extra, a git URL that
# pip refuses in a distribution from PyPI.
$(DBT_STAMP): $(DBT_REQUIREMENTS)
	$(PYTHON) -m venv $(DBT_VENV)
	$(DBT_VENV)/bin/pip install --quiet --upgrade pip
	RELEASE_BUILD=1 $(DBT_VENV)/bin/pip install --quiet -r $(DBT_REQUIREMENTS)
	touch $(DBT_STAMP)

dbt-venv: $(DBT_STAMP)

serve: $(STAMP) cds
	$(BIN)/sqlfront serve --listen $(LISTEN) --data-dir $(DATA_DIR) --metrics-listen $(METRICS_LISTEN) \
		--console-listen $(CONSOLE_LISTEN) --copy-from-dir $(TPCH_DATA)

serve-multi: $(STAMP)
	$(BIN)/python tests/serve_multi.py --dir $(MULTI_DIR) --balancer-port $(lastword $(subst :, ,$(LISTEN)))

test: $(STAMP) cds $(DBT_STAMP) browser-deps jdbc-deps
	$(BIN)/python -m pytest

tpch: $(STAMP)
	$(BIN)/sqlfront load-tpch --scale $(SCALE) --data $(TPCH_DATA) --url postgresql://materialize@$(LISTEN)/materialize

bench-tpch: $(STAMP)
	$(BIN)/python bench/tpch.py

bench-scaleout: $(STAMP)
	$(BIN)/python bench/scaleout.py

# PostgreSQL's functions and operators (its pg_proc, pg_operator, pg_aggregate) that sqlfront
# implements, per chapter of the manual; MISSING=1 lists the rest (issue 26)
function-coverage: $(STAMP)
	$(BIN)/python bench/function_coverage.py $(if $(MISSING),--missing)

# psycopg's own test suite (15 modules) against a fresh server: counts per module, pass rate
psycopg-suite: $(STAMP)
	$(BIN)/pip install --quiet $(PSYCOPG_SUITE_DEPS)
	$(BIN)/python bench/psycopg_suite.py $(if $(PSYCOPG_SRC),--src $(PSYCOPG_SRC))

clean:
	rm -rf $(VENV) $(DBT_VENV) $(DATA_DIR) $(MULTI_DIR)
