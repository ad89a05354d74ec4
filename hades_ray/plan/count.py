"""Count the perturbation job's work on a sample with the job's own code, no model run.

The sample is read as the job reads it (``plan_shards``/``read_shard``: shards sorted by text
length), MASK runs for real (spaCy and the masked LM's tokenizer), and each stage's batches are cut
as ``Stage.__call__`` cuts them. REPLACE's forwards then come from ``steps.replace_groups`` and
``replace.forward_shapes``, RANK's from ``steps.rank_groups`` and ``rank.forward_shapes`` (or, with
``perturb.rank.share_prefix``, ``rank_prefix.shared_forward_shapes``): the same functions ``fill_masks``
and ``perplexities`` follow, so the MLM counts are exact. The forwards are
packed as the job packs them on the planned device (``packing_of``: binned on CUDA by default, so
the counts there include the bins' padding and the dummy rows that fill a width's last forward).

RANK scores candidate texts that only exist after REPLACE; without running the masked LM, each
candidate is counted at its original text's causal-LM length (a candidate differs from it only in
its replaced spans), and its shared prefix as the tokens before the first span MASK chose in any of
the document's candidates. ``tests/plan/test_plan.py`` checks the MLM counts exactly against a real
run and these approximations against the real candidates.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field, fields

from hades_ray.config import HadesConfig
from hades_ray.io.readers import plan_shards, read_shard
from hades_ray.models.registry import load_tokenizer
from hades_ray.perturb import rank, rank_prefix, replace, steps
from hades_ray.perturb.packing import config_positions, packing_of
from hades_ray.text.pipeline import load_pipeline
from hades_ray.text.stopwords import stop_words


@dataclass
class SampleCounts:
    """What the job would do on the sample; token counts are token positions through a model."""

    read: int = 0
    perturbed: int = 0  # documents that reach REPLACE and RANK
    filtered: dict[str, int] = field(default_factory=dict)  # reason -> documents
    spacy_tokens: int = 0  # every token spaCy parsed (MASK's CPU cost)
    spacy_words: int = 0  # of those, neither punctuation nor space
    candidates: int = 0
    masked_positions: int = 0  # [MASK] positions over all candidates
    mlm_steps: int = 0  # positions that take a model step (kept punctuation inside a span takes none)
    mlm_token_forwards_ideal: int = 0  # per candidate: model steps x its sequence length, summed
    mlm_token_forwards_done: int = 0  # rows x width over the forwards made (padding included)
    mlm_forward_calls: int = 0
    lm_tokens: int = 0  # causal-LM tokens over all candidates (at the original text's length)
    lm_token_forwards_done: int = 0  # rows x width over RANK's forwards (padding included)
    lm_forward_calls: int = 0
    # RANK both ways, whatever perturb.rank.share_prefix says (the plan's before and after): every
    # candidate whole, and each document's shared prefix once (its tokens: lm_prefix_tokens).
    lm_prefix_tokens: int = 0
    lm_token_forwards_whole: int = 0
    lm_forward_calls_whole: int = 0
    lm_token_forwards_shared: int = 0
    lm_forward_calls_shared: int = 0
    prepare_seconds: float = 0.0  # CPU seconds of MASK (spaCy + tokenizer) in this process, this machine
    mlm_shapes: list = field(default_factory=list, repr=False)  # (rows, width) of each forward
    lm_shapes: list = field(default_factory=list, repr=False)
    lm_whole_shapes: list = field(default_factory=list, repr=False)  # the same candidates, none shared
    lm_shared_shapes: list = field(default_factory=list, repr=False)  # each document's prefix once
    # With ``keep_groups``: each ``fill_masks`` call's sequences and each ``perplexities`` call's ids,
    # which ``measure`` replays.
    mlm_groups: list = field(default_factory=list, repr=False)
    lm_groups: list = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        """The counts (the fields shown in ``repr``), without the forwards' shapes and inputs."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.repr}

    def __add__(self, other: SampleCounts) -> SampleCounts:
        """Two samples' counts together (each language's run counted on its own, the plan on all):
        numbers add, filter reasons add, forwards follow one another."""
        merged = {}
        for item in fields(self):
            mine, theirs = getattr(self, item.name), getattr(other, item.name)
            if isinstance(mine, dict):
                merged[item.name] = dict(sorted((Counter(mine) + Counter(theirs)).items()))
            else:
                merged[item.name] = mine + theirs
        return SampleCounts(**merged)


class CountingNlp:
    """spaCy's pipeline with a count of the tokens and words it parsed (MASK calls only ``pipe``)."""

    def __init__(self, nlp):
        self.nlp, self.tokens, self.words = nlp, 0, 0

    def pipe(self, texts):
        for doc in self.nlp.pipe(texts):
            self.tokens += len(doc)
            self.words += sum(1 for token in doc if not (token.is_punct or token.is_space))
            yield doc


