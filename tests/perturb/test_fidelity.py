"""Fidelity to the HaDes paper (issue 9): replacements are words, NLTK's stop words, the paper's
detector defaults. Real text from ../shared/data; micro random-weight models, the worst case for
debris (a random MLM would pick punctuation and stray pieces freely)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hades_ray.config import load_config
from hades_ray.perturb.artifacts import ARTIFACT_KINDS, artifact_summary, count_artifacts, pool_rows, span_artifacts
from hades_ray.perturb.mask import align_units, choose_spans, tokenize_for_mask
from hades_ray.perturb.mask_units import mask_units
from hades_ray.perturb.replace import MaskedSequence, fill_masks, vocabulary_bans
from hades_ray.perturb.spans import decode_replacement
from hades_ray.perturb.steps import candidate_text
from hades_ray.text.languages import DEFAULT_LANGUAGE as ENGLISH
from hades_ray.text.pipeline import load_pipeline
from hades_ray.text.stopwords import english_stop_words, stop_words


def _leads(shared_data, count: int) -> list[dict]:
    with open(shared_data / "enwiki2015_first_paragraphs.jsonl", encoding="utf-8") as lines:
        return [json.loads(line) for _, line in zip(range(count), lines)]


# ---- artifacts: the measure itself ----------------------------------------------------------------


@pytest.mark.parametrize(
    "original, replacement, before, after, kinds",
    [
        ("impressionism", "art,", "influenced by ", ", and", ["punctuation"]),
        ("Midsummer Night's", "S -, the", "A ", " Dream", ["punctuation", "token_count"]),
        ("Kiarostami", "Ce, he he", "directed by ", " in 1990", ["punctuation", "repeated_word", "token_count"]),
        ("disrespect", "sexs of the body", "showed ", " for", ["token_count"]),
        ("Paris", "the", "moved to the ", " in", ["repeated_word"]),
        ("1,000", "5, 300", "about ", " people", ["token_count"]),
        ("Paris", "Lisbon", "moved to ", ", then", []),
        ("Night's", "Day's", "A Midsummer ", " Dream", []),
        ("Bora Bora", "Tora Tora", "the island of ", " is", []),
    ],
)
def test_span_artifacts_name_the_debris_the_issue_found(original, replacement, before, after, kinds):
    perturbed = before + replacement + after
    end = len(before) + len(replacement)
    assert span_artifacts(original, replacement, perturbed, len(before), end, ENGLISH) == kinds


def test_artifact_summary_is_a_rate_with_counts_by_kind():
    summary = artifact_summary({"replacements": 200, "with_artifacts": 3, "punctuation": 2, "token_count": 1}, ENGLISH)
    assert summary == {
        "replacements": 200,
        "with_artifacts": 3,
        "rate": 0.015,
        "by_kind": {"punctuation": 2, "repeated_word": 0, "token_count": 1},
    }
    assert set(summary["by_kind"]) == set(ARTIFACT_KINDS)
    assert artifact_summary({"replacements": 0, "with_artifacts": 0}, ENGLISH)["rate"] is None


def test_demo_table_shows_the_artifact_rate_when_the_summary_has_it():
    from hades_ray.perturb.console import summary_table

    summary = {"read": 3, "kept": 2, "too_short": 1, "no_maskable_words": 0, "quarantined": 0}
    summary |= {"quarantined_by_reason": {}, "instances": 9, "timings": {"wall_seconds": 1.0}}
    summary |= {"shards": {"processed_now": 1, "skipped_finished": 0}}
    assert "artifact" not in summary_table(summary)
    summary["artifacts"] = artifact_summary({"replacements": 9, "with_artifacts": 1, "punctuation": 1}, ENGLISH)
    assert "replacement artifact rate   11.11% (1 of 9: punctuation 1)" in summary_table(summary)


# ---- stop words -----------------------------------------------------------------------------------


def test_nltk_list_is_the_default_and_spacy_stays_selectable():
    nltk = english_stop_words("nltk")
    assert len(nltk) == 179 and {"the", "of", "wouldn't", "should've"} <= nltk
    content = {"also", "made", "used", "first", "three", "hundred", "became", "several", "part"}
    assert not content & nltk  # spaCy's list has all of these, so they were never masked
    assert stop_words() == stop_words("auto") == stop_words("nltk") == nltk
    assert load_config("local").perturb.mask.stopwords in ("auto", "nltk")
    spacy_list = stop_words(load_config("local", overrides=["perturb.mask.stopwords=spacy"]).perturb.mask.stopwords)
    assert len(spacy_list) == 326 and content <= spacy_list


def test_mask_units_follow_the_stop_word_list_on_real_leads(shared_data):
    config = load_config("local")
    nlp = load_pipeline(config.language, config.spacy_model)
    texts = [lead["text"] for lead in _leads(shared_data, 200) if " also " in lead["text"]][:20]
    found = {"nltk": set(), "spacy": set()}
    for doc in nlp.pipe(texts):
        for source in found:
            found[source] |= {
                doc.text[u["start"] : u["end"]].lower()
                for u in mask_units(doc, config.perturb.mask, stop_words(source))
            }
    assert "also" in found["nltk"] and "also" not in found["spacy"]
    for source, units in found.items():
        assert not units & stop_words(source)
        assert not any(unit.startswith(("'", "\u2019")) or unit == "n't" for unit in units)  # clitics never


# ---- REPLACE: a replacement is a word ---------------------------------------------------------------


def _sequences(leads: list[dict], tokenizer, config, candidates: int = 3):
    """(row, chosen units, MaskedSequence) per candidate, as the job's MASK step builds them."""
    nlp, mask = load_pipeline(config.language, config.spacy_model), config.perturb.mask
    out = []
    for lead, doc in zip(leads, nlp.pipe([lead["text"] for lead in leads])):
        ids, offsets = tokenize_for_mask(tokenizer, lead["text"], 512)
        units = align_units(mask_units(doc, mask, stop_words()), offsets, mask)
        for candidate in range(candidates if units else 0):
            chosen = choose_spans(units, mask, 0, lead["id"], candidate)
            masked, positions, originals = list(ids), [], []
            for u in chosen:
                for p in range(units[u]["token_start"], units[u]["token_end"]):
                    positions.append(p)
                    originals.append(masked[p])
                    masked[p] = tokenizer.mask_token_id
            starts = frozenset(units[u]["token_start"] for u in chosen)
            rng = np.random.default_rng([candidate, len(out)])
            out.append(
                (
                    {"text": lead["text"], "units": units},
                    chosen,
                    MaskedSequence(masked, positions, originals, starts, rng),
                )
            )
    return out


