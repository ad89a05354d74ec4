"""The plan as text: the sample's counts, the throughput used, and the plan, each figure named."""

from __future__ import annotations


def _n(value: float) -> str:
    return f"{value:,.0f}"


def filtered_text(filtered: dict) -> str:
    return ", ".join(f"{reason} {count}" for reason, count in filtered.items()) or "none"


def _sample_lines(result: dict) -> list[str]:
    s = result["sample"]
    per_doc = max(s["perturbed"], 1)
    padding = s["mlm_token_forwards_done"] / max(s["mlm_token_forwards_ideal"], 1) - 1
    return [
        f"sample {result['input']} (preset {result['preset']}; MLM {result['models']['mlm']}, "
        f"causal LM {result['models']['causal_lm']}, context {result['lm_context']} tokens):",
        f"  documents read {s['read']}, perturbed {s['perturbed']} ({s['perturbed'] / s['read']:.1%}), "
        f"filtered out: {filtered_text(s['filtered'])}",
        f"  spaCy: {_n(s['spacy_tokens'])} tokens, {_n(s['spacy_words'])} words; "
        f"MASK took {s['prepare_seconds']:.1f} CPU-s here",
        f"  REPLACE: {_n(s['candidates'])} candidates, {_n(s['masked_positions'])} masked positions, "
        f"{_n(s['mlm_steps'])} model steps",
        f"  MLM token-forwards: ideal {_n(s['mlm_token_forwards_ideal'])}, done {_n(s['mlm_token_forwards_done'])} "
        f"(padding {padding:+.1%}) in {_n(s['mlm_forward_calls'])} forward calls "
        f"({s['mlm_token_forwards_done'] / per_doc:,.0f} per perturbed document)",
        f"  RANK: {_n(s['lm_tokens'])} causal-LM tokens (each candidate at its original text's length), "
        f"{_n(s['lm_token_forwards_done'])} token-forwards in {_n(s['lm_forward_calls'])} forward calls "
        f"(every candidate whole: {_n(s['lm_token_forwards_whole'])} in {_n(s['lm_forward_calls_whole'])})",
    ]


def _language_lines(result: dict) -> list[str]:
    """Per language: what its texts cost (the same text is more tokens in some scripts than in others)."""
    languages = result.get("languages") or {}
    lines = [f"languages ({len(languages)}; tokens without special tokens, words as each language's spaCy cuts them):"]
    for name, c in languages.items():
        models = "" if c["models"] == result["models"] else f"; MLM {c['models']['mlm']}, LM {c['models']['causal_lm']}"
        lines.append(
            f"  {name}: {_n(c['texts'])} texts, {_n(c['words'])} words ({c['words_per_text']:,.1f} per text, "
            f"{c['stop_word_share']:.0%} stop words; spaCy {c['spacy_model']}{models}); "
            f"MLM {c['mlm_tokens_per_text']:,.1f} tokens/text, {c['mlm_tokens_per_word']:.2f}/word; "
            f"causal LM {c['lm_tokens_per_text']:,.1f} tokens/text, {c['lm_tokens_per_word']:.2f}/word"
        )
    return lines if languages else []


def _throughput_lines(result: dict) -> list[str]:
    t = result["throughput"]
    lines = [
        f"throughput per actor ({t['source']}):",
        f"  REPLACE {t['mlm_tokens_per_s']:,.0f} tokens/s, RANK {t['lm_tokens_per_s']:,.0f} tokens/s, "
        f"MASK {t['prepare_docs_per_s']:,.1f} documents/s per CPU core",
    ]
    for stage in ("replace", "rank"):
        m = (result.get("measured") or {}).get(stage)
        if m:
            memory = ", ".join(
                f"{k.removesuffix('_mib').replace('_', ' ')} {v:,.0f} MiB" for k, v in m.items() if "mib" in k
            )
            lines.append(
                f"  {stage.upper()} measured: {m['model']} ({m['dtype']}), {_n(m['token_forwards'])} token-forwards "
                f"in {m['forward_calls']} calls, {m['wall_seconds']:.1f} s wall, {m['cpu_seconds']:.1f} s CPU; {memory}"
            )
    return lines


