"""Golden digests: fixed-seed runs of every sharded job write byte-identical outputs (issue 15, item 8).

Each test runs one job through the CLI on fixed inputs with fixed seeds, and compares a sha256 digest of
its output folder with the one stored in ``tests/golden/digests.json``. A mismatch names the files that
changed. The digests were recorded before the engine refactor, so a refactor that changes any output
byte fails here.

What a digest covers: every file under the job's output folder, by sorted relative path and bytes,
except what legitimately varies from run to run:

- the marker folders in ``MARKER_DIRS`` (finish times, stage seconds, fingerprints of absolute paths
  and file times), the lock files in ``LOCK_FILES`` and Ray Train's run folder in ``RUN_DIRS``
  (checkpoints named by the time they were taken; the exported detector beside it is hashed);
- in every ``.json`` file, the time-based keys in ``TIME_KEYS``, at any depth (the file is hashed
  as normalized JSON: sorted keys, those keys dropped);
- absolute paths: in every text file, the job's output folder is written ``<OUT>``, the test's other
  folders ``<ROOT>`` (inputs, detectors), the micro models' ``HADES_RAY_HOME`` ``<HOME>`` and the
  offline kit's home ``<KIT>``.

Floating-point outputs depend on the CPU (its vector units: AVX2 and AVX-512/AMX machines round
differently) and on the versions of torch, transformers, spaCy and pyarrow. ``digests.json`` therefore
holds one recording per environment (``recordings``: each an ``environment`` and its ``digests``), and a
run compares with the recording made on a machine like its own. A machine with none fails, naming its
environment: CI runs on the session's own machine, and a session that finds itself on a new kind of
machine records its digests from the landed main (a worktree of it) before changing anything::

    git worktree add /tmp/landed origin/main   # or the commit the session started from
    cp tests/golden/test_output_digests.py tests/golden/digests.json /tmp/landed/tests/golden/
    (cd /tmp/landed && HADES_RECORD_GOLDEN=1 python -m pytest -q tests/golden/test_output_digests.py)
    cp /tmp/landed/tests/golden/digests.json tests/golden/

after which the session's own changes must leave every digest as the landed code wrote it.

The offline-kit variant of perturb runs only where ``hades-ray models build`` has built the kit
(``~/.cache/hades_ray/models``, or ``$HADES_GOLDEN_KIT_HOME/models``) and only if that kit's weights are
the ones recorded (``kit_models``); it skips otherwise (CI does not build the kit).

Re-recording is for deliberate output changes only (say which and why in the commit message; it
replaces this machine's recording, and the other environments' go stale until re-recorded there)::

    HADES_RECORD_GOLDEN=1 python -m pytest -q tests/golden/test_output_digests.py

A recording run executes each job twice and refuses to record a digest that differs between the two.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from pathlib import Path

import pytest

from hades_ray.cli import main

DIGESTS = Path(__file__).with_name("digests.json")
RECORD = os.environ.get("HADES_RECORD_GOLDEN") == "1"
MARKER_DIRS = ("markers", "_markers")
LOCK_FILES = ("_lock.json", ".lock")  # the output lock (pipeline/lock.py) and a round's (annotate/locking.py)
# Ray Train's own run folder beside a trained detector: checkpoints named by the time they were taken.
# The exported detector next to it (weights.safetensors, detector.json, metrics.json) is hashed.
RUN_DIRS = ("ray_train",)
# Keys whose values are wall-clock times or durations, dropped at any depth of every JSON output.
TIME_KEYS = (
    "timings",  # summary.json of perturb and generate (wall and busy seconds, tokens/s); round.json (per phase)
    "wall_seconds",  # score's summary.json
    "stage_seconds",  # score's summary.json
    "examples_per_s",  # a trained detector's metrics.json (round 1's detector)
)
# The same small settings as tests/perturb/test_job.py: 3 candidates, 3 shards of the 20 leads.
PERTURB = ["--input", "demo", "--limit", "20", "--executor", "local", "--examples", "0", "--seed", "0"]
PERTURB += ["--set", "perturb.rank.num_candidates=3", "--set", "perturb.read.shard_size=8"]
TEXTS = [
    "Marie Curie was a physicist and chemist who conducted pioneering research on radioactivity in Paris .",
    "The river flows north through the valley, past three old mills, before it meets the sea near Bergen.",
    "He won the award in 1998 and retired two years later to a farm in Ohio where he wrote poems.",
    "Short one here.",
    "The bridge was built in 1932 by the city council and painted red in 1954.",
]
PROMPTS = ["the city of", "in 1990 the band released their first album", "he was born in", "the river"]
ROUND = ["--set", "select.round_sizes=[50,30]", "--set", "select.min_train_instances=10", "--seed", "0"]
ROUND += ["--set", "detect.epochs=1", "--set", "detect.window=32", "--set", "detect.batch_size=16"]
LR = ["--set", "detect.backbone=local:mlm", "--set", "detect.feature_window=32", "--seed", "0"]


# --- digests ---------------------------------------------------------------------------------------


def _drop_time_keys(value):
    if isinstance(value, dict):
        return {k: _drop_time_keys(v) for k, v in value.items() if k not in TIME_KEYS}
    if isinstance(value, list):
        return [_drop_time_keys(v) for v in value]
    return value


def normalized_bytes(path: Path, paths: dict[str, str]) -> bytes:
    """A file's bytes with the test's absolute paths replaced, and a JSON file without its time keys."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data  # binary (parquet, safetensors): hashed as written
    for real, name in sorted(paths.items(), key=lambda item: -len(item[0])):
        text = text.replace(real, name)
    if path.suffix == ".json":
        text = json.dumps(_drop_time_keys(json.loads(text)), sort_keys=True, indent=1, ensure_ascii=False)
    return text.encode("utf-8")


