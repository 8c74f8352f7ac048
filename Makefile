# Set-up and checks. Every target creates what it needs; nothing is installed by hand.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PEER := .venv-peer
FIXTURES ?= ../shared/fixtures/smdebug-1.0.34
# torch comes from a pinned wheel (a looser requirement downloads several GB of CUDA packages)
TORCH := torch==2.13.0

.PHONY: demo test lint bench peer clean mutation

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q $(TORCH)
	$(PY) -m pip install -q -e '.[dev,pytorch]'
	touch $@

# smdebug 1.0.34 in its own virtualenv (it needs numpy < 2), for compatibility tests and benchmarks
$(PEER)/.installed:
	$(PYTHON) -m venv $(PEER)
	$(PEER)/bin/python -m pip install -q 'smdebug==1.0.34' 'numpy<2' 'pandas<2.3' requests psutil
	touch $@

peer: $(PEER)/.installed

# 1.0.34's PyTorch hook, for the hook benchmark
$(PEER)/.torch: $(PEER)/.installed
	$(PEER)/bin/python -m pip install -q $(TORCH)
	touch $@

demo: $(VENV)/.installed
	$(PY) examples/pytorch_digits.py

test: $(VENV)/.installed $(PEER)/.installed
	$(VENV)/bin/ruff check src tests bench examples
	SMDEBUG_PEER_PYTHON=$(CURDIR)/$(PEER)/bin/python $(PY) -m pytest -n 2 tests

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench examples

bench: $(VENV)/.installed $(PEER)/.installed $(PEER)/.torch
	SMDEBUG_PEER_PYTHON=$(CURDIR)/$(PEER)/bin/python $(PY) bench/bench_trial.py
	SMDEBUG_PEER_PYTHON=$(CURDIR)/$(PEER)/bin/python $(PY) bench/bench_hook.py

# deliberate bugs in trials/ and codec/, one at a time: every documented exception must be pinned (RELIABILITY.md)
mutation: $(VENV)/.installed
	$(PY) tools/mutate.py

clean:
	rm -rf $(VENV) $(PEER) build *.egg-info src/*.egg-info
