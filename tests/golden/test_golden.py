"""Golden checks: every sharded job, run on fixed inputs with fixed seeds, writes the recorded content on
any machine (tests/golden/README.md).

Each test runs one job of ``tests/golden/jobs.py`` in this process and compares its output folder with
the one recording in ``golden.json``: discrete content exactly, floats within the stated tolerance
(tests/golden/content.py). Every discrete decision the job took from floats must have a margin above
that tolerance (tests/golden/margins.py), or two machines could take it differently and it would not
be a golden decision. The offline kit is trained on each machine and is another model on another CPU:
its perturbation is checked for properties, not against a recording.

Re-recording is for deliberate output changes only (say which and why in the commit message)::

    HADES_RECORD_GOLDEN=1 python -m pytest -q tests/golden

A recording runs each job twice and refuses to record content that differs between the two runs, and
refuses a decision without its margin. The strict byte-level check of a refactor is
``make golden-diff BASE=<rev>`` (tests/golden/diff.py), which records nothing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from hades_ray.cli import main
from hades_ray.score.html import TOP_WORDS
from tests.golden import margins as margin_checks
from tests.golden.content import compare, float_deviation, output_files, records_of, summarize
from tests.golden.jobs import JOBS, NEEDS_RAY, PERTURB, Inputs
from tests.perturb.test_job import _without_shard  # which shard a document came from follows the layout

pytestmark = pytest.mark.ray  # the jobs of NEEDS_RAY run on the Ray cluster of conftest.ray_local
RECORDING = Path(__file__).with_name("golden.json")
RECORD = os.environ.get("HADES_RECORD_GOLDEN") == "1"


def job_records(folder: Path, paths: dict[str, str], skip: tuple[str, ...]) -> dict[str, dict]:
    """Every output file's records under ``folder`` (``file`` or ``file:column``), summarized."""
    replacements = {**paths, str(folder): "<OUT>"}
    records = {}
    for relative in output_files(folder, skip):
        for suffix, (skeleton, floats) in records_of(folder / relative, replacements).items():
            records[relative.as_posix() + suffix] = summarize(skeleton, floats)
    return records


def _recorded() -> dict[str, dict]:
    return json.loads(RECORDING.read_text())["jobs"] if RECORDING.is_file() else {}


def _record(name: str, records: dict[str, dict]) -> None:
    jobs = _recorded()
    jobs[name] = records
    RECORDING.write_text(json.dumps({"jobs": dict(sorted(jobs.items()))}, indent=1, sort_keys=True) + "\n")


def differences(expected: dict[str, dict], got: dict[str, dict]) -> list[str]:
    lines = [compare(name, expected[name], got[name]) for name in sorted(expected) if name in got]
    lines = [line for line in lines if line]
    lines += [f"{name}: missing" for name in sorted(set(expected) - set(got))]
    lines += [f"{name}: new (not recorded)" for name in sorted(set(got) - set(expected))]
    return lines


# --- margins read from the outputs ------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _parquet_rows(folder: Path) -> list[dict]:
    return [row for part in sorted(folder.glob("*.parquet")) for row in pq.read_table(part).to_pylist()]


def output_margins(name: str, out: Path, margins: margin_checks.Margins) -> None:
    """The decisions whose deciding floats the job writes beside them."""
    if name.startswith("perturb"):
        margin_checks.rank_margins(_parquet_rows(out / "pool"), margins)
    if name.startswith("score"):
        records = _jsonl(out / "scores.jsonl")
        for record in records:
            probabilities = [w["p"] for w in record["words"]]
            margin_checks.threshold_margins("score: flag at the threshold", probabilities, record["threshold"], margins)
        if (out / "report.html").is_file():
            every = [w["p"] for record in records for w in record["words"]]
            margin_checks.order_margins("score: the page's most suspicious words", every, TOP_WORDS, margins)
    if name == "generate_guarded":
        threshold = json.loads((out / "summary.json").read_text())["guard"]["threshold"]
        accepted = [w["p"] for g in _jsonl(out / "generations.jsonl") for w in g["words"]]
        rejected = [i["p_rejected"] for i in _jsonl(out / "interventions.jsonl")]
        margin_checks.threshold_margins(
            "guard: a word taken back at the threshold", accepted + rejected, threshold, margins
        )
        margin_checks.order_margins("guard: the page's most suspicious words", accepted, TOP_WORDS, margins)
    if name.startswith("predict"):  # labels at the classifier's argmax, p >= 0.5 (hades_ray/detect/threshold.py)
        probabilities = [row["p_hallucination"] for row in _jsonl(out / "test.pred.jsonl")]
        margin_checks.threshold_margins("predict: label at p = 0.5", probabilities, 0.5, margins)
    if name.startswith("select_round"):
        for round_dir in sorted(out.glob("round-*")):
            _round_margins(round_dir, margins)


def _round_margins(round_dir: Path, margins: margin_checks.Margins) -> None:
    """A round's screening (p(H) against the detector's threshold, which is itself a validation p(H)),
    its p(H) band and its paraphrase cut (similarity against the setting)."""
    import yaml

    candidates = _parquet_rows(round_dir / "candidates")
    round_json = json.loads((round_dir / "round.json").read_text())
    scored = [c["p_hallucination"] for c in candidates if c.get("p_hallucination") is not None]
    detector = round_dir / "detector" / "model" / "detector.json"
    if detector.is_file():
        threshold = json.loads(detector.read_text())["threshold"]["threshold"]
        pairs = [margin_checks.pair_margin(p, threshold, probabilities=True) for p in scored]
        margins.note("round: screening at the detector's threshold", pairs, round_dir.name)
    for key, bound in (round_json.get("thresholds") or {}).items():
        band = [margin_checks.pair_margin(p, bound, probabilities=True) for p in scored]
        margins.note(f"round: the p(H) band's {key}", band)
    config = yaml.safe_load((round_dir / "config.resolved.yaml").read_text())
    cut, similarities = config["select"]["paraphrase_threshold"], [c["similarity"] for c in candidates]
    margin_checks.similarity_margins("round: paraphrase cut", similarities, cut, margins, round_dir.name)


