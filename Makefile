# Set-up and checks. Every target creates what it needs; nothing is installed by hand.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PEER := .venv-peer
MXVENV := .venv-mxnet
# torch comes from a pinned wheel (a looser requirement downloads several GB of CUDA packages)
TORCH := torch==2.13.0

.PHONY: demo check test lint typecheck docs bench peer peer-xgboost clean chromium trace-viewer mxnet-venv mxnet-fixture mutation wheel

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q $(TORCH)
	$(PY) -m pip install -q -e '.[dev,docs,pytorch,fast,xgboost,tensorflow,plot,cli,export,profiler,dask,huggingface,lightning,jax,traceviewer,perfetto]'
	touch $@

# smdebug 1.0.34 in its own virtualenv (it needs numpy < 2), for compatibility tests and benchmarks
$(PEER)/.installed:
	$(PYTHON) -m venv $(PEER)
	$(PEER)/bin/python -m pip install -q 'smdebug==1.0.34' 'numpy<2' 'pandas<2.3' requests psutil
	touch $@

peer: $(PEER)/.installed

# 1.0.34's XGBoost hook, for tests/xgboost/test_xgb_vs_1034.py: 1.0.34 looks up the distribution
# named `xgboost` (not xgboost-cpu); --no-deps leaves out its CUDA NCCL requirement; it imports
# pkg_resources, which setuptools 81 removed
$(PEER)/.xgboost: $(PEER)/.installed
	$(PEER)/bin/python -m pip install -q --no-deps xgboost==3.2.0
	$(PEER)/bin/python -m pip install -q scipy 'numpy<2' 'setuptools<81'
	touch $@

peer-xgboost: $(PEER)/.xgboost

# MXNet 1.9.1 imports only with numpy < 1.24, so its tests run in their own virtualenv
# (the main one keeps numpy 2); our package goes in editable with its runtime deps
$(MXVENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(MXVENV)
	$(MXVENV)/bin/python -m pip install -q 'mxnet==1.9.1' 'numpy<1.24' 'orjson>=3.9' 'crc32c>=2.3' \
		'ml-dtypes>=0.3' 'google-re2>=1.1' 'pytest>=8' 'hypothesis>=6.100' 'scikit-learn>=1.3'
	$(MXVENV)/bin/python -m pip install -q --no-deps -e .
	touch $@

mxnet-venv: $(MXVENV)/.installed

# smdebug 1.0.34 beside mxnet, only to write tests/mxnet/fixtures again (make mxnet-fixture)
$(MXVENV)-peer/.installed:
	$(PYTHON) -m venv $(MXVENV)-peer
	$(MXVENV)-peer/bin/python -m pip install -q 'mxnet==1.9.1' 'numpy<1.24' 'smdebug==1.0.34' 'scikit-learn>=1.3' 'pandas<2.3' requests psutil
	touch $@

mxnet-fixture: $(MXVENV)-peer/.installed
	$(MXVENV)-peer/bin/python tests/mxnet/write_fixture.py tests/mxnet/fixtures/names-1.0.34.json

# 1.0.34's PyTorch hook, for the hook benchmark
$(PEER)/.torch: $(PEER)/.installed
	$(PEER)/bin/python -m pip install -q $(TORCH) 'setuptools<81'
	touch $@

DEMO := demo-output

# the PyTorch and XGBoost demos, then the built-in rules over the PyTorch trial and its HTML report
demo: $(VENV)/.installed
	$(PY) examples/pytorch_digits.py --out-dir $(DEMO)/pytorch
	$(PY) examples/xgboost_digits.py --out-dir $(DEMO)/xgboost
	$(VENV)/bin/smdebug rules $(DEMO)/pytorch --rule VanishingGradient --rule ExplodingTensor \
		--rule LossNotDecreasing --param mode=TRAIN --rule WeightUpdateRatio || test $$? -eq 1
	$(VENV)/bin/smdebug report $(DEMO)/pytorch -o $(DEMO)/report.html
	rm -rf $(DEMO)/run
	$(VENV)/bin/smdebug run --run-dir $(DEMO)/run --collection weights:save_interval=10 \
		--collection gradients:save_interval=10 --collection losses:save_interval=10 \
		--rule exploding_tensor --action stop -- $(PY) examples/unmodified_pytorch.py
	@echo "open the report with: xdg-open $(CURDIR)/$(DEMO)/report.html"

# headless Chromium (Debian's package) opens the HTML report of CreateXgboostReport in the tests
chromium:
	@test -x /usr/bin/chromium || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium)

