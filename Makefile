# neardup: developer commands. `make test` is the test command (see README).
# Elasticsearch for the integration tests is fetched, started and stopped by tests/es_server.py.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.neardup-installed

.PHONY: venv lint browser test unit demo es clean distclean

## venv: create .venv and install the package with its test extras, building the C++ walk
## (again when pyproject, setup.py or the walk change)
venv: $(STAMP)

$(STAMP): pyproject.toml setup.py neardup_pipeline/text/_textwalk.pyx \
	neardup_pipeline/text/_words.pyx neardup_pipeline/sketch/_sketch.pyx
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e ".[test]"
	touch $@

## lint: ruff and mypy (strict, settings in pyproject.toml)
lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy

## browser: headless Chromium for the report test (Debian's package, once; quiet)
browser:
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium (apt-get) for tests/test_report_browser.py"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update -qq >/dev/null && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; \
	fi

## test: lint, then pytest against a throwaway real Elasticsearch on 127.0.0.1, in two worker
## processes (pytest-xdist), a test file to each in turn: most of a crawl or server test is
## waiting, which the other worker fills. Two, not one a core: each worker may start its own
## secured Elasticsearch (512 MB of heap and a JVM each).
# pytest's exit code 5 (no tests collected) is non-zero, so it fails the target as well.
test: lint browser
	$(BIN)/python tests/es_server.py -- $(BIN)/python -m pytest -n 2 --dist loadfile

## unit: the fast unit tests only (no crawl, subprocess, server or Elasticsearch)
unit: venv
	$(BIN)/python -m pytest -m "not integration and not elasticsearch"

## demo: crawl the bundled demo site into the embedded SQLite index
demo: venv
	$(BIN)/neardup crawl

## es: run the test Elasticsearch in the foreground for development (Ctrl-C stops it)
es:
	$(PYTHON) tests/es_server.py --serve

## clean: remove build output and tool caches (keeps .venv, the built extensions and the
## Elasticsearch download)
clean:
	rm -rf build dist out .pytest_cache .mypy_cache .ruff_cache .hypothesis
	rm -f neardup_pipeline/text/_textwalk.cpp neardup_pipeline/text/_words.c neardup_pipeline/sketch/_sketch.c
	find . -path ./$(VENV) -prune -o -name '*.egg-info' -prune -exec rm -rf {} + \
		-o -name __pycache__ -prune -exec rm -rf {} +

## distclean: clean, and remove .venv and the built extensions too
distclean: clean
	rm -rf $(VENV)
	find neardup_pipeline -name '*.so' -delete
