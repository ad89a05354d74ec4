"""hades-ray report: each section on a small pool, rounds, dataset and detector files made here;
corpus text escaped; the page rendered once in headless Chromium with every figure loaded."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hades_ray.cli import main as cli_main
from hades_ray.report import paper_figures
from hades_ray.report.inputs import ReportInputError
from hades_ray.pool.schemas import POOL_SCHEMA

EVIL = "<script>alert('pwned')</script>"
WORDS = "river castle summer garden people music winter forest village history".split()


def _document(k: int, rng: np.random.Generator) -> dict:
    """A six-sentence text with three words replaced (one replacement carries punctuation: an artifact)."""
    sentences = [" ".join(rng.choice(WORDS, 6)) + "." for _ in range(6)]
    original = " ".join(sentences)
    spans, perturbed, cursor = [], "", 0
    for n, match in enumerate(list(re.finditer(r"\w+", original))[14:30:6]):
        replacement = "lake," if (k == 0 and n == 0) else ("tower" if n % 2 else "meadow")
        perturbed += original[cursor : match.start()]
        start = len(perturbed)
        perturbed += replacement
        spans.append({"start": start, "end": len(perturbed), "orig_start": match.start(), "orig_end": match.end(),
                      "original": match.group(), "replacement": replacement, "ner": "", "pos": "NOUN"})  # fmt: skip
        cursor = match.end()
    perturbed += original[cursor:]
    if k == 0:
        perturbed += " " + EVIL
    ppls = [float(v) for v in rng.uniform(50, 300, 4)]
    best = int(np.argmin(ppls))
    title = EVIL if k == 0 else f"Title {k}"
    return {"doc_id": f"d{k}", "title": title, "original": original, "perturbed": perturbed, "ppl": ppls[best],
            "candidate": best, "candidate_ppls": ppls, "spans": spans, "shard": 0, "row": k}  # fmt: skip


def make_pool(folder: Path, docs: int = 12, with_artifacts: bool = True) -> Path:
    rng = np.random.default_rng(0)
    rows = [_document(k, rng) for k in range(docs)]
    (folder / "pool").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=POOL_SCHEMA), folder / "pool" / "part-00000.parquet")
    summary = {"read": docs + 5, "kept": docs, "too_short": 4, "no_maskable_words": 0, "quarantined": 1,
               "quarantined_by_reason": {"too_long": 1}, "instances": 3 * docs}  # fmt: skip
    if with_artifacts:
        summary["artifacts"] = {"replacements": 3 * docs, "with_artifacts": 1, "rate": round(1 / (3 * docs), 4)}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def make_workdir(folder: Path) -> Path:
    counts0 = {"pool": 100, "assigned_before": 0, "unjudged": 100, "after_thresholds": 100, "after_paraphrase": 90,
               "after_swaps": 88, "after_rebalance": 88, "batch": 40}  # fmt: skip
    counts1 = {"pool": 100, "assigned_before": 40, "unjudged": 60, "after_thresholds": 50, "after_paraphrase": 45,
               "after_swaps": 45, "after_rebalance": 35, "batch": 30}  # fmt: skip
    rounds = [
        {"round": 0, "counts": counts0, "messages": []},
        {"round": 1, "counts": counts1, "messages": ["a <b>note</b>"], "rates": {"alpha": 0.7, "beta": 0.6,
         "gamma": 0.65}, "ratio": {"R": 0.5}},
    ]  # fmt: skip
    for data in rounds:
        (folder / f"round-{data['round']:03d}").mkdir(parents=True)
        (folder / f"round-{data['round']:03d}" / "round.json").write_text(json.dumps(data))
    judge_round_zero(folder / "round-000")
    return folder


def judge_round_zero(round_dir: Path) -> None:
    """Four items, four simulated judges each: two unanimous, one 3-1 (H), one 2-2 (needs two more)."""
    from hades_ray.config import default_config, save_config

    save_config(default_config(), round_dir)
    votes = {"a": "HHHH", "b": "NNNN", "c": "HHHN", "d": "HHNN"}
    (round_dir / "batch.jsonl").write_text("".join(json.dumps({"id": item}) + "\n" for item in votes))
    (round_dir / "judgments").mkdir()
    rows = [f'"{item}","sim-0{j}","{label}","simulated judge {j}","true"' for item, labels in votes.items()
            for j, label in enumerate(labels, start=1)]  # fmt: skip
    header = '"item_id","judge_id","label","where","simulated"'
    (round_dir / "judgments" / "import-001.simulated.csv").write_text("\n".join([header, *rows]) + "\n")


def make_dataset(folder: Path) -> Path:
    """stats.json and tags.json made by the dataset build's own code (hades_ray/annotate/dataset.py)."""
    from hades_ray.annotate.dataset import dataset_stats, span_tags

    frame = pd.DataFrame({"id": [f"i{k}" for k in range(8)], "doc_id": ["a", "a", "b", "b", "c", "c", "d", "d"],
                          "label": [1, 0, 1, 1, 0, 0, 1, 0], "split": ["train"] * 4 + ["valid"] * 2 + ["test"] * 2,
                          "orig_pos": ["NOUN", "NOUN", "VERB", "PROPN", "NOUN", "ADJ", "PROPN", "VERB"],
                          "orig_ent": ["", "", "", "PERSON", "", "", "GPE", ""]})  # fmt: skip
    folder.mkdir(parents=True)
    (folder / "stats.json").write_text(json.dumps(dataset_stats(frame)))
    (folder / "tags.json").write_text(json.dumps(span_tags(frame)))
    for split, labels in (("train", [1, 0, 1, 0, 1, 0]), ("valid", [1, 0]), ("test", [0, 1, 1, 0])):
        make_predictions(folder / f"{split}.txt", labels, [0.5] * len(labels))
    return folder