def _plan_lines(result: dict) -> list[str]:
    p, kind = result["plan"], result["plan"]["device_kind"]
    b, fit, t = p["balance"], result["to_fit"], result["throughput"]
    return [
        f"plan for {_n(p['documents_read'])} documents read ({_n(p['documents_perturbed'])} perturbed, "
        f"{_n(p['candidates'])} candidates):",
        f"  REPLACE {p['replace_device_hours']:,.2f} + RANK {p['rank_device_hours']:,.2f} = "
        f"{p['device_hours']:,.2f} {kind}-hours ({p['dominant_stage']} dominates)",
        f"  wall time on {p['devices']} {kind}(s): {p['wall_hours']:,.2f} hours (model loading not included)",
        f"  {_actors_per(kind, b)}: {b['replace_actors_per_device']} REPLACE + {b['rank_actors_per_device']} RANK "
        f"(REPLACE is {b['replace_share_of_work']:.1%} of the model time)",
        f"  MASK (spaCy, CPU): {p['prepare_cpu_core_hours']:,.2f} CPU core-hours",
        f"  to fit {fit['device_hours']:g} {kind}-hours: REPLACE {_n(fit['mlm_tokens_per_s'])} tokens/s, "
        f"RANK {_n(fit['lm_tokens_per_s'])} tokens/s",
        f"  figures used: --mlm-tokens-per-s {t['mlm_tokens_per_s']:.0f} --lm-tokens-per-s {t['lm_tokens_per_s']:.0f} "
        f"--prepare-docs-per-s {t['prepare_docs_per_s']:.2f}",
        *_rank_prefix_lines(p, kind),
    ]


def _rank_prefix_lines(plan: dict, kind: str) -> list[str]:
    r = plan["rank_shared_prefix"]
    return [
        f"  RANK before/after the shared prefix (perturb.rank.share_prefix; "
        f"{r['prefix_tokens_per_document']:,.1f} prefix tokens per document, once instead of per candidate):",
        f"    without: {_n(r['without']['lm_token_forwards'])} token-forwards, "
        f"{r['without']['device_hours']:,.2f} {kind}-hours",
        f"    with:    {_n(r['with']['lm_token_forwards'])} token-forwards, {r['with']['device_hours']:,.2f} "
        f"{kind}-hours ({r['ratio']:.2f}x)",
    ]


def _screening_lines(result: dict) -> list[str]:
    s = result.get("screening")
    if not s:
        return []
    kind = result["plan"]["device_kind"]
    t, without, store = s["throughput"], s["without_reuse"], s["with_store"]
    return [
        f"screening: {s['rounds']} model-in-the-loop rounds over {_n(s['pool_instances'])} pool instances "
        f"({_n(s['judged'])} judged; {_n(s['instances_screened'])} instances screened in all):",
        f"  without reuse: {_n(without['backbone_forwards'])} backbone forwards, "
        f"{without['device_hours']:,.2f} {kind}-hours",
        f"  with the store (detect.reuse_frozen): {_n(store['backbone_forwards'])} backbone forwards once + "
        f"{_n(store['head_passes'])} head passes, {store['device_hours']:,.2f} {kind}-hours ({s['ratio']:.3f}x)",
        f"  figures used ({t['source']}): --detector-instances-per-s {t['detector_instances_per_s']:.1f} "
        f"--head-instances-per-s {t['head_instances_per_s']:.0f}",
    ]


def _actors_per(kind: str, balance: dict) -> str:
    if kind == "GPU":
        return "actors per GPU"
    cores = balance["replace_actors_per_device"] + balance["rank_actors_per_device"]
    return f"single-threaded actors per {cores} cores"


def plan_text(result: dict) -> str:
    """The whole plan as printed by ``hades-ray plan``."""
    sections = [_sample_lines(result), _language_lines(result), _throughput_lines(result), _plan_lines(result)]
    sections.append(_screening_lines(result))
    return "\n".join(line for lines in sections for line in lines)