def counted(relative: Path) -> bool:
    return not (set(relative.parts[:-1]) & {*MARKER_DIRS, *RUN_DIRS}) and relative.name not in LOCK_FILES


def file_digests(folder: Path, paths: dict[str, str], skip: tuple[str, ...] = ()) -> dict[str, str]:
    """sha256 of each counted file under ``folder`` (normalized), by relative path; ``skip``: top folders
    that are inputs, not outputs."""
    digests = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder)
        if counted(relative) and relative.parts[0] not in skip:
            digests[relative.as_posix()] = hashlib.sha256(normalized_bytes(path, paths)).hexdigest()
    return digests


def folder_digest(files: dict[str, str]) -> str:
    """One digest of a folder: sha256 over its sorted relative paths and their files' digests."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].encode() + b"\n")
    return h.hexdigest()


def environment() -> dict:
    """What floating-point outputs depend on besides the code: the CPU's vector units and the libraries."""
    import numpy
    import pyarrow
    import spacy
    import torch
    import transformers

    flags = set()
    if Path("/proc/cpuinfo").is_file():
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    vector = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    libraries = {m.__name__: m.__version__ for m in (numpy, pyarrow, spacy, torch, transformers)}
    return {"machine": platform.machine(), "python": sys.version.split()[0], "cpu": vector, **libraries}


def _recordings() -> list[dict]:
    return json.loads(DIGESTS.read_text())["recordings"] if DIGESTS.is_file() else []


def _load() -> dict:
    """This machine's recording (``digests``, ``kit_models``), or an empty one."""
    here = environment()
    return next((r for r in _recordings() if r["environment"] == here), {"environment": here, "digests": {}})


def _record(name: str, files: dict[str, str], extra: dict | None = None) -> None:
    mine = _load()
    mine["digests"][name] = {"digest": folder_digest(files), "files": files}
    mine.update(extra or {})
    mine["digests"] = dict(sorted(mine["digests"].items()))
    others = [r for r in _recordings() if r["environment"] != mine["environment"]]
    recordings = sorted([*others, mine], key=lambda r: json.dumps(r["environment"], sort_keys=True))
    DIGESTS.write_text(json.dumps({"recordings": recordings}, indent=1, sort_keys=True) + "\n")


def _difference(expected: dict[str, str], got: dict[str, str]) -> str:
    changed = [f for f in sorted(expected) if f in got and got[f] != expected[f]]
    lines = [f"  changed: {f}" for f in changed]
    lines += [f"  missing: {f}" for f in sorted(set(expected) - set(got))]
    lines += [f"  new:     {f}" for f in sorted(set(got) - set(expected))]
    return "\n".join(lines)


def check(name: str, run, paths: dict[str, str], extra: dict | None = None) -> None:
    """``run()`` makes the output folder and returns it (plus top folders to leave out); its digest must be
    the recorded one. Recording: ``run`` twice, and the two digests must agree."""
    folder, skip = run(0)
    files = file_digests(folder, {**paths, str(folder): "<OUT>"}, skip)
    assert files, f"{name}: the job wrote no output under {folder}"
    if RECORD:
        again_folder, _ = run(1)
        again = file_digests(again_folder, {**paths, str(again_folder): "<OUT>"}, skip)
        assert again == files, f"{name} is not deterministic: two runs differ in\n{_difference(files, again)}"
        _record(name, files, extra)
        return
    recorded = _load()
    if not recorded["digests"]:
        known = [r["environment"] for r in _recordings()]
        pytest.fail(
            f"{name}: no digests recorded on a machine like this one ({recorded['environment']}; recorded on "
            f"{known}): record them from the landed main, as the module docstring says, then compare"
        )
    expected = recorded["digests"].get(name)
    assert expected is not None, f"{name}: no digest recorded in {DIGESTS} (HADES_RECORD_GOLDEN=1 records one)"
    if folder_digest(files) == expected["digest"]:
        return
    message = f"{name}: the outputs in {folder} differ from the recorded ones:\n{_difference(expected['files'], files)}"
    pytest.fail(message + "\nA refactor must not change outputs; re-record only deliberate changes (module docstring).")