def make_predictions(path: Path, labels, p) -> Path:
    with path.open("w") as out:
        for k, (y, pk) in enumerate(zip(labels, p)):
            record = {"replaced": f"a ===w{k}=== b", "replaced_ids": [1, 1], "hallucination": int(y), "id": f"i{k}",
                      "p_hallucination": float(pk), "pred": int(pk >= 0.5)}  # fmt: skip
            out.write(json.dumps(record) + "\n")
    return path


def make_analyses(path: Path) -> Path:
    trials = [{"mode": m, "window": w, "gmean": 0.5 + w / 1000, "auc": 0.6 + w / 1000, "accuracy": 0.55}
              for m in ("offline", "online") for w in (32, 64)]  # fmt: skip
    strategies = [{"decoding": d, "settings": "", "kept_ppl_median": 100.0 + k, "replacements": 30,
                   "distinct_replacements": 10 + k, "distinct_share": (10 + k) / 30, "artifact_rate": 0.01 * k,
                   "auc": 0.7 - 0.05 * k, "auc_ci_low": 0.6 - 0.05 * k, "auc_ci_high": 0.8 - 0.05 * k, "test": 30}
                  for k, d in enumerate(("greedy", "top_k", "top_p"))]  # fmt: skip
    data = {"context_length": {"labels": "learnability", "epochs": 1, "train": 70, "test": 100, "test_h": 50,
                               "test_n": 50, "trials": trials},
            "decoding": {"documents": 5, "candidates": 2, "detector": "LR", "labels": "learnability",
                         "strategies": strategies}}  # fmt: skip
    path.write_text(json.dumps(data))
    return path


class Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def parse(html: str) -> Elements:
    parser = Elements()
    parser.feed(html)
    return parser


@pytest.fixture(scope="module")
def full_report(tmp_path_factory, micro_home) -> Path:
    """Every section: a pool, rounds, a dataset, two detectors' predictions and analyses results."""
    root = tmp_path_factory.mktemp("report")
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 2, 60)
    good = np.clip(0.25 + 0.5 * labels + rng.normal(0, 0.2, 60), 0, 1)
    code = cli_main(
        ["report", "--pool", str(make_pool(root / "pool")), "--workdir", str(make_workdir(root / "wd")),
         "--dataset", str(make_dataset(root / "dataset")),
         "--detector", f"good={make_predictions(root / 'good.jsonl', labels, good)}",
         "--detector", f"random={make_predictions(root / 'random.jsonl', labels, rng.random(60))}",
         "--analyses", str(make_analyses(root / "analyses.json")), "--feature-limit", "40",
         "--output", str(root / "out")]
    )  # fmt: skip
    assert code == 0
    return root / "out"