@dataclass
class Tokenizers:
    """What counting needs of the models, none of their weights."""

    mlm: object
    lm: object
    mlm_vocab_size: int
    lm_context: int  # the causal LM's input limit (the configured length, capped by its positions)
    lm_positions: int | None = None  # the configured causal LM's own positions
    mlm_positions: int | None = None  # the masked LM's positions (a bin never grows past them)


def load_tokenizers(config: HadesConfig, lm_context: int | None = None) -> Tokenizers:
    """The configured models' tokenizers and sizes, read from their folders (no weights loaded)."""
    models = config.models
    mlm_config, lm_config = _model_config(models.mlm), _model_config(models.causal_lm)
    context = lm_context or steps.context_limit(lm_config, config.perturb.rank.max_length)
    mlm, lm = load_tokenizer(models.mlm), load_tokenizer(models.causal_lm)
    positions = config_positions(lm_config), config_positions(mlm_config)
    return Tokenizers(mlm, lm, mlm_config.vocab_size, context, *positions)


def _model_config(reference: str):
    from transformers import AutoConfig

    from hades_ray.models.registry import ModelNotFoundError, model_revision, resolve_model

    try:
        return AutoConfig.from_pretrained(resolve_model(reference), revision=model_revision(reference))
    except (OSError, ValueError) as error:
        raise ModelNotFoundError(
            f"cannot read the config of model {reference!r} ({' '.join(str(error).split())[:200]}); a plan needs "
            "the models' tokenizers and configs on disk, e.g. --set models.mlm=local:mlm "
            "--set models.causal_lm=local:gpt2 (the offline kit) --lm-context 1024"
        ) from None


def batches(rows: list[dict], size: int) -> list[list[dict]]:
    """A shard's rows cut the way ``Stage.__call__`` cuts them (rows of every status included)."""
    return [rows[begin : begin + size] for begin in range(0, len(rows), size)]


def original_rank_ids(rows: list[dict], tokenizer, max_length: int, num_candidates: int) -> None:
    """Each "ok" row's candidates at the causal-LM length of its original text (see the module docstring),
    and ``rank_prefix``: the tokens its candidates would share, those before the first span MASK chose
    in any candidate (less the one that starts every remainder; perturb/rank_prefix.py)."""
    for row in rows:
        ok = row["status"] == "ok"
        ids = rank.encode_for_perplexity(tokenizer, [row["text"]], max_length)[0] if ok else []
        row["rank_ids"] = [ids] * num_candidates if ok else []
        row["rank_prefix"] = 0
        if ok and num_candidates > 1:
            starts = [row["units"][unit]["start"] for chosen in row["chosen"] for unit in chosen]
            first = min(starts, default=len(row["text"]))
            before = rank.encode_for_perplexity(tokenizer, [row["text"][:first].rstrip()], max_length)[0]
            row["rank_prefix"] = max(min(len(before), len(ids)) - 1, 0)


@dataclass
class PreparedSample:
    """The sample after MASK: each shard's rows in the job's order, and what spaCy cost."""

    shards: list[list[dict]]
    spacy_tokens: int
    spacy_words: int
    prepare_seconds: float


def prepare_sample(
    config: HadesConfig, input_path: str, tokenizers: Tokenizers, limit: int | None = None, sample: int | None = None
) -> PreparedSample:
    """Read ``input_path`` as the job does (at most ``limit`` rows, or a seeded ``sample`` of about N)
    and run MASK on it."""
    nlp = CountingNlp(load_pipeline(config.lang, config.spacy_model))
    shards, seconds = [], 0.0
    for shard in plan_shards(str(input_path), config.perturb.shard_rows, limit, sample, config.seed):
        rows = read_shard(shard).to_pylist()
        started = time.process_time()  # CPU time: one core's own speed, whatever the neighbours do
        for batch in batches(rows, config.perturb.resources.prepare.batch_size):
            steps.prepare_rows(batch, nlp, tokenizers.mlm, config)
        seconds += time.process_time() - started
        shards.append(rows)
    return PreparedSample(shards, nlp.tokens, nlp.words, seconds)


