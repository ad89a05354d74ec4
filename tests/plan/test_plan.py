"""``hades-ray plan``: its counts against a real run of the perturbation stages (every model forward
recorded), its chunking against the model functions, and the plan's arithmetic and errors."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from transformers.models.bert.modeling_bert import BertModel
from transformers.models.gpt2.modeling_gpt2 import GPT2Model

from hades_ray.cli import main
from hades_ray.config import load_config
from hades_ray.io.readers import plan_shards, read_shard
from hades_ray.perturb import rank, rank_prefix, replace
from hades_ray.perturb.packing import packing_of
from hades_ray.perturb.settings import RankConfig
from hades_ray.perturb.stages import perturb_stages
from hades_ray.plan.count import batches, count_sample, load_tokenizers

SENTENCES = [
    "The river rises in the northern hills and flows south through farmland.",
    "Its valley was settled by farmers in the twelfth century.",
    "A stone bridge crosses the river at the old market town of Ashford.",
    "The town grew rich from the wool trade and built a large church.",
    "Mills along the banks ground grain and later spun cotton for export.",
    "A canal linked the river to the coast in 1790, carrying coal and timber.",
    "Floods in the winter of 1864 destroyed two of the mills and the canal locks.",
    "Today the valley is known for its orchards, walking trails and a summer music festival.",
    "The river's lower reaches form a nature reserve where otters and kingfishers breed.",
]


def _texts() -> list[dict]:
    """Documents of several lengths, two of them too short for the 5-sentence filter, one not prose."""
    records = [{"id": f"doc{n}", "text": " ".join(SENTENCES[:n])} for n in (5, 6, 6, 7, 8, 9, 9)]
    records += [{"id": "short1", "text": " ".join(SENTENCES[:2])}, {"id": "short2", "text": SENTENCES[3]}]
    records += [{"id": "digits", "text": "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20. " * 5}]
    return records


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    path = tmp_path_factory.mktemp("plan") / "sample.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _texts()), encoding="utf-8")
    return path


def _config():
    overrides = ["perturb.rank.num_candidates=3", "perturb.read.shard_size=6"]
    overrides += ["perturb.resources.replace.batch_size=2", "perturb.resources.rank.batch_size=3"]
    return load_config("local", overrides=overrides)


def _recording(monkeypatch, cls, shapes: list) -> None:
    original = cls.forward

    def forward(self, *args, input_ids=None, **kwargs):
        shapes.append(tuple(input_ids.shape))
        return original(self, *args, input_ids=input_ids, **kwargs)

    monkeypatch.setattr(cls, "forward", forward)


@pytest.fixture(scope="module")
def real_run(micro_home, sample):
    """The job's stages in-process over the sample, with every MLM and causal-LM forward recorded."""
    monkeypatch = pytest.MonkeyPatch()
    mlm_shapes, lm_shapes, statuses, rank_batches = [], [], [], []
    _recording(monkeypatch, BertModel, mlm_shapes)
    _recording(monkeypatch, GPT2Model, lm_shapes)
    config = _config()
    stages = perturb_stages(config)
    for stage in stages:
        stage.setup()
    for shard in plan_shards(str(sample), config.perturb.read.shard_size):
        table = read_shard(shard)
        for stage in stages:
            if stage.name == "rank":
                rows = table.select(["status", "rank_ids"]).to_pylist()
                rank_batches += batches(rows, config.perturb.resources.rank.batch_size)
            table = stage(table)
        statuses += table.column("status").to_pylist()
    monkeypatch.undo()
    return {"mlm": mlm_shapes, "lm": lm_shapes, "statuses": statuses, "rank_batches": rank_batches}


@pytest.fixture(scope="module")
def counted(micro_home, sample):
    config = _config()
    return count_sample(config, str(sample), load_tokenizers(config))