def test_every_section_with_its_numbers(full_report):
    report = json.loads((full_report / "report.json").read_text())
    sections = report["sections"]
    expected = ["pool", "features", "pos_ner", "rounds", "detectors", "context_length", "decoding", "paper"]
    assert list(sections) == expected
    pool = sections["pool"]["numbers"]
    assert pool["spans_per_document"] == {"n": 12, "mean": 3.0, "median": 3.0}
    assert pool["kept_over_median_other"]["median"] < 1  # the kept candidate is the most fluent of its document
    assert pool["other_candidates_ppl"]["n"] == 12 * 3 and pool["quarantined_by_reason"] == {"too_long": 1}
    features = sections["features"]["numbers"]
    assert set(features["features"]) == {"mlm_prob", "mlm_entropy", "tfidf", "ppmi"}
    assert "the dataset's labels" in features["labels"] and features["instances"] == 12
    for result in features["features"].values():
        assert result["ci_low"] <= result["difference"] <= result["ci_high"]
    assert sections["pos_ner"]["numbers"]["pos"]["NOUN"] == {"H": 1, "N": 2, "share_h": 0.3333}
    # The paper's Table 1B and Table 4 beside ours, the spans grouped by tags.json's original-span tags.
    assert set(features["table_1b"]) == set(features["features"])
    table_4 = features["table_4"]
    assert "tags.json" in table_4["tags"] and list(table_4["rows"]) == list(paper_figures.TABLE_4)
    h_mean, h_std, n_h = table_4["rows"]["All"]["ppmi"]["H"]
    assert n_h == features["features"]["ppmi"]["n_h"] and abs(h_mean - features["features"]["ppmi"]["mean_h"]) < 1e-9
    tables = {t["title"].split(":")[0]: t for t in sections["features"]["tables"]}
    all_ppmi = next(r for r in tables["Table 4 beside ours"]["rows"] if r[:2] == ["All", "PPMI"])
    assert all_ppmi[2] == "0.198 (0.144)" and all_ppmi[4] == "0.216 (0.129)"  # the paper's, beside ours
    # The text's Fig. 4 figures from stats.json: VERB 1 H / 1 N, 6 of 8 spans without an entity, both entities H.
    fig_4 = sections["pos_ner"]["numbers"]["paper_text"]
    ours = {k: v["ours"] for k, v in fig_4.items()}
    assert ours == {"verbs_n": 50.0, "spans_not_entities": 75.0, "entities_h": 100.0}
    assert [v["as_the_paper_says"] for v in fig_4.values()] == ["no", "no", "yes"]
    early = sections["rounds"]["numbers"]["paper_text"]["early_rounds_h"]
    assert abs(early["ours"] - 200 / 3) < 1e-9 and early["paper"] == "~90% H"
    assert sections["pool"]["numbers"]["paper_text"]["pool"]["paper"] == "~1M"
    flows = [r["flow"] for r in sections["rounds"]["numbers"]["rounds"]]
    assert [sum(f.values()) for f in flows] == [100, 100]  # every instance of the pool is accounted for once
    assert flows[1]["Eq. 1 subsampling"] == 10 and flows[0]["paraphrase cut"] == 10
    agreement = sections["rounds"]["numbers"]["rounds"][0]["agreement"]
    assert agreement["labels"] == {"H": 2, "N": 1} and (agreement["consensus"], agreement["needs_more"]) == (3, 1)
    assert sections["rounds"]["numbers"]["rounds"][1]["agreement"] is None  # round 1 has no judgments yet
    assert any("SIMULATED" in note for note in sections["rounds"]["notes"])
    metrics = sections["detectors"]["numbers"]["metrics"]
    assert metrics["good"]["auc"] > 0.9 > metrics["random"]["auc"]
    (pair,) = sections["detectors"]["numbers"]["paired"]
    assert pair["n"] == 60 and pair["mcnemar_exact_p"] < 0.05
    assert pair["gmean_ci_low"] <= pair["gmean_difference"] <= pair["gmean_ci_high"]
    context_rows = sections["context_length"]["tables"][0]["rows"]
    assert len(context_rows) == 4 and context_rows[0][4] == "0.109"  # Hanley-McNeil: AUC 0.632, 50 H and 50 N
    assert [r[0] for r in sections["decoding"]["tables"][0]["rows"]] == ["greedy", "top_k", "top_p"]
    markdown = (full_report / "report.md").read_text()
    assert "## Decoding strategies" in markdown and "figures/pool_sizes.png" in markdown


def test_pool_alone_gives_learnability_labels_and_the_same_page_twice(tmp_path, micro_home):
    from hades_ray.report.build import build_report

    pool = make_pool(tmp_path / "pool", docs=6)
    result = build_report(tmp_path / "out", pool=pool, feature_limit=20)
    assert result["sections"] == ["pool", "features"]
    features = json.loads(result["paths"]["json"].read_text())["sections"]["features"]["numbers"]
    assert "learnability" in features["labels"] and features["instances"] == 20
    again = build_report(tmp_path / "again", pool=pool, feature_limit=20)  # same seed and input, same page
    assert again["paths"]["html"].read_bytes() == result["paths"]["html"].read_bytes()


