"""The paper's Fig. 6 grid (context windows in words, offline and online, one Ray Tune grid), its
decoding study (seven settings on the same texts, the incoherence proxy, the judges' export) and the round
detector's two trainings, end to end on micro models with small sizes: ``hades-ray reproduce context``,
``reproduce decoding`` and ``reproduce round-detector`` (hades_ray/reproduce/{context,decoding,
round_detector}.py), writing the analyses.json that ``hades-ray report --analyses`` reads."""

from __future__ import annotations

import csv
import json

import pytest

from hades_ray.cli import main
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


@pytest.mark.slow  # a Fig. 6 grid of Ray Train fits (25 s on 2 cores); make test keeps the fig6 command's
def test_fig6_grid_trains_on_judged_labels_in_every_mode_and_word_window_and_draws_the_figure(
    judged, micro_home, ray_local, tmp_path
):
    from hades_ray.reproduce.context import run_context_sweep, write_outputs

    config = load_config("local", None, [*SMALL, "reproduce.context_windows=[5]"])
    # The paper's smallest window (5 words) in both modes: the grid is mode x window, so more windows
    # only add trials (two keep the test short; reproduce.context_windows holds all six).
    results = run_context_sweep(config, judged, tmp_path / "context")
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


@pytest.mark.slow  # a perturbation per decoding (15 s on 2 cores); make test keeps test_models' top-k/top-p
def test_decoding_study_perturbs_the_same_texts_and_exports_every_replacement(micro_home, tmp_path, capsys):
    from hades_ray.pool.rounds import batch_items
    from hades_ray.report.sweeps import decoding_section, read_analyses
    from hades_ray.reproduce.decoding import PAPER_SETTINGS, folder_name
    from hades_ray.reproduce.incoherence import THRESHOLD

    settings = PAPER_SETTINGS  # the command runs the paper's seven
    command = ["reproduce", "decoding", "--output", str(tmp_path), "--texts", "3", "--candidates", "2"]
    assert main([*command, "--executor", "local", "--set", "seed=0"]) == 0
    assert "## Decoding study (3 texts" in capsys.readouterr().out
    analyses = read_analyses(tmp_path / "analyses.json")  # what `hades-ray report --analyses` reads
    results = analyses["decoding"]
    assert set(analyses) == {"decoding", "seconds_total"} and results["seconds"] > 0
    assert decoding_section(results, tmp_path / "analyses.json").tables[0].rows
    assert (tmp_path / "decoding.md").is_file() and (tmp_path / "decoding.png").read_bytes().startswith(b"\x89PNG")
    assert results["candidates"] == 2 and results["preset"] == "local"  # the config's, not a fixed 4
    texts = [json.loads(line)["id"] for line in (tmp_path / "decoding" / "texts.jsonl").read_text().splitlines()]
    assert results["doc_ids"] == texts and len(texts) == 3
    for label, *_ in settings:
        summary = json.loads((tmp_path / "decoding" / folder_name(label) / "summary.json").read_text())
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
    # A rerun with the same config reads the study back; another candidate count stops it unless --force.
    assert main([*command, "--executor", "local", "--set", "seed=0"]) == 0
    assert json.loads((tmp_path / "decoding.json").read_text())["seconds"] == results["seconds"]
    assert main([*command[:-1], "3", "--executor", "local", "--set", "seed=0"]) == 2
    assert "decoding study" in capsys.readouterr().err


def test_an_unchanged_replacement_has_no_surprisal_jump(micro_home):
    from hades_ray.reproduce.incoherence import IncoherenceProxy

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


def test_fig6_on_learnability_labels_is_a_named_option_and_judged_labels_need_a_dataset(pool, tmp_path, capsys):
    from hades_ray.reproduce.context import learnability_data

    train, test, described = learnability_data(pool, tmp_path, seed=0, max_instances=40)
    assert described.startswith("learnability labels") and train.is_file() and test.is_file()
    assert main(["reproduce", "context", "--output", str(tmp_path / "out")]) == 2
    assert "give --dataset" in capsys.readouterr().err


def test_fig6_takes_the_bert_rows_pinned_backbone_unless_detect_backbone_is_set():
    from hades_ray.reproduce.context import fig6_backbone

    config = load_config("paper")
    assert fig6_backbone(config) == ("bert-large-uncased", "the BERT row of tables_paper.yaml")
    assert config.models.revisions["bert-large-uncased"] == "6da4b6a26a1877e173fca3225479512db81a5e5b"
    chosen = load_config("paper", None, ["detect.backbone=roberta-large"])
    assert fig6_backbone(chosen) == ("roberta-large", "detect.backbone")


