"""The ``perturb`` config section: reading documents, MASK, REPLACE, RANK and the stages' resources."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hades_ray.errors import ConfigError
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
    min_sentences: int = 5
    max_chars: int = 20_000  # a longer first paragraph is quarantined, never truncated silently
    min_alpha_ratio: float = 0.5  # share of letters among non-space characters
    min_english_stopword_ratio: float = 0.08  # cheap language check: English function words per word
    # Input rows per output part file; auto: enough shards that the widest model pool gets
    # SHARD_BLOCKS_PER_ACTOR (4) blocks per actor, within SHARD_ROWS (the output bytes never depend on it).
    shard_size: int | str = "auto"


@dataclass
class MaskConfig:
    ratio: float = 0.15  # share of eligible words (from the third sentence on) masked per candidate
    context_sentences: int = 2  # leading sentences never touched
    min_spans: int = 1
    max_span_tokens: int = 8  # subword tokens of one masked span; longer entities are skipped
    entity_whole: bool = True
    stopwords: str = "auto"  # auto/nltk: NLTK's 179 words (hades_ray/text/stopwords.py); spacy: spaCy's 326


@dataclass
class ReplaceConfig:
    decoding: str = "top_k"  # greedy | top_k | top_p
    top_k: int = 10
    top_p: float = 0.9
    temperature: float = 1.0
    max_length: int = 512  # MLM input tokens; units past the cut are not maskable
    # A content word replaced by "the" or "it" only makes noise for judges: span starts skip stop words.
    allow_stopwords: bool = False
    # A replacement keeps the original's shape (no punctuation, word pieces only where a word goes on);
    # false is the paper's unconstrained fill (README: Deviations from the paper).
    whole_words: bool = True
    dtype: str = "float32"  # float32 | bfloat16 | float16 | auto (bf16 on a GPU, float32 on a CPU)
    # Token-budget packing (perturb/packing.py): rows x width of one forward, filled across a block's documents.
    max_batch_tokens: int = 32_768
    packing: str = "auto"  # exact (CPU default) | binned (fixed shapes, for GPUs) | auto: binned on CUDA
    bin_tokens: int = 64  # binned: widths are multiples of this


@dataclass
class RankConfig:
    num_candidates: int = 20
    max_length: int = 1024  # capped by the model's own context (n_positions)
    dtype: str = "float32"  # float32 | bfloat16 | float16 | auto
    max_batch_tokens: int = 32_768  # as perturb.replace
    packing: str = "auto"
    bin_tokens: int = 64
    logits_mb: int = 256  # log-softmax over the vocabulary runs in chunks of at most this many MB of logits


@dataclass
class StageResources:
    """Resources of one Ray Data stage (an actor pool for model stages)."""

    concurrency: int = 1  # the most actors of this stage; the pool autoscales down to min_concurrency
    min_concurrency: int = 1  # a smaller cluster still runs the job with this many actors
    num_cpus: float = 0.5  # fractional so read/write tasks always find a CPU (hades_ray/docs/ray.md: else jobs hang)
    num_gpus: float = 0.0
    batch_size: int = 8  # documents per batch
    torch_threads: int = 1


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
        from hades_ray.config_bounds import bound_problems

        size = self.read.shard_size
        problems = [] if size == AUTO else bound_problems("perturb.read.shard_size", size)
        if problems:
            raise ConfigError(f"{problems[0]} (or auto)")
        checks = [
            (
                self.read.min_sentences >= self.mask.context_sentences + 1,
                "perturb.read.min_sentences must exceed context",
            ),
            (self.replace.decoding in ("greedy", "top_k", "top_p"), "perturb.replace.decoding: greedy, top_k or top_p"),
            (self.mask.stopwords in ("auto", "nltk", "spacy"), "perturb.mask.stopwords: auto, nltk or spacy"),
            (self.replace.dtype in DTYPES, f"perturb.replace.dtype: one of {', '.join(DTYPES)}"),
            (self.rank.dtype in DTYPES, f"perturb.rank.dtype: one of {', '.join(DTYPES)}"),
            (self.rank.logits_mb >= 1, "perturb.rank.logits_mb must be at least 1"),
        ]
        for name in ("replace", "rank"):
            section = getattr(self, name)
            checks.append((section.packing in PACKINGS, f"perturb.{name}.packing: one of {', '.join(PACKINGS)}"))
            checks.append((section.max_batch_tokens >= 1, f"perturb.{name}.max_batch_tokens must be at least 1"))
            checks.append((section.bin_tokens >= 1, f"perturb.{name}.bin_tokens must be at least 1"))
        for stage in ("prepare", "replace", "rank"):
            res: StageResources = getattr(self.resources, stage)
            message = f"perturb.resources.{stage}.min_concurrency must be in [1, concurrency]"
            checks.append((res.min_concurrency <= res.concurrency, message))
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