# --- fixtures: inputs, detectors -------------------------------------------------------------------


@pytest.fixture(scope="module")
def root(tmp_path_factory, micro_home) -> Path:
    return tmp_path_factory.mktemp("golden", numbered=True)


@pytest.fixture(scope="module")
def paths(root, micro_home) -> dict[str, str]:
    return {str(root): "<ROOT>", str(micro_home): "<HOME>"}


def _random_head_detector(directory: Path, backbone: str, mode: str, window: int, seed: int = 0) -> Path:
    """A detector folder with a seeded random head, exported the way training exports one (as in
    tests/score/test_score.py): no training, so its scores are fixed by the seed."""
    import torch

    from hades_ray.config import HadesConfig, save_config
    from hades_ray.detect.model import build_classifier, export_detector, trainable_state
    from hades_ray.models.registry import resolve_model

    settings = {"backbone": backbone, "revision": None, "mode": mode, "window": window}
    settings |= {"pooling": "max", "mlp_layers": 2, "freeze": "all"}
    torch.manual_seed(seed)
    tokenizer, model = build_classifier(resolve_model(backbone), settings)
    export_detector(directory, trainable_state(model), settings, tokenizer)
    save_config(HadesConfig(), directory)
    return directory


@pytest.fixture(scope="module")
def online_detector(root) -> Path:
    return _random_head_detector(root / "detectors" / "online", "local:gpt2", "online", 160)


@pytest.fixture(scope="module")
def offline_detector(root) -> Path:
    return _random_head_detector(root / "detectors" / "offline", "local:minilm", "offline", 48)


@pytest.fixture(scope="module")
def hades_files(root) -> dict[str, Path]:
    """Toy HaDes files: train and valid (labelled), and a test file with a bad line (quarantined by
    ``--skip-bad``) and an unlabelled instance, as in tests/detect/test_cli.py."""
    from hades_ray.detect.synthetic import toy_instances
    from hades_ray.io.hades_format import write_instances

    folder = root / "inputs"
    folder.mkdir(parents=True, exist_ok=True)
    test = [json.dumps(i.to_json()) for i in toy_instances(8, seed=3)]
    test.insert(2, '{"replaced": "a ===b=== c", "replaced_ids": [0, 0], "hallucination": 1}')
    test.append(json.dumps({**toy_instances(1, seed=4)[0].to_json(), "hallucination": -1}))
    (folder / "test.jsonl").write_text("\n".join(test) + "\n", encoding="utf-8")
    return {
        "train": write_instances(toy_instances(24, seed=1), folder / "train.jsonl"),
        "valid": write_instances(toy_instances(8, seed=2), folder / "valid.jsonl"),
        "test": folder / "test.jsonl",
    }


@pytest.fixture(scope="module")
def lr_detector(root, hades_files, ray_local) -> Path:
    """An LR detector trained on the toy files (the feature path: micro MLM features, seeded fit)."""
    out = root / "detectors" / "lr"
    args = ["train", "--detector", "lr", "--train", str(hades_files["train"]), "--valid", str(hades_files["valid"])]
    assert main([*args, "--output", str(out), *LR]) == 0
    return out


@pytest.fixture(scope="module")
def texts(root) -> Path:
    path = root / "inputs" / "texts.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(TEXTS * 2) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def prompts(root) -> Path:
    path = root / "inputs" / "prompts.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"id": f"p{k}", "prompt": p}) for k, p in enumerate(PROMPTS)] + ["not json"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- perturb ---------------------------------------------------------------------------------------


def test_perturb_micro_models(root, paths):
    def run(k):
        out = root / f"perturb_micro_{k}"
        assert main(["perturb", *PERTURB, "--output", str(out)]) == 0
        return out, ()

    check("perturb_micro", run, paths)


def _kit_home() -> Path:
    return Path(os.environ.get("HADES_GOLDEN_KIT_HOME") or Path.home() / ".cache" / "hades_ray")


