"""The paper's Fig. 6 grid (context windows in words, offline and online, one Ray Tune grid) and its
decoding study (seven settings on the same texts, the incoherence proxy, the judges' export), end to end
on micro models with small sizes (jobs/context_sweep.py, jobs/decoding_sweep.py)."""

from __future__ import annotations

import csv
import json

import pytest

from hades_ray.config import load_config
from hades_ray.perturb.runner import run_perturb
from hades_ray.pipeline.executor import Executor

SMALL = ["seed=0", "detect.epochs=1", "detect.batch_size=16", "detect.window_unit=words", "ray.num_cpus=2"]


@pytest.fixture(scope="module")
def pool(micro_home, tmp_path_factory):
    config = load_config("local", None, ["seed=0", "perturb.rank.num_candidates=2"])
    out = tmp_path_factory.mktemp("pool")
    run_perturb(config, "demo", out, limit=40, executor=Executor.of(config.ray, "local"))
    return out


@pytest.fixture
def judged(tmp_path):
    """A small HaDes-format dataset whose test labels are withheld (as the published Wiki-Hades test.txt)."""
    from hades_ray.detect.synthetic import toy_instances
    from hades_ray.io.hades_format import write_instances

    folder = tmp_path / "dataset"
    write_instances(toy_instances(40, seed=1), folder / "train.txt")
    write_instances(toy_instances(16, seed=2), folder / "valid.txt")
    write_instances([{**i.to_json(), "hallucination": -1} for i in toy_instances(8, seed=3)], folder / "test.txt")
    return folder


def test_fig6_grid_trains_on_judged_labels_in_every_mode_and_word_window_and_draws_the_figure(
    judged, micro_home, ray_local, tmp_path
):
    from jobs.context_sweep import run_context_sweep, write_outputs

    config = load_config("local", None, SMALL)
    # The paper's smallest window (5 words) in both modes: the grid is mode x window, so more windows
    # only add trials (two keep the test short; jobs/analyses.py runs all six).
    results = run_context_sweep(config, judged, tmp_path / "context", [5])
    assert results["window_unit"] == "words" and results["label_kind"] == "judged"
    assert "valid.txt" in results["labels"] and (results["train"], results["test"]) == (40, 16)  # test withheld
    # The model the paper ran Fig. 6 with: the tables grid's BERT row (here the kit's stand-in for it).
    assert results["preset"] == "local" and results["backbone"] == "local:mlm"
    assert results["backbone_from"] == "the BERT row of tables_local.yaml"
    grid = {(t["mode"], t["window"]) for t in results["trials"]}
    assert grid == {("offline", 5), ("online", 5)}
    assert all(t["error"] is None and t["auc"] is not None and t["bss"] is not None for t in results["trials"])
    files = write_outputs(results, tmp_path)
    table = (tmp_path / "context_length.md").read_text()
    assert "| window (words) |" in table and "\n| 5 |" in table
    assert files[-1].read_bytes().startswith(b"\x89PNG")