# --- the jobs ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, micro_home) -> Inputs:
    return Inputs(tmp_path_factory.mktemp("golden", numbered=True), micro_home)


# predict_transformer's span store and Ray actor pool (30-50 s on 2 cores) run in make test-slow; make test
# keeps predict_lr's Ray predict and score_offline's transformer detector.
SLOW_JOBS = {"predict_transformer"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_JOBS else n for n in JOBS])
def test_job_writes_the_recorded_content(name, inputs, request):
    if name in NEEDS_RAY:
        request.getfixturevalue("ray_local")
    runs = []
    for k in range(2 if RECORD else 1):
        out = inputs.root / f"{name}_{k}"
        with margin_checks.recording() as margins:
            skip = JOBS[name](inputs, out)
        output_margins(name, out, margins)
        runs.append((job_records(out, inputs.paths, skip), margins))
    records, margins = runs[0]
    print(f"{name}: smallest margins {margins.summary()}")
    if name == "perturb_micro":
        assert_perturbation_invariants(out)
    assert records, f"{name}: the job wrote no output under {out}"
    assert not margins.failures(), f"{name}: decisions a machine could take differently:\n" + "\n".join(
        margins.failures()
    )
    if RECORD:
        again = differences(records, runs[1][0])
        assert not again, f"{name} is not deterministic: two runs differ:\n" + "\n".join(again)
        _record(name, records)
        return
    expected = _recorded().get(name)
    assert expected is not None, f"{name}: nothing recorded in {RECORDING} (HADES_RECORD_GOLDEN=1 records it)"
    lines = differences(expected, records)
    shared = [k for k in expected if k in records and not compare(k, expected[k], records[k])]
    worst = max((float_deviation(expected[k], records[k]) for k in shared), default=0.0)
    print(f"{name}: largest float deviation {worst:.3g} of the tolerance")
    assert not lines, (
        f"{name}: the outputs under {out} differ from the recorded ones:\n"
        + "\n".join(lines)
        + "\nre-record only deliberate output changes (module docstring)"
    )


# --- the offline kit: properties, not a recording ---------------------------------------------------


def _kit_home() -> Path:
    return Path(os.environ.get("HADES_GOLDEN_KIT_HOME") or Path.home() / ".cache" / "hades_ray")


def _kit_built(home: Path) -> bool:
    done = ("config.json", "build_info.json")  # build_info.json is written last, when a model is finished
    return all((home / "models" / m / f).is_file() for m in ("mlm", "gpt2") for f in done)


@pytest.mark.slow  # two kit perturbations (25 s on 2 cores); make test keeps the kit's packing and prefix checks
def test_offline_kit_perturbation_keeps_every_invariant(inputs, monkeypatch):
    """On the kit built on this machine (``hades-ray models build``; skipped where none is): the same
    output whatever the shard size, batch size and neighbours (only the rows' shard numbers differ), and
    every invariant of a perturbation."""
    home = _kit_home()
    if not _kit_built(home):
        pytest.skip(f"the offline kit is not built under {home}/models (hades-ray models build)")
    monkeypatch.setenv("HADES_RAY_HOME", str(home))
    first, second = inputs.root / "kit_a", inputs.root / "kit_b"
    assert main(["perturb", *PERTURB, "--output", str(first)]) == 0
    other = ["--set", "perturb.read.shard_size=20", "--set", "perturb.resources.replace.batch_size=1"]
    assert main(["perturb", *PERTURB, *other, "--output", str(second)]) == 0
    assert (first / "instances.jsonl").read_bytes() == (second / "instances.jsonl").read_bytes()
    assert _without_shard(_parquet_rows(first / "pool")) == _without_shard(_parquet_rows(second / "pool"))
    assert_perturbation_invariants(first)


def assert_perturbation_invariants(out: Path) -> None:
    from hades_ray.config import HadesConfig
    from hades_ray.text.pipeline import load_pipeline
    from hades_ray.text.stopwords import stop_words

    config = HadesConfig()
    nlp, stops = load_pipeline(config.language, config.spacy_model), stop_words(config.perturb.mask.stopwords)
    pool = _parquet_rows(out / "pool")
    summary = json.loads((out / "summary.json").read_text())
    assert len(pool) == summary["kept"] > 0
    for row in pool:
        text = row["original"]
        for span in reversed(row["spans"]):
            assert span["replacement"] != span["original"], f"{row['doc_id']}: a replacement is the original"
            text = text[: span["orig_start"]] + span["replacement"] + text[span["orig_end"] :]
        assert text == row["perturbed"], f"{row['doc_id']}: the text outside the spans changed"
        sentences = list(nlp(row["original"]).sents)
        untouched = sentences[config.perturb.mask.context_sentences].start_char
        assert all(s["orig_start"] >= untouched for s in row["spans"]), f"{row['doc_id']}: a leading sentence changed"
        for span in row["spans"]:
            words = [w for w in nlp(span["original"]) if not w.is_punct and any(c.isalnum() for c in w.text)]
            assert any(w.text.lower() not in stops for w in words), f"{row['doc_id']}: {span['original']!r} masked"
        assert row["ppl"] == min(row["candidate_ppls"]) and len(row["candidate_ppls"]) == 3
    assert summary["instances"] == sum(len(r["spans"]) for r in pool) == len(_jsonl(out / "instances.jsonl"))