def kit_models_digest(home: Path) -> str:
    """The built kit's weights, configs and tokenizers (not ``build_info.json``, which holds the build's
    times), so that another kit is not taken for the one the digest was recorded with."""
    files = {}
    for name in ("mlm", "gpt2"):
        for path in sorted(p for p in (home / "models" / name).rglob("*") if p.is_file()):
            if path.name != "build_info.json":
                files[path.relative_to(home).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return folder_digest(files)


def test_perturb_offline_kit(root, paths, monkeypatch):
    home = _kit_home()
    built = ("config.json", "build_info.json")  # build_info.json: written last, when the model is finished
    if not all((home / "models" / m / f).is_file() for m in ("mlm", "gpt2") for f in built):
        pytest.skip(f"the offline kit is not built under {home}/models (hades-ray models build)")
    kit = kit_models_digest(home)
    recorded = _load().get("kit_models")
    if not RECORD and recorded != kit:
        pytest.skip(f"the kit under {home} is not the one the digest was recorded with ({recorded})")
    monkeypatch.setenv("HADES_RAY_HOME", str(home))

    def run(k):
        out = root / f"perturb_kit_{k}"
        assert main(["perturb", *PERTURB, "--output", str(out)]) == 0
        return out, ()

    check("perturb_kit", run, {**paths, str(home): "<KIT>"}, extra={"kit_models": kit})


# --- score -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, detector, extra",
    [
        ("score_online", "online_detector", ["--html"]),
        ("score_offline", "offline_detector", []),
        ("score_lr", "lr_detector", []),
    ],
)
def test_score(name, detector, extra, root, paths, texts, request):
    model = request.getfixturevalue(detector)

    def run(k):
        out = root / f"{name}_{k}"
        args = ["score", "--model", str(model), "--input", str(texts), "--output", str(out), "--executor", "local"]
        assert main([*args, "--shard-size", "4", "--words", "all", *extra]) == 0
        return out, ()

    check(name, run, paths)


# --- generate --------------------------------------------------------------------------------------


@pytest.mark.parametrize("guarded", [False, True], ids=["plain", "guarded"])
def test_generate(guarded, root, paths, prompts, request):
    name = "generate_guarded" if guarded else "generate_plain"
    guard = []
    if guarded:
        detector = request.getfixturevalue("online_detector")
        guard = ["--guard", str(detector), "--threshold", "0.5", "--max-retries", "2", "--html"]

    def run(k):
        out = root / f"{name}_{k}"
        args = ["generate", "--prompts", str(prompts), "--output", str(out), "--executor", "local", "--seed", "3"]
        assert main([*args, "--max-new-tokens", "16", "--batch-size", "2", "--shard-size", "3", *guard]) == 0
        if guarded:  # the guard acted: the digest covers its resampling, not only its scores
            assert (out / "interventions.jsonl").read_text().strip()
        return out, ()

    check(name, run, paths)


# --- selection rounds ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rounds(root, ray_local) -> list[Path]:
    """Work directories after rounds 0 and 1 (simulated judges between them) on the synthetic pool of
    tests/select/test_round.py; one per recording run."""
    from tests.select.fake_pool import build_pool

    workdirs = []
    for k in range(2 if RECORD else 1):
        workdir = root / f"rounds_{k}"
        build_pool(workdir / "pool", n_docs=10)
        workdirs.append(workdir)
    return workdirs


def _round(workdir: Path, index: int) -> None:
    assert main(["round", "--workdir", str(workdir), "--round", str(index), "--executor", "local", *ROUND]) == 0


def test_select_round_0(rounds, paths):
    def run(k):
        _round(rounds[k], 0)
        return rounds[k], ("pool",)

    check("select_round_0", run, paths)


def test_select_round_1(rounds, paths):
    def run(k):
        if not (rounds[k] / "round-000" / "round.json").is_file():  # round 0's test did not run
            _round(rounds[k], 0)
        for _ in range(2):  # two simulated panels, as tests/select/test_round.py
            assert main(["annotations", "simulate", "--workdir", str(rounds[k]), "--round", "0", *ROUND]) == 0
        _round(rounds[k], 1)
        return rounds[k], ("pool",)

    check("select_round_1", run, paths)


# --- predict ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, detector", [("predict_transformer", "offline_detector"), ("predict_lr", "lr_detector")])
def test_predict(name, detector, root, paths, hades_files, ray_local, request):
    model = request.getfixturevalue(detector)

    def run(k):
        out = root / f"{name}_{k}"
        args = ["predict", "--model", str(model), "--data", str(hades_files["test"])]
        assert main([*args, "--output", str(out / "test.pred.jsonl"), "--skip-bad"]) == 0
        assert (out / "quarantine.jsonl").read_text().strip()  # the bad line, with its reason
        return out, ()

    check(name, run, paths)