def test_mlm_counts_equal_the_forwards_a_real_run_makes(real_run, counted):
    done = sum(rows * width for rows, width in real_run["mlm"])
    assert counted.mlm_forward_calls == len(real_run["mlm"]) > 0
    assert counted.mlm_token_forwards_done == done
    assert sorted(counted.mlm_shapes) == sorted(real_run["mlm"])
    # sequences of one length share a forward: no padding, the ideal is what is done
    assert counted.mlm_token_forwards_ideal == done
    assert counted.masked_positions >= counted.mlm_steps
    assert counted.candidates == 3 * counted.perturbed


def test_documents_filtered_out_are_counted_by_reason(real_run, counted):
    statuses = real_run["statuses"]
    assert counted.read == len(statuses) == 10
    assert counted.perturbed == statuses.count("ok") == 7
    assert counted.filtered == {s: statuses.count(s) for s in set(statuses) - {"ok"}}
    assert counted.filtered["too_short"] == 2
    assert counted.spacy_words > 0 and counted.spacy_tokens > counted.spacy_words


def test_rank_forwards_follow_the_planning_function(real_run, counted):
    """With the shared prefix (the default) the job makes the forwards ``shared_forward_shapes`` plans;
    the count models each candidate at its original text's length and each prefix from MASK's spans."""
    planned, real_prefix, whole = [], 0, 0
    for batch in real_run["rank_batches"]:
        documents = [(rank_prefix.shared_prefix_length(r["rank_ids"]), [len(i) for i in r["rank_ids"]]) for r in batch]
        documents = [doc for doc, row in zip(documents, batch) if row["status"] == "ok"]
        shapes = rank_prefix.shared_forward_shapes(documents)
        planned += shapes["prefix"] + shapes["remainder"]
        real_prefix += sum(prefix for prefix, _ in documents)
        whole += sum(n for _, lengths in documents for n in lengths)
    assert planned == real_run["lm"]
    real_tokens = sum(rows * width for rows, width in real_run["lm"])
    # close, not exact: the candidates' lengths and prefixes are modelled
    assert abs(counted.lm_tokens - whole) <= 0.1 * whole
    assert abs(counted.lm_prefix_tokens - real_prefix) <= 0.15 * real_prefix
    assert abs(counted.lm_token_forwards_done - real_tokens) <= 0.15 * real_tokens
    assert counted.lm_token_forwards_whole == counted.lm_tokens  # exact packing: no padding
    assert counted.lm_token_forwards_shared == counted.lm_token_forwards_done < counted.lm_token_forwards_whole


def test_rank_counts_without_the_shared_prefix_are_the_whole_candidates(micro_home, sample, counted):
    config = _config()
    config.perturb.rank.share_prefix = False
    off = count_sample(config, str(sample), load_tokenizers(config))
    assert off.lm_shapes == counted.lm_whole_shapes
    assert off.lm_token_forwards_done == counted.lm_token_forwards_whole
    assert off.lm_token_forwards_shared == counted.lm_token_forwards_shared  # both ways counted either way


