# Everything a fresh Debian machine needs is installed by these targets; nothing by hand.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)

.PHONY: venv services services-down browser test test-unit demo bench clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@rm -f $(VENV)/.installed-*; touch $@

services: venv
	scripts/services/postgres.sh up
	scripts/services/cassandra.sh up
	scripts/services/mediawiki.sh up
	scripts/services/mediawiki-writable.sh up
	scripts/services/mediawiki-chwiki.sh up
	scripts/services/nginx.sh up
	scripts/services/faketime.sh up

services-down:
	-scripts/services/nginx.sh down
	-scripts/services/mediawiki-writable.sh down
	-scripts/services/mediawiki-chwiki.sh down
	-scripts/services/mediawiki.sh down
	-scripts/services/cassandra.sh down
	-scripts/services/postgres.sh down

# Chromium for the dashboard's browser test.
browser:
	scripts/services/browser.sh up

test: venv services browser
	$(BIN)/pytest --durations=30

test-unit: venv
	$(BIN)/pytest -m 'not integration and not slow'

# STACK=embedded (SQLite, the default) or STACK=full (PostgreSQL + Cassandra);
# WIKI=https://…/w/api.php TITLES='A|B' harvests another wiki instead of the local one.
STACK ?= embedded
demo: venv
	@if [ -z "$(WIKI)" ]; then scripts/services/mediawiki.sh up; fi
	@if [ "$(STACK)" = full ]; then scripts/services/postgres.sh up && scripts/services/cassandra.sh up; fi
	STACK="$(STACK)" WIKI="$(WIKI)" TITLES="$(TITLES)" $(BIN)/python -m tools.demo

# Benchmarks: runs every bench/ script against the local services and writes bench/RESULTS.md
# (about 35 minutes, 10 of them for the hub at a million subscriptions; the first run also builds a second
# throwaway wiki under .run/bench).
bench: venv services
	$(BIN)/python -m bench.run

clean: services-down
	rm -rf .run