def _perturb(made, fills, tokenizer) -> list[dict]:
    rows = []
    for (row, chosen, _), fill in zip(made, fills):
        perturbed, placed = candidate_text(row, chosen, fill, tokenizer)
        rows.append({"perturbed": perturbed, "spans": placed})
    return rows


@pytest.fixture(scope="module")
def micro_mlm(micro_home):
    from hades_ray.models.registry import load_masked_lm

    return load_masked_lm("local:mlm", "cpu")


def test_whole_word_fill_leaves_no_debris_on_real_leads(shared_data, micro_mlm):
    tokenizer, model = micro_mlm
    made = _sequences(_leads(shared_data, 25), tokenizer, load_config("local"))
    counts = {}
    for whole_words in (False, True):
        bans = vocabulary_bans(tokenizer, model.config.vocab_size, stop_words(), whole_words=whole_words)
        fills = fill_masks(model, [seq for _, _, seq in made], load_config("local").perturb.replace, bans, 0)
        counts[whole_words] = count_artifacts(_perturb(made, fills, tokenizer), ENGLISH)
    assert counts[True]["replacements"] > 100
    assert counts[False]["with_artifacts"] > 0  # without the word rules the same draws leave debris
    assert counts[True]["with_artifacts"] == 0 and counts[True]["unchanged"] == 0