def test_chunking_matches_the_model_calls_at_any_token_budget(micro_home, monkeypatch):
    from hades_ray.models.registry import load_causal_lm, load_masked_lm

    tokenizer, mlm = load_masked_lm("local:mlm", "cpu")
    bans = replace.vocabulary_bans(tokenizer, mlm.config.vocab_size)
    rng = np.random.default_rng(0)
    sequences = []
    for length, masks in [(9, 3), (14, 1), (14, 5), (30, 2), (6, 4)]:  # unequal lengths: padding is counted
        ids = [int(t) for t in rng.integers(1000, 2000, size=length)]
        positions = list(range(2, 2 + masks))
        sequences.append(replace.MaskedSequence(ids, positions, [ids[p] for p in positions], frozenset([2]), rng))
    recorded_mlm, recorded_lm = [], []
    _recording(monkeypatch, BertModel, recorded_mlm)
    settings = load_config("local").perturb.replace
    for budget, mode in [(20, "exact"), (45, "exact"), (10_000, "exact"), (45, "binned"), (300, "binned")]:
        recorded_mlm.clear()
        config = dataclasses.replace(settings, max_batch_tokens=budget, packing=mode, bin_tokens=8)
        replace.fill_masks(mlm, sequences, config, bans, 0)
        assert replace.forward_shapes(sequences, bans, packing_of(config, "cpu", 512)) == recorded_mlm
    _, lm = load_causal_lm("local:gpt2", "cpu")
    _recording(monkeypatch, GPT2Model, recorded_lm)
    token_ids = [[int(t) for t in rng.integers(5, 900, size=n)] for n in (4, 9, 9, 2, 17, 9, 4)]
    for budget, mode in [(1, "exact"), (18, "exact"), (40, "exact"), (10_000, "exact"), (40, "binned")]:
        recorded_lm.clear()
        config = RankConfig(max_batch_tokens=budget, packing=mode, bin_tokens=8)
        rank.perplexities(lm, token_ids, 0, config)
        packing = packing_of(config, "cpu", lm.config.n_positions)
        assert rank.forward_shapes([len(ids) for ids in token_ids], packing) == recorded_lm


def test_plan_from_given_throughput_scales_the_sample(micro_home, sample, tmp_path, capsys):
    out = tmp_path / "plan.json"
    args = ["plan", "--input", str(sample), "--corpus-docs", "1000", "--gpus", "4", "--output", str(out)]
    args += ["--mlm-tokens-per-s", "2000", "--lm-tokens-per-s", "500", "--set", "perturb.rank.num_candidates=3"]
    assert main(args) == 0
    result = json.loads(out.read_text())
    s, plan = result["sample"], result["plan"]
    perturbed = 1000 * s["perturbed"] / s["read"]
    replace_h = s["mlm_token_forwards_done"] * perturbed / s["perturbed"] / 2000 / 3600
    rank_h = s["lm_token_forwards_done"] * perturbed / s["perturbed"] / 500 / 3600
    assert plan["documents_perturbed"] == round(perturbed)
    assert plan["device_hours"] == pytest.approx(replace_h + rank_h, abs=0.01)
    assert plan["wall_hours"] == pytest.approx((replace_h + rank_h) / 4, abs=0.01)
    b = plan["balance"]
    assert b["replace_actors_per_device"] + b["rank_actors_per_device"] == 4
    assert b["replace_actors_per_device"] >= b["rank_actors_per_device"]  # REPLACE has most of the work
    printed = capsys.readouterr().out
    assert "--mlm-tokens-per-s 2000 --lm-tokens-per-s 500" in printed and "CPU core-hours" in printed


def test_plan_puts_rank_and_the_rounds_screening_before_and_after(micro_home, sample, tmp_path, capsys):
    """RANK for 1M documents with and without the shared prefix, and 14 rounds' screening of a 1M pool
    without reuse (a backbone forward per unjudged instance per round) and with the store (one per
    instance, then the head alone)."""
    out = tmp_path / "plan.json"
    args = ["plan", "--input", str(sample), "--perturbed-docs", "1000000", "--output", str(out)]
    args += ["--mlm-tokens-per-s", "2000", "--lm-tokens-per-s", "500", "--set", "perturb.rank.num_candidates=3"]
    args += ["--pool-instances", "1000000", "--detector-instances-per-s", "100", "--head-instances-per-s", "1e6"]
    assert main(args) == 0
    result = json.loads(out.read_text())
    s, r = result["sample"], result["plan"]["rank_shared_prefix"]
    per_doc = 1_000_000 / s["perturbed"]
    assert r["without"]["device_hours"] == pytest.approx(s["lm_token_forwards_whole"] * per_doc / 500 / 3600, abs=0.01)
    assert r["with"]["device_hours"] == pytest.approx(s["lm_token_forwards_shared"] * per_doc / 500 / 3600, abs=0.01)
    assert r["with"]["device_hours"] < r["without"]["device_hours"]
    assert result["plan"]["rank_device_hours"] == r["with"]["device_hours"]  # sharing is the default
    assert r["prefix_tokens_per_document"] == pytest.approx(s["lm_prefix_tokens"] / s["perturbed"], abs=0.1)
    screening = result["screening"]
    judged = [200] + [4000] * 13  # the local preset's select.round_sizes, the last repeated
    screened = sum(1_000_000 - sum(judged[:k]) for k in range(14))
    assert screening["rounds"] == 14 and screening["instances_screened"] == screened
    assert screening["without_reuse"]["backbone_forwards"] == screened > 13_000_000
    assert screening["with_store"]["backbone_forwards"] == 1_000_000
    assert screening["without_reuse"]["device_hours"] == pytest.approx(screened / 100 / 3600, abs=0.01)
    assert screening["with_store"]["device_hours"] == pytest.approx((1e6 / 100 + screened / 1e6) / 3600, abs=0.01)
    printed = capsys.readouterr().out
    assert "RANK before/after the shared prefix" in printed and "with the store (detect.reuse_frozen)" in printed