def count_prepared(
    prepared: PreparedSample,
    config: HadesConfig,
    tokenizers: Tokenizers,
    keep_groups: bool = False,
    device: str = "cpu",
) -> SampleCounts:
    """REPLACE's and RANK's work on a prepared sample, batched by the config's batch sizes and packed
    as the job packs them on ``device`` ("cpu" or "cuda"); ``keep_groups`` keeps the model calls'
    inputs for ``measure``."""
    perturb = config.perturb
    stops = None if perturb.replace.allow_stopwords else stop_words(perturb.mask.stopwords, config.lang)
    bans = replace.vocabulary_bans(tokenizers.mlm, tokenizers.mlm_vocab_size, stops, perturb.replace.whole_words)
    mlm_packing = packing_of(perturb.replace, device, tokenizers.mlm_positions)
    lm_packing = packing_of(perturb.rank, device, tokenizers.lm_positions)
    counts, statuses = SampleCounts(), Counter()

    def count_replace(batch: list[dict]) -> None:  # one ``fill_masks`` call per length group
        for length, group in steps.replace_groups(batch, tokenizers.mlm.mask_token_id, config.seed).items():
            sequences = [seq for _, _, seq in group]
            if keep_groups:
                counts.mlm_groups.append(sequences)
            counts.candidates += len(sequences)
            counts.masked_positions += sum(len(seq.positions) for seq in sequences)
            model_steps = sum(replace.model_steps(seq, bans) for seq in sequences)
            counts.mlm_steps += model_steps
            counts.mlm_token_forwards_ideal += model_steps * length
            counts.mlm_shapes += replace.forward_shapes(sequences, bans, mlm_packing)

    def count_rank(batch: list[dict]) -> None:  # one ``rank_rows`` call over all the batch's candidates
        lengths = []
        for length, group in steps.rank_groups(batch).items():
            if keep_groups:
                counts.lm_groups.append([row["rank_ids"][candidate] for row, candidate in group])
            counts.lm_tokens += length * len(group)
            lengths += [length] * len(group)
        whole = rank.forward_shapes(lengths, lm_packing)
        documents = [(row["rank_prefix"], [len(ids) for ids in row["rank_ids"]]) for row in batch if row["rank_ids"]]
        counts.lm_prefix_tokens += sum(prefix for prefix, _ in documents)
        shared = rank_prefix.shared_forward_shapes(documents, lm_packing)
        shared = shared["prefix"] + shared["remainder"]
        counts.lm_whole_shapes += whole
        counts.lm_shared_shapes += shared
        counts.lm_shapes += shared if perturb.rank.share_prefix else whole

    for rows in prepared.shards:
        statuses.update(row["status"] for row in rows)
        for batch in batches(rows, perturb.resources.replace.batch_size):
            count_replace(batch)
        original_rank_ids(rows, tokenizers.lm, tokenizers.lm_context, perturb.rank.num_candidates)
        for batch in batches(rows, perturb.resources.rank.batch_size):
            count_rank(batch)
    counts.read = sum(statuses.values())
    counts.perturbed = statuses.pop("ok", 0)
    counts.filtered = dict(sorted(statuses.items()))
    counts.spacy_tokens, counts.spacy_words = prepared.spacy_tokens, prepared.spacy_words
    counts.prepare_seconds = prepared.prepare_seconds
    counts.mlm_forward_calls = len(counts.mlm_shapes)
    counts.mlm_token_forwards_done = sum(rows * width for rows, width in counts.mlm_shapes)
    counts.lm_forward_calls = len(counts.lm_shapes)
    counts.lm_token_forwards_done = sum(rows * width for rows, width in counts.lm_shapes)
    for kind in ("whole", "shared"):
        shapes = getattr(counts, f"lm_{kind}_shapes")
        setattr(counts, f"lm_forward_calls_{kind}", len(shapes))
        setattr(counts, f"lm_token_forwards_{kind}", sum(rows * width for rows, width in shapes))
    return counts


def count_sample(config: HadesConfig, input_path: str, tokenizers: Tokenizers, limit=None, sample=None, **options):
    """Read ``input_path`` as the job does, run MASK, and count the model work (``options``: ``count_prepared``'s)."""
    prepared = prepare_sample(config, input_path, tokenizers, limit, sample)
    return count_prepared(prepared, config, tokenizers, **options)


def batch_size_counts(config: HadesConfig, input_path: str, tokenizers: Tokenizers, limit: int, sizes) -> list[dict]:
    """REPLACE's forwards and tokens per forward as its batch grows through ``sizes``, on the first ``limit``
    rows of ``input_path`` as the job cuts them (counts only: the token-forwards do not change). The config's
    ``perturb.read.shard_size`` should be ``limit``: with smaller shards the batches could not grow."""
    prepared = prepare_sample(config, input_path, tokenizers, limit=limit)
    rows = []
    for size in sizes:
        config.perturb.resources.replace.batch_size = size
        counts = count_prepared(prepared, config, tokenizers)
        calls = counts.mlm_forward_calls
        rows.append({"replace_batch_size": size, "perturbed": counts.perturbed,
                     "mlm_token_forwards": counts.mlm_token_forwards_done, "mlm_forward_calls": calls,
                     "tokens_per_forward": round(counts.mlm_token_forwards_done / calls),
                     "rows_per_forward": round(sum(r for r, _ in counts.mlm_shapes) / calls, 1)})  # fmt: skip
    return rows