def test_punctuation_inside_a_span_is_kept_and_costs_no_step(micro_mlm):
    tokenizer, model = micro_mlm
    text = "It was staged as A Midsummer Night's Dream in 1,000 towns."
    ids, offsets = tokenize_for_mask(tokenizer, text, 64)
    start, end = text.index("Midsummer"), text.index(" Dream")
    inside = [i for i, (s, e) in enumerate(offsets) if e > s and s >= start and e <= end]
    masked = [tokenizer.mask_token_id if i in inside else t for i, t in enumerate(ids)]
    seq = MaskedSequence(masked, inside, [ids[i] for i in inside], frozenset(inside[:1]), np.random.default_rng(0))
    bans = vocabulary_bans(tokenizer, model.config.vocab_size, stop_words())
    fill = fill_masks(model, [seq], load_config("local").perturb.replace, bans, 0)[0]
    apostrophe = inside[[tokenizer.convert_ids_to_tokens(ids[i]) for i in inside].index("'")]
    assert fill[inside.index(apostrophe)] == ids[apostrophe]
    replacement = decode_replacement(tokenizer, fill, text[start:end])
    assert replacement.endswith("'s") and len(replacement.split()) == 2 and replacement != text[start:end]
    assert replacement[0].isupper()  # the uncased MLM's output takes the original's case


def test_a_word_the_tokenizer_cannot_read_is_still_replaced(micro_mlm):
    tokenizer, model = micro_mlm
    text = "The Mycenaean Greek name \U00010000\U00010029 is written in Linear B."
    ids, offsets = tokenize_for_mask(tokenizer, text, 64)
    unknown = [i for i, token in enumerate(ids) if token == tokenizer.unk_token_id]
    assert unknown  # the uncased MiniLM vocabulary has no Linear B
    masked = [tokenizer.mask_token_id if i in unknown else t for i, t in enumerate(ids)]
    seq = MaskedSequence(masked, unknown, [ids[i] for i in unknown], frozenset(unknown[:1]), np.random.default_rng(0))
    bans = vocabulary_bans(tokenizer, model.config.vocab_size, stop_words())
    fill = fill_masks(model, [seq], load_config("local").perturb.replace, bans, 0)[0]
    start, end = offsets[unknown[0]][0], offsets[unknown[-1]][1]
    replacement = decode_replacement(tokenizer, fill, text[start:end])
    assert replacement != text[start:end] and replacement.replace(" ", "").isalnum()


def test_a_real_run_has_no_artifacts(shared_data, micro_home, tmp_path):
    from hades_ray.cli import main

    leads = tmp_path / "leads.jsonl"
    leads.write_text("".join(json.dumps(lead) + "\n" for lead in _leads(shared_data, 12)), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["perturb", "--input", str(leads), "--output", str(out), "--executor", "local", "--examples", "0"]
    assert main(argv + ["--set", "perturb.rank.num_candidates=3"]) == 0
    counts = count_artifacts(pool_rows(out), ENGLISH)
    assert counts["replacements"] >= 12 and counts["with_artifacts"] == 0 and counts["unchanged"] == 0


# ---- the paper's detector defaults ----------------------------------------------------------------


def test_paper_preset_detector_trains_only_the_head(micro_home):
    from hades_ray.detect.model import build_classifier
    from hades_ray.train.transformer import detector_settings
    from hades_ray.models.registry import resolve_model

    backbone = str(micro_home / "models" / "mlm")  # a BERT; the paper's roberta-large is not offline
    config = load_config("paper", overrides=[f"detect.backbone={backbone}"])
    settings = detector_settings(config, "offline")
    _, model = build_classifier(resolve_model(settings["backbone"]), settings)
    trainable = [name for name, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(name.startswith("head.") for name in trainable)


def test_learning_rate_follows_the_backbone_family_unless_set(micro_home):
    from hades_ray.train.learning_rate import resolve_lr

    bert = str(micro_home / "models" / "mlm")
    gpt2 = str(micro_home / "models" / "gpt2")
    assert resolve_lr(load_config("paper", overrides=[f"detect.backbone={bert}"])) == 5e-3
    assert resolve_lr(load_config("paper", overrides=[f"detect.backbone={gpt2}"])) == 5e-3
    assert resolve_lr(load_config("paper")) == 1e-3  # roberta-large, by its hub id
    assert resolve_lr(load_config("paper", overrides=[f"detect.backbone={bert}", "detect.lr=2e-4"])) == 2e-4


def test_tune_range_holds_the_papers_learning_rates():
    from hades_ray.train.tune import default_space

    space = default_space()["detect.lr"]
    assert space.lower <= 1e-3 and space.upper >= 5e-3