def test_screening_needs_its_throughput(micro_home, sample, capsys):
    args = ["plan", "--input", str(sample), "--corpus-docs", "10", "--mlm-tokens-per-s", "5", "--lm-tokens-per-s", "5"]
    assert main([*args, "--pool-instances", "1000"]) == 2
    assert "--detector-instances-per-s and --head-instances-per-s" in capsys.readouterr().err


def test_measure_reports_throughput_and_memory(micro_home, sample, tmp_path):
    out = tmp_path / "plan.json"
    args = ["plan", "--input", str(sample), "--perturbed-docs", "100", "--measure", "--measure-seconds", "0.2"]
    args += ["--output", str(out), "--set", "perturb.rank.num_candidates=3"]
    assert main(args) == 0
    measured = json.loads(out.read_text())["measured"]
    for stage in ("replace", "rank"):
        assert measured[stage]["tokens_per_s"] > 0 and measured[stage]["token_forwards"] > 0
        assert measured[stage]["process_peak_rss_mib"] > 0
    assert json.loads(out.read_text())["plan"]["documents_perturbed"] == 100


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "give --measure, or both --mlm-tokens-per-s and --lm-tokens-per-s"),
        (["--mlm-tokens-per-s", "5", "--lm-tokens-per-s", "5", "--actors-per-device", "1"], "at least 2"),
        # the paper's hub models are not on this offline machine: the error says what to plan with
        (["--preset", "paper", "--mlm-tokens-per-s", "5", "--lm-tokens-per-s", "5"], "--set models.mlm=local:mlm"),
        (["--measure", "--lm-context", "4096"], "exceeds the 512 positions of 'local:gpt2'"),
    ],
)
def test_bad_requests_are_one_line_errors(micro_home, sample, capsys, extra, message):
    assert main(["plan", "--input", str(sample), "--corpus-docs", "10", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_sample_where_nothing_passes_says_so(micro_home, tmp_path, capsys):
    path = tmp_path / "short.jsonl"
    path.write_text(json.dumps({"id": "a", "text": SENTENCES[0]}) + "\n", encoding="utf-8")
    args = ["plan", "--input", str(path), "--corpus-docs", "10", "--mlm-tokens-per-s", "5", "--lm-tokens-per-s", "5"]
    assert main(args) == 2
    assert "no row of the sample passes the filters (too_short 1)" in capsys.readouterr().err


def test_paper_sized_models_have_the_papers_sizes():
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, BertConfig, GPT2Config

    from hades_ray.plan.measure import BERT_BASE, GPT2_SMALL

    with torch.device("meta"):  # sizes without allocating the weights
        bert = AutoModelForMaskedLM.from_config(BertConfig(**BERT_BASE))
        gpt2 = AutoModelForCausalLM.from_config(GPT2Config(**GPT2_SMALL))
    assert sum(p.numel() for p in bert.parameters()) == pytest.approx(110e6, rel=0.02)  # bert-base: 110M
    assert sum(p.numel() for p in gpt2.parameters()) == pytest.approx(124e6, rel=0.02)  # gpt2: 124M


def test_counts_on_cuda_are_the_binned_forwards_the_job_makes_there(micro_home, sample, counted):
    """A plan for a GPU counts the forwards packed as the job packs them there (binned by default: every
    forward of a width has the same rows, padding and dummy rows included); packing set to exact on the
    GPU counts what the CPU count does."""
    config = _config()
    tokenizers = load_tokenizers(config)
    on_gpu = count_sample(config, str(sample), tokenizers, device="cuda")
    mlm = packing_of(config.perturb.replace, "cuda", tokenizers.mlm_positions)
    lm = packing_of(config.perturb.rank, "cuda", tokenizers.lm_positions)
    assert mlm.mode == lm.mode == "binned"
    assert on_gpu.mlm_shapes and all(w % mlm.bin_tokens == 0 and r == mlm.rows(w) for r, w in on_gpu.mlm_shapes)
    assert on_gpu.lm_whole_shapes and all(w % lm.bin_tokens == 0 and r == lm.rows(w) for r, w in on_gpu.lm_whole_shapes)
    assert on_gpu.lm_shapes and all(w % lm.bin_tokens == 0 for r, w in on_gpu.lm_shapes)
    assert on_gpu.mlm_token_forwards_done > counted.mlm_token_forwards_done  # the bins' padding and dummy rows
    assert on_gpu.lm_token_forwards_done > counted.lm_token_forwards_done
    assert on_gpu.candidates == counted.candidates and on_gpu.mlm_steps == counted.mlm_steps
    config.perturb.replace.packing = config.perturb.rank.packing = "exact"
    exact = count_sample(config, str(sample), tokenizers, device="cuda")
    assert exact.mlm_shapes == counted.mlm_shapes and exact.lm_shapes == counted.lm_shapes


def test_a_larger_replace_batch_makes_fewer_forwards_of_the_same_work(micro_home, sample):
    from hades_ray.plan.count import batch_size_counts

    config = _config()
    config.perturb.read.shard_size = 40
    rows = batch_size_counts(config, str(sample), load_tokenizers(config), 40, [1, 40])
    assert [r["replace_batch_size"] for r in rows] == [1, 40] and rows[0]["perturbed"] == rows[1]["perturbed"] > 0
    assert rows[1]["mlm_forward_calls"] < rows[0]["mlm_forward_calls"]
    assert rows[1]["rows_per_forward"] > rows[0]["rows_per_forward"]  # batch 1: one document's candidates


def test_corpus_plans_give_the_pool_its_aim_and_the_corpus_a_plan_per_pass_share(counted):
    from hades_ray.plan.budget import corpus_plans, flops_per_token

    speed = {"mlm_tokens_per_s": 1e4, "lm_tokens_per_s": 1e4, "prepare_docs_per_s": 10.0, "source": "given"}
    speed["device_kind"] = "CPU core"
    rows = corpus_plans(counted.to_dict(), speed, 1_000_000, ("Wiki", 2_000_000), {"half": 0.5, "all": 1.0}, 5.0)
    names = ["paper's pool, 1M segments", "Wiki, pass share of half", "Wiki, pass share of all"]
    assert [r["corpus"] for r in rows] == names
    assert rows[0]["to_fit"]["device_hours"] == 5.0
    assert rows[1]["device_hours"] == pytest.approx(rows[2]["device_hours"] / 2, rel=0.01)
    assert flops_per_token(1, 2, 3, head=5) == 2 * 12 * 4 + 4 * 3 * 2 + 2 * 2 * 5
