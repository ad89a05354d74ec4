# hades_ray: `make demo` runs the perturbation job on the embedded offline corpus; `make test` runs the tests.
# Both create .venv and install what they need on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of torch; pyproject accepts a range so GPU clusters resolve a CUDA build instead.
TORCH_PIN ?= torch==2.13.0
DEMO_OUT ?= out/demo
DEMO_LIMIT ?= 200
RAY_ADDRESS ?= http://127.0.0.1:8265
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER := 0

.PHONY: install models demo demo-loop test lint bench submit-perturb clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_PIN)"
	$(PY) -m pip install -q -e ".[dev,bench]"
	touch $@

install: $(VENV)/.installed

models: install
	$(VENV)/bin/hades-ray models build

demo: models
	$(VENV)/bin/hades-ray perturb --input demo --limit $(DEMO_LIMIT) --output $(DEMO_OUT)

demo-loop: models
	$(PY) jobs/demo_loop.py --workdir out/demo-loop

test: install
	$(PY) -m pytest -q -p no:cacheprovider tests

lint: install
	$(VENV)/bin/ruff check hades_ray jobs tests

bench: models
	$(PY) jobs/bench_perturb.py
	$(PY) jobs/bench_detect.py

# Submit the perturbation job to a running cluster (RAY_ADDRESS: its dashboard, e.g. http://127.0.0.1:8265).
submit-perturb: install
	RAY_ADDRESS=$(RAY_ADDRESS) $(VENV)/bin/ray job submit --working-dir . \
		--runtime-env-json '{"excludes": [".venv", "out", ".git"]}' -- \
		python jobs/perturb.py --input $(or $(INPUT),demo) --output $(or $(OUTPUT),/tmp/hades_ray/perturb) \
		--preset $(or $(PRESET),local)

clean:
	rm -rf out .pytest_cache