def test_decoding_study_perturbs_the_same_texts_and_exports_every_replacement(micro_home, tmp_path):
    from hades_ray.annotate.judgments import batch_items
    from jobs.decoding_sweep import PAPER_SETTINGS, folder_name, run_decoding_sweep
    from jobs.incoherence import THRESHOLD

    settings = [PAPER_SETTINGS[0], PAPER_SETTINGS[1], PAPER_SETTINGS[-1]]  # greedy, top-k 5, top-p 0.8
    config = load_config("local", None, ["seed=0", "perturb.rank.num_candidates=2"])
    results = run_decoding_sweep(config, tmp_path, texts=3, settings=settings, executor="local")
    assert results["candidates"] == 2 and results["preset"] == "local"  # the config's, not a fixed 4
    texts = [json.loads(line)["id"] for line in (tmp_path / "texts.jsonl").read_text().splitlines()]
    assert results["doc_ids"] == texts and len(texts) == 3
    for label, *_ in settings:
        summary = json.loads((tmp_path / folder_name(label) / "summary.json").read_text())
        assert summary["kept"] == 3  # every setting perturbed the same three texts
    rows = {s["label"]: s for s in results["strategies"]}
    assert [rows[k]["settings"] for k in ("greedy", "top-k 5", "top-p 0.8")] == ["argmax", "top_k=5", "top_p=0.8"]
    for s in results["strategies"]:
        assert s["documents"] == 3 and 0 <= s["incoherent"] <= s["replacements"]
        assert s["incoherence_rate_ln1000"] <= s["incoherence_rate"] <= s["incoherence_rate_ln10"]
    assert results["proxy"]["threshold_nats"] == pytest.approx(THRESHOLD, abs=1e-4)
    # Every replacement of every setting is one item for judges, ids that do not name the setting.
    judging = results["judging"]
    items = batch_items(judging["workdir"], 0)
    assert len(items) == judging["items"] == sum(s["replacements"] for s in results["strategies"])
    assert len({i["id"] for i in items}) == len(items) and not any("greedy" in i["id"] for i in items)
    with open(judging["files"][0], newline="", encoding="utf-8") as handle:
        exported = list(csv.DictReader(handle))
    assert {r["item_id"] for r in exported} == {i["id"] for i in items}
    assert all(r["question"].startswith("Does the highlighted replacement make the perturbed text incoherent")
               for r in exported)  # fmt: skip
    key = [json.loads(line) for line in open(judging["key"], encoding="utf-8")]
    assert {k["setting"] for k in key} == {label for label, *_ in settings}
    assert all(k["proxy_incoherent"] is not None for k in key)  # the proxy's verdict for each judged item


def test_an_unchanged_replacement_has_no_surprisal_jump(micro_home):
    from jobs.incoherence import IncoherenceProxy

    proxy = IncoherenceProxy("local:gpt2")
    text = "The bridge was built in 1932 by the city council and painted red in 1954."
    start = text.index("council")
    row = {"doc_id": "d", "original": text, "perturbed": text,
           "spans": [{"start": start, "end": start + 7, "orig_start": start, "orig_end": start + 7,
                      "original": "council", "replacement": "council"}]}  # fmt: skip
    (span,) = proxy.measure([row])
    assert span["jump"] == 0 and not span["incoherent"]
    offsets, nll = proxy.token_surprisals(text)
    # The whole text's span holds every token that covers a character; zero-width tokens (a tokenizer's
    # added special tokens) cover none and are never part of a span.
    covering = offsets[:, 1] > offsets[:, 0]
    assert covering.sum() > 0.8 * len(offsets)
    assert proxy.span_surprisal(text, 0, len(text)) == pytest.approx(float(nll[covering].sum()))


def test_fig6_on_learnability_labels_is_a_named_option_and_judged_labels_need_a_dataset(pool, tmp_path):
    from hades_ray.errors import UserError
    from jobs.analyses import main
    from jobs.context_sweep import learnability_data

    train, test, described = learnability_data(pool, tmp_path, seed=0, max_instances=40)
    assert described.startswith("learnability labels") and train.is_file() and test.is_file()
    with pytest.raises(UserError, match="give --dataset"):
        main(["--output", str(tmp_path / "out"), "--skip-decoding"])


def test_fig6_takes_the_bert_rows_pinned_backbone_unless_detect_backbone_is_set():
    from jobs.context_sweep import fig6_backbone

    config = load_config("paper")
    assert fig6_backbone(config) == ("bert-large-uncased", "the BERT row of tables_paper.yaml")
    assert config.models.revisions["bert-large-uncased"] == "6da4b6a26a1877e173fca3225479512db81a5e5b"
    chosen = load_config("paper", None, ["detect.backbone=roberta-large"])
    assert fig6_backbone(chosen) == ("roberta-large", "detect.backbone")


def test_analyses_lets_the_users_set_values_win_over_its_own_flags():
    from jobs.analyses import overrides, parse_args

    args = parse_args(["--epochs", "2", "--set", "ray.num_cpus=8", "--set", "detect.epochs=5"])
    config = load_config(args.preset, args.config_file, overrides(args))
    assert (config.ray.num_cpus, config.detect.epochs) == (8, 5)
    assert load_config(None, None, overrides(parse_args([]))).ray.num_cpus == 0  # no cap of its own
