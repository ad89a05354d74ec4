"""The offline model kit on tiny configs: training, saving, skip-if-built, and the quality metrics."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from hades_ray.models import build, kit, quality
from hades_ray.models.train_gpt2 import Gpt2TrainConfig
from hades_ray.models.train_mlm import MlmTrainConfig
from hades_ray.models.training import TrainLimits, lr_factor

TEXTS = [
    "Paris is the capital and largest city of France, on the river Seine.",
    "The violin is a wooden string instrument played with a bow in orchestras.",
    "Mount Everest is the highest mountain above sea level, in the Himalayas.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The Danube flows through Vienna, Budapest and Belgrade to the Black Sea.",
    "Jazz originated in New Orleans among African-American communities around 1900.",
] * 2


@pytest.fixture(scope="module")
def micro_encoder(tmp_path_factory):
    from hades_ray.models.micro import build_micro_mlm

    return build_micro_mlm(tmp_path_factory.mktemp("encoder") / "micro")


def tiny_config(encoder) -> kit.KitConfig:
    limits = {"max_steps": 3, "max_seconds": None, "log_every": 1}
    return kit.KitConfig(
        mlm=MlmTrainConfig(
            encoder_path=str(encoder),
            max_length=32,
            batch_size=4,
            limits=TrainLimits(lr=1e-3, fresh_prefixes=("cls.",), fresh_lr_scale=10, **limits),
        ),
        gpt2=Gpt2TrainConfig(
            vocab_size=300,
            n_layer=1,
            n_embd=16,
            n_head=2,
            n_positions=32,
            block_size=16,
            batch_size=2,
            limits=TrainLimits(**limits),
        ),
        mlm_eval_texts=4,
        gpt2_pairs=3,
        baseline=False,
    )


@pytest.fixture
def tiny_corpus(monkeypatch):
    monkeypatch.setattr(kit, "demo_split", lambda fraction=0.1: (TEXTS[:8], TEXTS[8:]))


def test_split_is_deterministic_and_disjoint():
    from hades_ray.models.kit import split_texts

    records = [{"id": f"r{i}", "text": f"text {i}"} for i in range(2000)]
    train, heldout = split_texts(records)
    assert split_texts(list(reversed(records)))[1] == list(reversed(heldout))
    assert not set(train) & set(heldout) and len(train) + len(heldout) == 2000
    assert 120 < len(heldout) < 280


def test_lr_schedule_warms_up_then_decays():
    assert lr_factor(0.0, 0.1, 0.1) < lr_factor(0.05, 0.1, 0.1) < lr_factor(0.1, 0.1, 0.1) == pytest.approx(1.0)
    assert lr_factor(1.0, 0.1, 0.1) == pytest.approx(0.1)


def test_whole_word_mask_labels_whole_words(micro_encoder):
    from transformers import AutoTokenizer

    from hades_ray.models.train_mlm import encode_chunks, whole_word_mask

    tokenizer = AutoTokenizer.from_pretrained(str(micro_encoder))
    ids, word_ids = encode_chunks(["Photosynthesis converts unbelievably luminous energy"] * 1, tokenizer, 32)[0]
    _, labels = whole_word_mask(ids, word_ids, tokenizer, np.random.default_rng(0), probability=0.5)
    chosen = {word_ids[i] for i in np.flatnonzero(labels != -100)}
    assert chosen and None not in chosen
    assert all((labels[i] != -100) == (word_ids[i] in chosen) for i in range(len(ids)))
    assert (labels[labels != -100] == np.array(ids)[labels != -100]).all()


def test_build_saves_loadable_models_and_skips_built_ones(tmp_path, micro_encoder, tiny_corpus):
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer

    config = tiny_config(micro_encoder)
    outcome = build.build_models(home=tmp_path, config=config)
    assert all(v.startswith("built") for v in outcome.values())
    root = tmp_path / "models"
    assert AutoModelForMaskedLM.from_pretrained(root / "mlm").config.model_type == "bert"
    gpt2 = AutoModelForCausalLM.from_pretrained(root / "gpt2")
    assert type(gpt2).__name__ == "GPT2LMHeadModel"
    tokenizer = AutoTokenizer.from_pretrained(root / "gpt2")
    assert tokenizer.decode(tokenizer("Zürich, 1999: ÉCOLE!")["input_ids"]) == "Zürich, 1999: ÉCOLE!"
    assert AutoTokenizer.from_pretrained(root / "mlm").mask_token == "[MASK]"
    info = kit.model_status(tmp_path)["gpt2"]["info"]
    assert info["steps"] == 3 and info["seed"] == 0 and "torch" in info["versions"]
    assert (root / "quality.json").is_file()
    assert set(build.build_models(home=tmp_path, config=config, evaluate=False).values()) == {"skipped (already built)"}
    assert build.ensure_models(home=tmp_path) == []
    assert build.build_models(("gpt2",), home=tmp_path, force=True, config=config, evaluate=False)["gpt2"].startswith(
        "built"
    )


def test_unfinished_folder_counts_as_missing(tmp_path):
    (tmp_path / "models" / "mlm").mkdir(parents=True)
    (tmp_path / "models" / "mlm" / "config.json").write_text("{}")
    assert not kit.model_status(tmp_path)["mlm"]["built"]


def test_topk_hits_and_pairwise_accuracy_on_hand_made_cases():
    logits = np.array([[0.0, 5.0, 1.0, 2.0], [9.0, 0.0, 1.0, 2.0]])
    assert quality.topk_hits(logits, np.array([1, 1]), k=2).tolist() == [True, False]
    assert quality.pairwise_accuracy(np.array([1.0, 2.0, 5.0, 3.0]), np.array([2.0, 3.0, 4.0, 3.0])) == 0.5


def _docs(texts):
    import spacy

    nlp = spacy.blank("en")
    return [nlp.make_doc(t) for t in texts], nlp.Defaults.stop_words


def test_swap_words_replaces_content_words_keeping_case():
    docs, _ = _docs(TEXTS[:1])
    spans = quality.content_word_spans(docs[0])
    assert "the" not in [TEXTS[0][s:e].lower() for s, e in spans]
    one = quality.swap_words(TEXTS[0], spans, ["zebra"], np.random.default_rng(0))  # the kit's measure: one word
    assert one.lower().count("zebra") == 1 and len(one.split()) == len(TEXTS[0].split())
    swapped = quality.swap_words(TEXTS[0], spans, ["zebra"], np.random.default_rng(0), n_swaps=3)
    assert swapped.lower().count("zebra") == 3
    capital = quality.swap_words(
        "Paris and Rome and NASA", [(0, 5), (10, 14), (19, 23)], ["zebra"], np.random.default_rng(0), n_swaps=3
    )
    assert capital == "Zebra and Zebra and ZEBRA"
    assert quality.swap_words("Short text.", [(0, 5)], ["zebra"], np.random.default_rng(0), n_swaps=2) is None


class OracleMLM:
    """Puts the original word first at the mask (``good``) or never in the top 10 (bad)."""

    def __init__(self, answers: dict, vocab_size: int, good: bool):
        self.answers, self.vocab_size, self.good = answers, vocab_size, good

    def __call__(self, input_ids, attention_mask):
        import torch

        logits = torch.zeros((*input_ids.shape, self.vocab_size))
        for row, ids in enumerate(input_ids.tolist()):
            target = self.answers[tuple(i for i in ids if i)]
            logits[row, :, target] = 10.0 if self.good else -10.0
        return SimpleNamespace(logits=logits)


def test_mlm_hit_rate_separates_good_from_bad_model(micro_encoder):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(micro_encoder))
    docs, _ = _docs(TEXTS)
    cases = quality.mlm_cases(TEXTS, docs, tokenizer, np.random.default_rng(0))
    assert len(cases) >= 10 and all(ids[p] == tokenizer.mask_token_id for ids, p, _ in cases)
    answers = {tuple(ids): target for ids, _, target in cases}
    good = quality.mlm_topk_hit_rate(OracleMLM(answers, len(tokenizer), True), tokenizer, cases, batch_size=5)
    bad = quality.mlm_topk_hit_rate(OracleMLM(answers, len(tokenizer), False), tokenizer, cases)
    assert good == {"top1": 1.0, "top10": 1.0, "n": len(cases)} and bad["top1"] == bad["top10"] == 0.0
    call = OracleMLM(answers, len(tokenizer), True)  # below, the original ranked second: a top-10 hit, not a top-1

    def runner_up(input_ids, attention_mask):
        logits = call(input_ids, attention_mask).logits
        logits[..., 0] = 20.0
        return SimpleNamespace(logits=logits)

    assert quality.mlm_topk_hit_rate(runner_up, tokenizer, cases) == {"top1": 0.0, "top10": 1.0, "n": len(cases)}


class UnigramLM:
    """A causal 'LM' that predicts every position from fixed unigram log-probabilities."""

    def __init__(self, log_probs):
        import torch

        self.log_probs, self.config = torch.as_tensor(log_probs, dtype=torch.float), SimpleNamespace(n_positions=64)

    def __call__(self, input_ids, attention_mask):
        return SimpleNamespace(logits=self.log_probs.expand(*input_ids.shape, -1))


def test_pairwise_accuracy_separates_good_from_bad_scorer(tmp_path):
    from hades_ray.models.train_gpt2 import train_bpe_tokenizer

    tokenizer = train_bpe_tokenizer(TEXTS + ["zebra quokka marmalade"] * 3, vocab_size=320)
    docs, _ = _docs(TEXTS[:6])
    pairs = quality.swap_pairs(TEXTS[:6], docs, ["zebra", "quokka", "marmalade"], np.random.default_rng(0))
    counts = np.ones(len(tokenizer))
    for ids in tokenizer(TEXTS[:6])["input_ids"]:
        np.add.at(counts, ids, 20)
    good, bad = UnigramLM(np.log(counts / counts.sum())), UnigramLM(-np.log(counts / counts.sum()))

    def score(model) -> float:
        return quality.pairwise_accuracy(
            quality.perplexities(model, tokenizer, [a for a, _ in pairs]),
            quality.perplexities(model, tokenizer, [b for _, b in pairs]),
        )

    assert len(pairs) == 6 and score(good) == 1.0 and score(bad) == 0.0
    # The held-out perplexity weighs every token the same: a corpus of a long and a short text is not the
    # mean of their perplexities.
    texts = [TEXTS[0], "Paris."]
    sums, counts = quality.nll_sums(good, tokenizer, texts)
    assert quality.corpus_perplexity(good, tokenizer, texts) == pytest.approx(np.exp(sums.sum() / counts.sum()))
    assert quality.perplexities(good, tokenizer, texts) == pytest.approx(np.exp(sums / counts))
    assert counts[0] > counts[1] and quality.corpus_perplexity(good, tokenizer, texts) != pytest.approx(
        quality.perplexities(good, tokenizer, texts).mean()
    )


def test_the_papers_models_are_measured_only_where_cached(monkeypatch):
    from hades_ray.models import cli, registry

    monkeypatch.setattr(registry, "in_hub_cache", lambda reference: False)
    references = cli._paper_models()
    assert references == {"mlm": "bert-base-cased", "gpt2": "gpt2"}  # --preset paper's, in their roles
    reports = quality.reference_reports({"mlm": None, "gpt2": None}, references)
    assert reports == {
        "mlm": {"model": "bert-base-cased", "measured": False, "why": "not measured here (needs the hub)"},
        "gpt2": {"model": "gpt2", "measured": False, "why": "not measured here (needs the hub)"},
    }
    measured = []
    monkeypatch.setattr(registry, "in_hub_cache", lambda reference: reference == "gpt2")
    monkeypatch.setattr(registry, "load_causal_lm", lambda reference, device: ("tok", f"model {reference}"))
    reports = quality.reference_reports(
        {"gpt2": lambda tokenizer, model: measured.append(model) or {"n": 1}}, references
    )
    assert reports == {"gpt2": {"model": "gpt2", "measured": True, "n": 1}} and measured == ["model gpt2"]


def test_cli_status_and_quality_rows(tmp_path, capsys):
    from hades_ray.cli import main
    from hades_ray.models.cli import quality_rows

    assert main(["models", "status", "--home", str(tmp_path)]) == 0
    assert "MISSING" in capsys.readouterr().out
    rows = quality_rows(
        {
            "mlm": {"top10": 0.5, "n": 4},
            "gpt2": {"pairwise_accuracy": 0.9, "n": 3, "median_ppl_original": 1, "median_ppl_swapped": 2},
        }
    )
    assert [r[0] for r in rows] == ["mlm", "gpt2", "gpt2"]  # a report from before top-1 and the held-out ppl
    gpt2 = {"pairwise_accuracy": 0.7, "n": 500, "median_ppl_original": 9, "median_ppl_swapped": 12,
            "heldout_perplexity": 80.5, "heldout_leads": 994}  # fmt: skip
    rows = quality_rows(
        {
            "swapped_words": 1,
            "mlm": {"top1": 0.2, "top10": 0.5, "n": 500},
            "gpt2": gpt2,
            "paper_models": {
                "mlm": {"model": "bert-base-cased", "measured": False, "why": quality.NEEDS_HUB},
                "gpt2": {"model": "gpt2", "measured": True, **gpt2},
            },
        }
    )
    assert ("mlm", "top-1 / top-10 recovery, masked content word", "0.2 / 0.5 (n=500)") in rows
    assert ("gpt2", "held-out perplexity (leads as one corpus)", "80.5 (n=994 leads)") in rows
    assert ("gpt2", "original < 1-word-swapped perplexity", "0.7 (n=500)") in rows
    assert ("bert-base-cased", "the same measures", "not measured here (needs the hub)") in rows
    assert [r[0] for r in rows].count("gpt2") == 6  # the kit's GPT-2 and the paper's, three rows each


def test_default_kit_trains_fixed_steps_without_a_time_box():
    config = kit.kit_config()
    for limits in (config.mlm.limits, config.gpt2.limits):
        assert limits.max_seconds is None and limits.max_steps > 0
    boxed = kit.kit_config(mlm_minutes=2, gpt2_steps=7)
    assert boxed.mlm.limits.max_seconds == 120 and boxed.gpt2.limits.max_steps == 7
    assert boxed.gpt2.limits.max_seconds is None


def test_same_seed_gives_the_same_weights_and_quality_records_the_steps(tmp_path, micro_encoder, tiny_corpus):
    import json

    from safetensors.torch import load_file

    weights = {}
    for home in ("a", "b", "c"):
        config = tiny_config(micro_encoder)
        config.seed = config.mlm.seed = config.gpt2.seed = 1 if home == "c" else 0
        build.build_models(home=tmp_path / home, config=config, evaluate=home == "a")
        for name in kit.MODEL_NAMES:
            weights[home, name] = load_file(tmp_path / home / "models" / name / "model.safetensors")
    for name in kit.MODEL_NAMES:
        same, other = weights["a", name], weights["b", name]
        assert same.keys() == other.keys() and all((same[k] == other[k]).all() for k in same)
        assert any((same[k] != weights["c", name][k]).any() for k in same)  # another seed, other weights
    report = json.loads((tmp_path / "a" / "models" / "quality.json").read_text())
    assert {name: report["training"][name]["steps"] for name in kit.MODEL_NAMES} == {"mlm": 3, "gpt2": 3}
    assert report["training"]["gpt2"]["time_box_seconds"] is None and report["training"]["mlm"]["seed"] == 0


def test_a_changed_kit_config_is_refused_or_rebuilt_never_kept(tmp_path, micro_encoder, tiny_corpus):
    from hades_ray.pipeline.shards import MARKERS, StaleShardError

    config = tiny_config(micro_encoder)
    assert build.build_models(("gpt2",), home=tmp_path, config=config, evaluate=False)["gpt2"].startswith("built")
    folder = tmp_path / "models" / "gpt2"
    assert build.build_models(("gpt2",), home=tmp_path, config=config, evaluate=False) == {
        "gpt2": "skipped (already built)"
    }
    config.gpt2.limits.max_steps = 4  # another kit config: refused in one line naming --force
    with pytest.raises(StaleShardError, match="built with other kit settings.*--force"):
        build.build_models(("gpt2",), home=tmp_path, config=config, evaluate=False)
    assert build.build_models(("gpt2",), home=tmp_path, force=True, config=config, evaluate=False)["gpt2"].startswith(
        "built"
    )
    assert kit.model_status(tmp_path)["gpt2"]["info"]["steps"] == 4
    (folder / "config.json").unlink()  # its marker beside a model no longer whole: built again
    assert build.build_models(("gpt2",), home=tmp_path, config=config, evaluate=False)["gpt2"].startswith("built")
    # A model built before the kit was a step (no marker): kept, and recorded, when its info's config is these
    # settings; refused otherwise.
    for marker in (folder / MARKERS).iterdir():
        marker.unlink()
    assert build.build_models(("gpt2",), home=tmp_path, config=config, evaluate=False) == {
        "gpt2": "skipped (already built)"
    }
    assert any((folder / MARKERS).iterdir())
    for marker in (folder / MARKERS).iterdir():
        marker.unlink()
    config.gpt2.limits.max_steps = 3
    with pytest.raises(StaleShardError, match="built with other kit settings"):
        build.build_models(("gpt2",), home=tmp_path, config=config, evaluate=False)


def test_the_masked_lm_keeps_its_pretrained_embeddings_starts_its_bias_at_unigram_frequencies_and_drops_nothing(
    micro_encoder,
):
    import torch
    from transformers import AutoModel

    from hades_ray.models.train_mlm import encode_chunks, init_masked_lm, masked_positions_loss, mlm_batches
    from hades_ray.models.train_mlm import warm_start
    from hades_ray.models.training import train_model

    config = tiny_config(micro_encoder).mlm
    config.freeze_embeddings = config.unigram_bias = True
    torch.manual_seed(0)
    tokenizer, model = init_masked_lm(config.encoder_path)
    chunks = encode_chunks(TEXTS, tokenizer, config.max_length)
    assert {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)} == {0.1}  # the encoder's own
    warm_start(model, chunks, config)
    assert {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)} == {config.dropout} == {0.0}
    bias = model.cls.predictions.bias.detach().clone()
    seen = {i for ids, _ in chunks for i in ids}
    frequent, unseen = chunks[0][0][1], min(set(range(len(tokenizer))) - seen)
    assert bias[frequent] > bias[unseen] and torch.exp(bias).sum() == pytest.approx(1.0, rel=1e-4)
    train_model(model, mlm_batches(chunks, tokenizer, config), config.limits, masked_positions_loss)
    pretrained = AutoModel.from_pretrained(str(micro_encoder)).embeddings.word_embeddings.weight
    assert torch.equal(model.bert.embeddings.word_embeddings.weight, pretrained)  # frozen, and so the tied output
    assert not torch.equal(model.cls.predictions.bias, bias)  # the bias still learns


def test_heldout_prompts_take_two_sentences_of_heldout_records_after_the_skip(tmp_path):
    import json

    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    ids = [f"r{k}" for k in range(400)]
    held = [i for i in ids if kit.is_heldout(i)]
    records = [{"id": i, "text": "One is here. Two is there. Three ends it."} for i in ids]
    records[ids.index(held[2])]["text"] = "Only one sentence."
    path = tmp_path / "leads.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    skip = ids.index(held[1])  # the first held-out record is skipped
    prompts, too_long = kit.heldout_prompts(path, nlp, skip, 2, lambda p: True)
    assert [p["id"] for p in prompts] == [held[1], held[3]] and too_long == 0
    assert {p["prompt"] for p in prompts} == {"One is here. Two is there."}
    assert kit.heldout_prompts(path, nlp, 0, 2, lambda p: False) == ([], len(held) - 1)
