# hotfloat: every target installs what it needs first (`setup`), so a fresh machine needs only `make demo` or `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.hotfloat-stamp
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: setup demo test lock system-deps
.DEFAULT_GOAL := test

## Debian packages the sandbox and tests use (idempotent; skipped when present).
system-deps:
	@tools/system_deps.sh

$(STAMP): requirements.lock libs/hotfloat/pyproject.toml services/pyproject.toml | system-deps
	$(PY) -m venv $(VENV)
	PIP_CONFIG_FILE=/dev/null $(BIN)/pip install -q --find-links /opt/wheels --require-hashes --no-deps -r requirements.lock
	PIP_CONFIG_FILE=/dev/null $(BIN)/pip install -q --no-deps --no-build-isolation -e libs/hotfloat -e services
	touch $(STAMP)

## gRPC stubs are build outputs: regenerated whenever a proto or the generator changes.
PROTO_STAMP := services/hotfloat_services/_proto/__init__.py
$(PROTO_STAMP): $(wildcard protos/hotfloat/v1/*.proto) tools/gen_protos.sh | $(STAMP)
	PYTHON=$(BIN)/python tools/gen_protos.sh

setup: $(STAMP) $(PROTO_STAMP)

demo: setup
	$(BIN)/hotfloat demo examples

test: setup
	$(BIN)/python -m pytest -q tests

## Re-resolve requirements.in into the hashed lock (needs PyPI).
lock:
	$(PY) -m pip install -q uv
	$(PY) -m uv pip compile requirements.in --generate-hashes --python-version 3.11 \
	    --find-links /opt/wheels --index-strategy unsafe-best-match --no-header -o requirements.lock
