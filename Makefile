# hotfloat: every target installs what it needs first (`setup`), so a fresh machine needs only `make demo` or `make test`.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.hotfloat-stamp
export PYTHONDONTWRITEBYTECODE := 1

.PHONY: setup demo test lock system-deps device-carry-native
.DEFAULT_GOAL := test

## Debian packages the sandbox and tests use (idempotent; skipped when present).
system-deps:
	@tools/system_deps.sh

$(STAMP): requirements.lock libs/hotfloat/pyproject.toml services/pyproject.toml | system-deps
	@echo "setup: .venv from the hashed lock (about 2.5 GB; a minute or two on a fresh machine)"
	$(PY) -m venv $(VENV)
	PIP_CONFIG_FILE=/dev/null $(BIN)/pip install -q --find-links /opt/wheels --require-hashes --no-deps -r requirements.lock
	PIP_CONFIG_FILE=/dev/null $(BIN)/pip install -q --no-deps --no-build-isolation -e libs/hotfloat -e services
	touch $(STAMP)

## gRPC stubs are build outputs: regenerated whenever a proto or the generator changes.
PROTO_STAMP := services/hotfloat_services/_proto/__init__.py
$(PROTO_STAMP): $(wildcard protos/hotfloat/v1/*.proto) tools/gen_protos.sh | $(STAMP)
	PYTHON=$(BIN)/python tools/gen_protos.sh

setup: $(STAMP) $(PROTO_STAMP)

## uv (for the engine venv and the locks) from its hashed lock into .venv: never an unpinned one into the system Python.
UV_STAMP := $(VENV)/.uv-stamp
UV       := $(BIN)/uv
$(UV_STAMP): engine/uv.lock | $(STAMP)
	$(BIN)/pip install -q --require-hashes --no-deps -r engine/uv.lock
	touch $(UV_STAMP)

## The whole arena on CPU in a few minutes: stand-in chain, four miners, the validator's pipeline, crowns, weights.
demo: setup
	$(BIN)/hotfloat demo

## Builds .venv-engine (about 5 GB) and, for the container tests, the cpu images through Bazel (about 2 GB plus its
## cache); the Bazel server the tests start is shut down when they end (tests/images/conftest.py). The suite runs in
## two parts: TEST_WORKERS processes (pytest-xdist, a file each at a time; CI has two cores) for every test whose
## verdict does not depend on this machine's speed, then the `timed` ones alone, so no other test's load is their noise.
TEST_WORKERS ?= 2
test: setup engine
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile -m "not timed" tests
	$(BIN)/python -m pytest -q -m timed tests

## Re-resolve requirements.in into the hashed lock (needs PyPI).
lock: $(UV_STAMP)
	$(UV) pip compile requirements.in --generate-hashes --python-version 3.11 \
	    --find-links /opt/wheels --index-strategy unsafe-best-match --no-header -o requirements.lock

## Cubins for the native device recipe (tools/device/recipes/native.sh), built deviceless here (the GPU machine has no cutlass-dsl); carry .device-carry.
device-carry-native: setup
	rm -rf .device-carry/native
	for ex in silu_triton_aot silu_cute_aot; do $(BIN)/hotfloat build examples/$$ex --out .device-carry/native/$$ex || exit 1; done

## Images (issue 5): Bazel builds the compiler, worker and validator images; see docs/images.md.
FLAVOR  ?= cpu
BUNDLE  ?= examples/silu_triton
IMAGE_LAYOUTS := out/images/compiler out/images/worker out/images/validator
.PHONY: image-deps images images-check images-lock up down miner

image-deps:
	@tools/image_deps.sh

images: setup image-deps
	bazel build //images:all --define=flavor=$(FLAVOR)
	tools/images/publish.sh

## Rebuild every action from scratch (a fresh nonce defeats Bazel's cache) and compare with images/digests.lock.
images-check: setup image-deps
	bazel build //images:all --define=flavor=$(FLAVOR) --action_env=HOTFLOAT_REBUILD=$$(date +%s%N)
	tools/images/publish.sh
	$(BIN)/hotfloat image check $(IMAGE_LAYOUTS)

## Re-resolve the image locks (needs PyPI and Debian), rebuild, and record the new digests.
images-lock: setup image-deps
	tools/images/lock.sh
	$(BIN)/hotfloat image base --update-lock --out /tmp/hotfloat-base-lock.tar && rm -f /tmp/hotfloat-base-lock.tar
	$(MAKE) images
	$(BIN)/hotfloat image check --update $(IMAGE_LAYOUTS)

## make up GPUS=N [ADMISSION_GPU=K] FLAVOR=cuda: one qualification service per GPU 0..N-1 (--gpu i, its own socket),
## the validator given all; admission on GPU K (not one of those) or, by default, on CPU (docs/services.md).
GPUS ?= 0
ADMISSION_GPU ?=
up: images
	$(BIN)/hotfloat image up --gpus $(GPUS) $(if $(ADMISSION_GPU),--admission-gpu $(ADMISSION_GPU))

down: setup
	$(BIN)/hotfloat image down

## The miner's pre-submission check inside the compiler image: make miner BUNDLE=path/to/bundle
miner: images
	$(BIN)/hotfloat image miner $(BUNDLE)

## Kubernetes (deploy/k8s/, issue 36): pin every image to images/digests.lock and write the pod seccomp profile; run
## it after `make images-lock` (tests/deploy fails while the manifests are stale).
.PHONY: k8s
k8s: setup
	$(BIN)/python tools/k8s_manifests.py

## The engine venv: SGLang 0.5.13.post1 on its pinned torch 2.11.0 (the H200's stack; docs/compat.md), for
## `hotfloat compat` and the seam tests. Cached by a stamp; installed with uv from hashed locks (pip takes ~10 min for
## torch's CUDA wheels).
ENGINE_VENV  := .venv-engine
ENGINE_STAMP := $(ENGINE_VENV)/.hotfloat-stamp
UV_FLAGS     := --find-links /opt/wheels --find-links /opt/pypi-more/files --index-strategy unsafe-best-match
.PHONY: engine engine-lock device-engine device-flashinfer

$(ENGINE_STAMP): engine/requirements.lock engine/requirements-nodeps.lock libs/hotfloat/pyproject.toml libs/hotfloat_sglang/pyproject.toml | $(UV_STAMP)
	@echo "engine: .venv-engine, SGLang on its CUDA torch (about 5 GB; a few minutes on a fresh machine)"
	$(UV) venv -q --python $(PY) $(ENGINE_VENV)
	$(UV) pip install -q --python $(ENGINE_VENV)/bin/python $(UV_FLAGS) --require-hashes --no-deps -r engine/requirements.lock
	$(UV) pip install -q --python $(ENGINE_VENV)/bin/python $(UV_FLAGS) --require-hashes --no-deps -r engine/requirements-nodeps.lock
	$(UV) pip install -q --python $(ENGINE_VENV)/bin/python --no-deps -e libs/hotfloat -e libs/hotfloat_sglang
	touch $(ENGINE_STAMP)

engine: $(ENGINE_STAMP)

## Re-resolve the engine locks: the CPU venv's, the device payload's and the cuda worker image's (needs PyPI and Debian).
engine-lock: $(UV_STAMP)
	$(UV) pip compile engine/requirements.in --generate-hashes --python-version 3.11 $(UV_FLAGS) --no-header -o engine/requirements.lock
	$(UV) pip compile engine/requirements-nodeps.in --no-deps --generate-hashes --python-version 3.11 $(UV_FLAGS) --no-header -o engine/requirements-nodeps.lock
	$(PY) engine/device_payload.py lock
	tools/images/lock.sh cuda

## The SGLang runtime for the H200 (cp312 wheels by hash, sgl-kernel cut to sm_90, libnuma, bubblewrap), packed into
## .device-carry/engine/ as xz chunks <= 60 MiB + SHA256SUMS; carry .device-carry, then `bash tools/device/run.sh engine_install:90 ...`.
DEVICE_ENGINE := .device-carry/engine/SHA256SUMS
$(DEVICE_ENGINE): engine/device-payload.lock engine/device-debs.lock engine/device_payload.py libs/hotfloat_sglang/pyproject.toml
	$(PY) engine/device_payload.py build

device-engine: $(DEVICE_ENGINE)

## FlashInfer's sm_90a attention modules built here ahead of time (nvcc; ~15 min on 2 cores) into .device-carry/flashinfer/;
## `. tools/device/helpers/flashinfer_prebuilt.sh` after sglang_env.sh makes FlashInfer load them instead of JIT-compiling.
DEVICE_FLASHINFER := .device-carry/flashinfer/SHA256SUMS
$(DEVICE_FLASHINFER): engine/flashinfer_aot.py $(DEVICE_ENGINE) | $(ENGINE_STAMP)
	$(ENGINE_VENV)/bin/python engine/flashinfer_aot.py

device-flashinfer: $(DEVICE_FLASHINFER)
