# Set-up and checks. Every target creates what it needs; nothing is installed by hand.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PEER := .venv-peer
FIXTURES ?= ../shared/fixtures/smdebug-1.0.34
# torch comes from a pinned wheel (a looser requirement downloads several GB of CUDA packages)
TORCH := torch==2.13.0

.PHONY: demo test lint bench peer clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

# smdebug 1.0.34 in its own virtualenv (it needs numpy < 2), for compatibility tests and benchmarks
$(PEER)/.installed:
	$(PYTHON) -m venv $(PEER)
	$(PEER)/bin/python -m pip install -q 'smdebug==1.0.34' 'numpy<2' 'pandas<2.3' requests psutil
	touch $@

peer: $(PEER)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/smdebug inspect $(FIXTURES)/pytorch_mlp

test: $(VENV)/.installed $(PEER)/.installed
	$(VENV)/bin/ruff check src tests bench
	SMDEBUG_PEER_PYTHON=$(CURDIR)/$(PEER)/bin/python $(PY) -m pytest -n 2 tests

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench

bench: $(VENV)/.installed $(PEER)/.installed
	SMDEBUG_PEER_PYTHON=$(CURDIR)/$(PEER)/bin/python $(PY) bench/bench_trial.py

clean:
	rm -rf $(VENV) $(PEER) build *.egg-info src/*.egg-info
