# hades_ray: `make demo` runs the perturbation job on the embedded offline corpus; `make test` runs the tests.
# Both create .venv and install what they need on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The CPU build of torch; pyproject accepts a range so GPU clusters resolve a CUDA build instead.
TORCH_PIN ?= torch==2.13.0
DEMO_OUT ?= out/demo
DEMO_LIMIT ?= 200
RAY_PORT ?= 6379
DASHBOARD_PORT ?= 8265
RAY_ADDRESS ?= http://127.0.0.1:$(DASHBOARD_PORT)
# submit-perturb: input rows to read (empty: all), and the python that runs the job on the cluster
# (this venv's, for a head started with `make ray-head` on this machine; `python` on a cluster image).
LIMIT ?= 50
RAY_HEAD_ARGS ?=
JOB_PYTHON ?= $(abspath $(PY))
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER := 0

.PHONY: install models demo demo-loop device-check report test test-fresh test-cluster test-slow chaos golden-diff lint bench ray-head submit-perturb clean

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

# REPLACE/RANK tokens/s, busy share, peak memory, byte identity and the 1M-segment plan, in one run:
# paper-sized bf16 models on a CUDA device, the tests' micro models on a CPU (jobs/device_check.py).
device-check: install
	$(PY) jobs/device_check.py --output out/device_check.json

# The analyses report (out/report/report.html) from `make demo` and `make demo-loop` outputs, plus the
# decoding and context-length studies of `hades-ray reproduce` (read back from out/analyses/ when already run).
# The round detectors are compared on round 2's judged items, which neither of them trained on.
report: demo demo-loop
	$(VENV)/bin/hades-ray reproduce decoding --output out/analyses
	$(VENV)/bin/hades-ray reproduce context --dataset out/demo-loop/dataset --output out/analyses
	$(VENV)/bin/hades-ray report --pool $(DEMO_OUT) --workdir out/demo-loop --dataset out/demo-loop/dataset \
		$$(for k in 1 2; do m=out/demo-loop/round-00$$k/detector/model; test -d $$m && echo --detector round$$k=$$m; done) \
		--split all --min-round 2 --analyses out/analyses/analyses.json --output out/report

# Two pytest workers, a test file each at a time (module fixtures stay shared within a file; the files of
# tests/serve go to one worker together, for the app they share: tests/conftest.py): most tests
# wait on Ray's start-up, actors and subprocesses more than they compute, so two halve the wall time on
# two cores. TEST_WORKERS=0 runs them in this process.
TEST_WORKERS ?= 2
PYTEST_WORKERS = $(PY) -m pytest -q -p no:cacheprovider $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadfile)
# The cluster scenarios (a job through `ray job submit` to a head that demands the token, a node lost
# mid-job, the paper preset's 4-GPU pools; tests marked `cluster`) each start a cluster of their own and
# take minutes on two cores: `make test-cluster` runs them (`pytest tests` runs everything). Marker `slow`:
# the fault scenarios that kill a process of their own and resume, and the proven end-to-end runs whose
# cost is Ray's start-up (a Ray Train fit is about 15 s before its first step on two cores, an actor pool
# about 10 s) and that a faster test in make test covers in part: `make test-slow` runs them (README
# "Tests and benchmarks" lists them). make test keeps store errors (tests/pipeline/test_chaos.py), and
# `make chaos` the whole campaign.
test: install
	$(PYTEST_WORKERS) --durations=25 -m "not cluster and not slow and not fresh_process" tests

# Marker fresh_process: the checks that start a Python process of their own to test its environment (the
# kit's scores under forced AVX2 kernels, Ray's token auth when init_ray starts a cluster): ~15 s each on
# two cores, nearly all of it the child's imports and Ray's start. CI runs them after make test (.ci/run).
test-fresh: install
	$(PYTEST_WORKERS) -m fresh_process tests

test-cluster: install
	$(PY) -m pytest -q -p no:cacheprovider -m cluster tests

test-slow: install
	$(PYTEST_WORKERS) -m slow tests

# The whole fault campaign (make test keeps a seeded slice, tests/pipeline/test_chaos.py): seeded runs of the
# perturbation job under store errors, a store outage, a full disk (a tmpfs: root only), killed drivers,
# workers and actors, each audited; and the S3 lock race. Its table: jobs/results/chaos.md.
chaos: install
	$(PY) jobs/chaos.py

# The strict check of a refactor: every golden job at BASE (in a git worktree, with its own code) and in
# this working tree, on this machine, their outputs compared byte for byte (tests/golden/README.md).
BASE ?= HEAD
golden-diff: install
	$(PY) -m tests.golden.diff --base $(BASE)

lint: install
	$(VENV)/bin/ruff check hades_ray jobs tests

bench: models
	$(PY) jobs/bench_perturb.py
	$(PY) jobs/bench_detect.py
	$(PY) jobs/bench_plan.py
	$(PY) jobs/bench_guard.py
	$(PY) jobs/bench_score.py
	$(PY) jobs/bench_serve.py

# A private local Ray head for `make submit-perturb`: loopback only, token auth on. The token lives in
# ~/.ray/auth_token (made once, readable by you alone); stop the head with `.venv/bin/ray stop`.
ray-head: install
	$(VENV)/bin/ray get-auth-token --generate >/dev/null
	chmod 600 "$$HOME/.ray/auth_token"
	RAY_AUTH_MODE=token $(VENV)/bin/ray start --head --node-ip-address=127.0.0.1 --port=$(RAY_PORT) \
		--dashboard-host=127.0.0.1 --dashboard-port=$(DASHBOARD_PORT) $(RAY_HEAD_ARGS)

# Submit the perturbation job to a running cluster (RAY_ADDRESS: its dashboard), sending the token of
# ~/.ray/auth_token. Defaults: the embedded leads, LIMIT=50 rows (minutes on a laptop), the local preset
# (its models are built first), output under out/. On a cluster: JOB_PYTHON=python LIMIT= INPUT=s3://...
submit-perturb: install $(if $(filter local,$(or $(PRESET),local)),models)
	RAY_AUTH_MODE=token RAY_ADDRESS=$(RAY_ADDRESS) $(VENV)/bin/ray job submit --working-dir . \
		--runtime-env-json '{"excludes": [".venv", "out", ".git"]}' -- \
		$(JOB_PYTHON) -m hades_ray perturb --input $(or $(INPUT),demo) --output $(or $(OUTPUT),$(CURDIR)/out/submit-perturb) \
		--preset $(or $(PRESET),local) $(if $(LIMIT),--limit $(LIMIT))

clean:
	rm -rf out .pytest_cache