def test_context_lets_the_users_set_values_win_over_its_own_defaults():
    from hades_ray.cli import build_parser
    from hades_ray.cli_common import config_from_args
    from hades_ray.reproduce.study_cli import CONTEXT_DEFAULTS

    def config_of(*flags):
        args = build_parser().parse_args(["reproduce", "context", "--output", "o", *flags])
        args.overrides = [*CONTEXT_DEFAULTS, *args.overrides]  # as the command does
        return config_from_args(args)

    config = config_of("--epochs", "2", "--set", "ray.num_cpus=8", "--set", "detect.epochs=5", "--windows", "[5,80]")
    assert (config.ray.num_cpus, config.detect.epochs, config.reproduce.context_windows) == (8, 5, [5, 80])
    assert config_of().ray.num_cpus == 0  # no cap of its own
    defaults = config_of()
    assert (defaults.detect.window_unit, defaults.reproduce.context_windows) == ("words", [5, 10, 20, 40, 80, 160])


@pytest.mark.slow  # a Fig. 6 grid trained and read back (25 s on 2 cores); make test keeps the fig6 options' checks
def test_fig6_command_writes_the_analyses_the_report_reads_and_reads_its_grid_back(
    judged, micro_home, ray_local, tmp_path, capsys
):
    from hades_ray.report.sweeps import context_section, read_analyses

    command = ["reproduce", "context", "--dataset", str(judged), "--output", str(tmp_path), "--windows", "[5]"]
    command += ["--epochs", "1", *(w for s in SMALL if not s.startswith("detect.epochs") for w in ("--set", s))]
    assert main(command) == 0
    assert "| window (words) |" in capsys.readouterr().out
    analyses = read_analyses(tmp_path / "analyses.json")
    results = analyses["context_length"]
    assert {(t["mode"], t["window"]) for t in results["trials"]} == {("offline", 5), ("online", 5)}
    assert results["epochs"] == 1 and results["seconds"] > 0
    assert analyses["seconds_total"] == results["seconds"]
    section = context_section(results, tmp_path / "analyses.json")
    assert section.tables[0].rows and section.figures
    assert (tmp_path / "context_length.png").read_bytes().startswith(b"\x89PNG")
    assert main(command) == 0  # the same config and data: the grid's results are read back, not made again
    assert json.loads((tmp_path / "context_length.json").read_text())["seconds"] == results["seconds"]
    assert main([*command, "--windows", "[10]"]) == 2  # other windows: the recorded grid stops it
    assert "--force" in capsys.readouterr().err


def _judged_rounds(workdir):
    """Rounds 0 and 1 of a synthetic pool, each sampled at random and judged by the simulated panel."""
    from hades_ray.annotate.simulate import simulate_judgments
    from hades_ray.select.round import run_round
    from tests.select.fake_pool import build_pool

    build_pool(workdir / "pool", n_docs=10)
    settings = ["select.round_sizes=[50,40]", "select.min_train_instances=1000", "detect.epochs=1"]
    config = load_config(overrides=[*settings, "detect.window=32", "detect.batch_size=16"])
    for k in (0, 1):
        run_round(config, workdir, k, executor=Executor("local"))
        for _ in range(2):
            simulate_judgments(config, workdir, k)


@pytest.mark.slow  # two Ray Train fits (20 s on 2 cores); make test keeps test_cli's transformer fit
def test_round_detector_command_scores_both_trainings_on_a_round_neither_saw(ray_local, tmp_path, capsys):
    _judged_rounds(tmp_path / "wd")
    out = tmp_path / "out"
    command = ["reproduce", "round-detector", "--workdir", str(tmp_path / "wd"), "--test-round", "1"]
    assert main([*command, "--output", str(out), "--set", "select.folds=2"]) == 0
    rows = json.loads((out / "round_detector.json").read_text())
    assert [r["training"] for r in rows] == ["split", "crossval"]
    for r in rows:
        assert r["judged_before"] == 50 and r["test_items"] == 40
        assert set(r["estimated"]) == set(r["actual"]) == {"alpha", "beta", "gamma"} and r["rate_error"] >= 0
    assert rows[1]["trained_on"] == 50 and rows[0]["trained_on"] < 50  # crossval trains on every judged item
    page = (out / "round_detector.md").read_text()
    assert page.startswith("# Round detector: split vs crossval") and "`hades-ray reproduce round-detector" in page
    assert "| split |" in capsys.readouterr().out