# chrome://tracing's trace viewer for tests/profiler/view/test_trace_viewer.py (Debian's Chromium no longer
# serves chrome://tracing): the viewer's page comes with the traceviewer extra (torch-tb-profiler), the
# Web Components v0 polyfill it needs in today's Chromium from npm, into .trace-viewer/
TRACE_VIEWER_POLYFILL := .trace-viewer/node_modules/webcomponents.js/webcomponents.min.js
$(TRACE_VIEWER_POLYFILL):
	@command -v npm >/dev/null || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm)
	npm install --prefix .trace-viewer --no-save --no-package-lock --no-audit --no-fund webcomponents.js@0.7.24

trace-viewer: $(TRACE_VIEWER_POLYFILL)

test: $(VENV)/.installed $(PEER)/.installed $(PEER)/.xgboost $(MXVENV)/.installed chromium trace-viewer
	$(VENV)/bin/ruff check src tests bench examples tools
	$(VENV)/bin/ruff format --check src tests bench examples tools
	$(VENV)/bin/lint-imports
	$(PY) tools/mypy_baseline.py
	$(PY) tools/core_rooms.py --check
	SMDEBUG_PEER_PYTHON=$(CURDIR)/$(PEER)/bin/python $(PY) -m pytest -n 2 tests
	SMDEBUG_PEER_PYTHON=$(CURDIR)/$(PEER)/bin/python $(MXVENV)/bin/python -m pytest -m mxnet \
		-W ignore::DeprecationWarning tests/mxnet

# what a clone of the repo alone checks in under a minute: ruff, import-linter and the
# framework-free tests (no torch, TensorFlow, XGBoost, MXNet, smdebug 1.0.34, moto or Chromium;
# tests/conftest.py, --framework-free). Its virtualenv needs no framework; `make test` adds them.
$(VENV)/.check: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[dev,plot,cli,export,profiler]'
	touch $@

check: $(VENV)/.check
	$(VENV)/bin/ruff check src tests bench examples tools
	$(VENV)/bin/ruff format --check src tests bench examples tools
	$(VENV)/bin/lint-imports
	$(PY) tools/mypy_baseline.py
	$(PY) tools/core_rooms.py --check
	$(PY) -m pytest --framework-free -n 2 -q -r fE tests

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src tests bench examples tools
	$(VENV)/bin/ruff format --check src tests bench examples tools
	$(VENV)/bin/lint-imports
	$(PY) tools/core_rooms.py --check

# the documentation site in site/: the generated reference pages (tools/gen_docs.py), then a strict
# build (a broken link or cross-reference fails); tests/docs/test_site.py builds it in make test too
docs: $(VENV)/.installed
	$(PY) tools/gen_docs.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# mypy: the documented modules strict, the rest within tools/mypy-baseline.txt (which only shrinks)
typecheck: $(VENV)/.check
	$(PY) tools/mypy_baseline.py

bench: $(VENV)/.installed $(PEER)/.installed $(PEER)/.torch
	SMDEBUG_PEER_PYTHON=$(CURDIR)/$(PEER)/bin/python $(PY) bench/bench_trial.py
	SMDEBUG_PEER_PYTHON=$(CURDIR)/$(PEER)/bin/python $(PY) bench/bench_hook.py
	$(PY) bench/bench_xgboost.py

# deliberate bugs in trials/ and codec/, one at a time: every documented exception must be pinned (RELIABILITY.md)
mutation: $(VENV)/.installed
	$(PY) tools/mutate.py

# the package as a wheel in dist/ (distribution smdebug-open, imported as smdebug): pip install it anywhere
wheel:
	$(PYTHON) -m pip wheel --no-deps -w dist .

clean:
	rm -rf $(VENV) $(PEER) $(MXVENV) $(MXVENV)-peer .trace-viewer build dist site *.egg-info src/*.egg-info