def test_detector_folders_are_scored_only_on_rounds_they_never_saw(tmp_path):
    from hades_ray.report.detectors import eval_instances

    with (tmp_path / "all.txt").open("w") as out:
        for k, (label, judged_in) in enumerate([(1, 0), (0, 1), (1, 2), (0, 2), (-1, 2)]):
            out.write(json.dumps({"replaced": "a ===b=== c", "replaced_ids": [1, 1], "hallucination": label,
                                  "id": f"i{k}", "round": judged_in}) + "\n")  # fmt: skip
    assert [i.extra["id"] for i in eval_instances([tmp_path / "all.txt"], 2)] == ["i2", "i3"]
    assert len(eval_instances([tmp_path / "all.txt"], 0)) == 4
    with pytest.raises(ReportInputError, match="no labelled instances from round 3"):
        eval_instances([tmp_path / "all.txt"], 3)


def test_artifact_rate_counted_from_the_pool_when_the_summary_has_none(tmp_path):
    from hades_ray.report.pool import pool_section

    numbers = pool_section(make_pool(tmp_path / "p", docs=4, with_artifacts=False)).numbers
    assert numbers["artifacts"]["with_artifacts"] == 1 and numbers["artifacts"]["replacements"] == 12


def test_max_docs_caps_the_pool_rows_read_and_says_so(tmp_path):
    from hades_ray.report.pool import pool_section

    section = pool_section(make_pool(tmp_path / "p", docs=4), max_docs=2)
    assert section.numbers["documents_in_report"] == 2 and section.numbers["spans_per_document"]["n"] == 2
    assert section.numbers["summary"]["kept"] == 4  # the counts still cover the whole pool
    assert any("first 2 of the 4 kept documents" in note for note in section.notes)


def test_corpus_text_is_escaped(full_report):
    html = (full_report / "report.html").read_text()
    tags = parse(html).tags
    assert not [t for t, _ in tags if t == "script"]
    assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in html  # the example text and its title
    assert "<b>note</b>" not in html and "a &lt;b&gt;note&lt;/b&gt;" in html  # round messages too
    assert "<script>" not in (full_report / "report.md").read_text()


def test_figures_are_valid_images(full_report):
    import matplotlib.image

    images = [a["src"] for t, a in parse((full_report / "report.html").read_text()).tags if t == "img"]
    assert len(images) >= 8
    for src in images:
        assert src.startswith("data:image/png;base64,")
        pixels = matplotlib.image.imread(io.BytesIO(base64.b64decode(src.split(",", 1)[1])), format="png")
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_page_renders_in_chromium_with_every_figure_loaded(full_report, tmp_path):
    page = (full_report / "report.html").read_text()
    # The test's own probe (the report has no script): after load, the title says how many images decoded.
    probe = (
        "<script>window.addEventListener('load',()=>{const i=[...document.images];"
        "document.title='loaded '+i.filter(x=>x.complete&&x.naturalWidth>0).length+' of '+i.length;});</script>"
    )
    (tmp_path / "probe.html").write_text(page.replace("</body>", probe + "</body>"))
    flags = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000"]
    dom = subprocess.run([*flags, "--dump-dom", (tmp_path / "probe.html").as_uri()], capture_output=True, text=True,
                         timeout=60).stdout  # fmt: skip
    count = re.search(r"<title>loaded (\d+) of (\d+)</title>", dom)
    assert count and count.group(1) == count.group(2) and int(count.group(2)) >= 8
    shot = tmp_path / "page.png"
    subprocess.run([*flags, f"--screenshot={shot}", "--window-size=1200,3000", (full_report / "report.html").as_uri()],
                   capture_output=True, timeout=60)  # fmt: skip
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_inputs_are_one_line_errors(tmp_path, capsys):
    pool = make_pool(tmp_path / "pool", docs=2)
    assert cli_main(["report", "--pool", str(tmp_path / "missing"), "--output", str(tmp_path / "o")]) == 2
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{not json")
    code = cli_main(
        ["report", "--pool", str(pool), "--analyses", str(tmp_path / "bad.json"), "--output", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert code == 2 and "bad.json: unreadable JSON" in err and len(err.strip().splitlines()) == 1
    (pool / "summary.json").write_text("[1, 2]")
    from hades_ray.report.pool import pool_section

    with pytest.raises(ReportInputError, match="expected a JSON object"):
        pool_section(pool)


def test_a_sample_of_the_labelled_instances_says_it_is_one(tmp_path):
    from hades_ray.report.labelled import labelled_instances

    dataset = make_dataset(tmp_path / "dataset")  # 12 instances
    instances, source = labelled_instances(None, dataset, seed=0, limit=5)
    assert len(instances) == 5 and "a seeded sample of 5 of its 12 (--feature-limit)" in source
    assert labelled_instances(None, dataset, seed=0, limit=5)[0] == instances  # the same seed, the same sample
    whole, source = labelled_instances(None, dataset, seed=0, limit=300)
    assert len(whole) == 12 and "seeded sample" not in source
