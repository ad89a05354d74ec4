"""The ``perturb`` config section: reading documents, MASK, REPLACE, RANK and the stages' resources."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hades_ray.config_keys import key, require
from hades_ray.models.settings import DTYPES

PACKINGS = ("auto", "exact", "binned")  # hades_ray/perturb/packing.py


AUTO = "auto"
SHARD_ROWS = (16, 1_000)  # auto shard size: floor (per-shard overhead) and ceiling (a block's memory)
# At least 2 (one block in work, the next queued: pipeline/stage.py's blocks_in_flight); 4, because the
# documents kept per shard vary (the 200 demo leads in 4 shards kept 7 to 15), so smaller blocks even out
# the actors' tails (make demo: one REPLACE actor worked 100 s alone on the largest of 4 blocks).
SHARD_BLOCKS_PER_ACTOR = 4


@dataclass
class ReadConfig:
    min_sentences: int = key(5, "[1, 1000]")
    max_chars: int = key(20_000, "[1, 10000000]")  # a longer first paragraph is quarantined, never truncated silently
    min_alpha_ratio: float = key(0.5, "[0, 1]")  # share of letters among non-space characters
    # Cheap language check: the run's language's function words per word (the name is from when all was English).
    min_english_stopword_ratio: float = key(0.08, "[0, 1]")
    # Input rows per output part file; auto: enough shards that the widest model pool gets
    # SHARD_BLOCKS_PER_ACTOR (4) blocks per actor, within SHARD_ROWS (the output bytes never depend on it).
    shard_size: int | str = key(AUTO, "[1, 1000000]", choices=(AUTO,))


@dataclass
class MaskConfig:
    ratio: float = key(0.15, "(0, 1]")  # share of eligible words (from the third sentence on) masked per candidate
    context_sentences: int = key(2, "[0, 100]")  # leading sentences never touched
    min_spans: int = key(1, "[1, 1000]")
    max_span_tokens: int = key(8, "[1, 512]")  # subword tokens of one masked span; longer entities are skipped
    entity_whole: bool = True
    # auto/nltk: NLTK's 179 words (hades_ray/text/stopwords.py); spacy: spaCy's 326
    stopwords: str = key("auto", choices=("auto", "nltk", "spacy"))


@dataclass
class ReplaceConfig:
    decoding: str = key("top_k", choices=("greedy", "top_k", "top_p"))
    top_k: int = key(10, "[1, 1000]")
    top_p: float = key(0.9, "(0, 1]")
    temperature: float = key(1.0, "(0, 100]")
    max_length: int = key(512, "[8, 1000000]")  # MLM input tokens; units past the cut are not maskable
    # A content word replaced by "the" or "it" only makes noise for judges: span starts skip stop words.
    allow_stopwords: bool = False
    # A replacement keeps the original's shape (no punctuation, word pieces only where a word goes on);
    # false is our reading of the paper's fill, §3.2 naming no such bans (README: Deviations from the paper).
    whole_words: bool = True
    dtype: str = key("float32", choices=DTYPES)  # auto: bf16 on a GPU, float32 on a CPU
    # Token-budget packing (perturb/packing.py): rows x width of one forward, filled across a block's documents.
    max_batch_tokens: int = key(32_768, "[1, 1000000000]")
    # exact (CPU default) | binned (fixed shapes, for GPUs) | auto: binned on CUDA
    packing: str = key("auto", choices=PACKINGS)
    bin_tokens: int = key(64, "[1, 1000000]")  # binned: widths are multiples of this


@dataclass
class RankConfig:
    num_candidates: int = key(20, "[1, 1000]", help="candidates RANK orders per text (the pipeline's 20)")
    max_length: int = key(1024, "[8, 1000000]")  # capped by the model's own context (n_positions)
    dtype: str = key("float32", choices=DTYPES)
    max_batch_tokens: int = key(32_768, "[1, 1000000000]")  # as perturb.replace
    packing: str = key("auto", choices=PACKINGS)
    bin_tokens: int = key(64, "[1, 1000000]")
    # log-softmax over the vocabulary runs in chunks of at most this many MB of logits
    logits_mb: int = key(256, "[1, 1000000]")
    # Each document's shared token prefix runs once, its candidates' remainders on its keys and values
    # (perturb/rank_prefix.py); false runs every candidate whole, as before (the last bits of a
    # perplexity differ between the two).
    share_prefix: bool = True


@dataclass
class StageResources:
    """Resources of one Ray Data stage (an actor pool for model stages)."""

    # the most actors of this stage; the pool autoscales down to min_concurrency
    concurrency: int = key(1, "[1, 10000]")
    min_concurrency: int = key(1, "[1, 10000]")  # a smaller cluster still runs the job with this many actors
    # fractional so read/write tasks always find a CPU (hades_ray/docs/ray.md: else jobs hang)
    num_cpus: float = key(0.5, "[0, 1024]")
    num_gpus: float = key(0.0, "[0, 64]")
    batch_size: int = key(8, "[1, 100000]")  # documents per batch
    torch_threads: int = key(1, "[1, 1024]")


@dataclass
class PerturbResources:
    # The CPU stages (prepare: spaCy and masking; assemble: tokenizing candidates for RANK) share these.
    prepare: StageResources = field(default_factory=lambda: StageResources(batch_size=32))
    replace: StageResources = field(default_factory=StageResources)
    rank: StageResources = field(default_factory=StageResources)


@dataclass
class PerturbConfig:
    read: ReadConfig = field(default_factory=ReadConfig)
    mask: MaskConfig = field(default_factory=MaskConfig)
    replace: ReplaceConfig = field(default_factory=ReplaceConfig)
    rank: RankConfig = field(default_factory=RankConfig)
    resources: PerturbResources = field(default_factory=PerturbResources)
    lowercase_instances: bool = False  # the published HaDes files are lower-cased; ours keep case by default

    def shard_rows(self, rows: int) -> int:
        """Rows per shard for an input of ``rows`` rows: ``read.shard_size``, or for ``auto`` the size
        that gives the widest model pool (its ``concurrency``) four blocks per actor, within
        ``SHARD_ROWS``. It depends on the config alone, never on the cluster, so a rerun elsewhere
        finds the same shards."""
        if self.read.shard_size != AUTO:
            return int(self.read.shard_size)
        widest = max(self.resources.replace.concurrency, self.resources.rank.concurrency)
        floor, ceiling = SHARD_ROWS
        return min(ceiling, max(floor, math.ceil(rows / (SHARD_BLOCKS_PER_ACTOR * widest))))

    def validate(self) -> None:
        checks = [
            (
                self.read.min_sentences >= self.mask.context_sentences + 1,
                "perturb.read.min_sentences must exceed context",
            ),
        ]
        for stage in ("prepare", "replace", "rank"):
            res: StageResources = getattr(self.resources, stage)
            message = f"perturb.resources.{stage}.min_concurrency must be in [1, concurrency]"
            checks.append((res.min_concurrency <= res.concurrency, message))
        require(*checks)
