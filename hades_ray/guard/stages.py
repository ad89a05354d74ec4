"""The generation stage: prompts in, generations out, with the guard's scores and interventions.

One model stage, because the guard's judge must run between the generator's steps: the generator and
the online detector live in the same actor, loaded once (``setup``). ``generate_rows`` is the pure
function tests call without Ray. Each batch samples under its own seed, derived from the job's seed
and the batch's first row, so a rerun, another executor or another actor count gives the same text,
and the seed is written beside each generation so ``model.generate`` can reproduce it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields

import pyarrow as pa

from hades_ray.guard.sampling import Sampling
from hades_ray.pipeline.stage import Resources, Stage, setup_torch
from hades_ray.text.languages import Language, language_of
from hades_ray.text.seeding import stable_key


@dataclass(frozen=True)
class GenerateJob:
    """Everything a generation actor needs; travels to workers as a plain dict."""

    generator: str
    sampling: Sampling
    language: Language  # the generated text's: how the judge cuts words
    seed: int = 0
    detector: str | None = None  # an online detector folder or a served one's URL: the guard is on
    threshold: float | None = None  # None: the detector's stored threshold
    max_retries: int = 3
    slots: int = 0  # rows in flight within a batch (0: the whole batch)
    words: str = "content"
    dtype: str = "float32"
    stride: int = 0  # a causal judge's windows, as score.stride (0: a quarter window)

    def to_dict(self) -> dict:
        """The job as plain data, the language last and by name (``Language.record_fields``: English jobs
        keep the digest and settings they had before languages came)."""
        data = {item.name: getattr(self, item.name) for item in fields(self) if item.name != "language"}
        return {**data, "sampling": asdict(self.sampling), **self.language.record_fields()}

    @classmethod
    def from_dict(cls, data: dict) -> GenerateJob:
        return cls(**{**data, "sampling": Sampling(**data["sampling"]), "language": language_of(data)})


def batch_seed(seed: int, first_row: int) -> int:
    return stable_key(f"guard\x00{seed}\x00{first_row}") % 2**31


def context_limit(model) -> int | None:
    config = model.config
    return getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)


def prompt_fits(model, tokenizer, prompt: str, max_new_tokens: int) -> bool:
    """Whether the prompt's tokens and ``max_new_tokens`` fit the generator's context."""
    limit = context_limit(model)
    return not limit or len(tokenizer(prompt)["input_ids"]) + max_new_tokens <= limit


def generate_rows(rows: list[dict], model, tokenizer, judge, job: GenerateJob) -> list[dict]:
    """Generations for the usable rows (one batch, one seed); the others get their reject reason."""
    from hades_ray.guard.loop import GuardSettings, guarded_generate
    from hades_ray.guard.sampling import plain_generate

    out = [{"status": r["reject"] or "ok"} for r in rows]
    for r, o in zip(rows, out):
        if o["status"] == "ok" and not prompt_fits(model, tokenizer, r["prompt"], job.sampling.max_new_tokens):
            o["status"] = "prompt_too_long"
    usable = [k for k, o in enumerate(out) if o["status"] == "ok"]
    if not usable:
        return out
    prompts = [rows[k]["prompt"] for k in usable]
    seed = batch_seed(job.seed, min(rows[k]["row"] for k in usable))
    if judge is None:
        from hades_ray.guard.text import TokenText

        results = []
        for prompt, tokens in zip(prompts, plain_generate(model, tokenizer, prompts, job.sampling, seed)):
            text = TokenText(tokenizer, tokenizer(prompt)["input_ids"]).generated(tokens)
            results.append(
                {"tokens": tokens, "generation": text, "scores": [], "interventions": [], "emitted_flagged": 0}
            )
    else:
        guard = GuardSettings(judge.threshold, job.max_retries, job.slots)
        results = guarded_generate(model, tokenizer, prompts, job.sampling, judge, guard, seed)
    for position, (k, result) in enumerate(zip(usable, results)):
        out[k] |= _row_output(result, seed, position, len(usable))
    return out


def _row_output(result: dict, seed: int, position: int, size: int) -> dict:
    return {
        "generation": result["generation"],
        "new_tokens": len(result["tokens"]),
        "token_ids": result["tokens"],
        "scores": json.dumps(result["scores"]),
        "interventions": json.dumps(result["interventions"]),
        "emitted_flagged": result["emitted_flagged"],
        "batch": json.dumps({"seed": seed, "position": position, "size": size}),
    }


class GenerateStage(Stage):
    """Model: the generator (and, with the guard on, the online detector), loaded once per actor."""

    name = "generate"
    inputs = {"row": pa.int64(), "prompt": pa.string(), "reject": pa.string()}
    outputs = {
        "status": pa.string(),
        "generation": pa.string(),
        "new_tokens": pa.int32(),
        "token_ids": pa.list_(pa.int32()),
        "scores": pa.string(),  # JSON: the judged words' p(H), characters in the generation
        "interventions": pa.string(),  # JSON list
        "emitted_flagged": pa.int32(),
        "batch": pa.string(),  # JSON: the batch's seed, this prompt's place in it, its size
    }

    def __init__(self, resources: Resources, job: GenerateJob):
        super().__init__(resources)
        self.job_dict = job.to_dict()

    @classmethod
    def loaded(cls, resources: Resources, job: GenerateJob, model, tokenizer, judge) -> GenerateStage:
        """The stage with a generator (and judge) the caller loaded (``hades_ray.guarded_generate``)."""
        stage = cls(resources, job)
        stage.job, stage.model, stage.tokenizer, stage.judge = job, model, tokenizer, judge
        return stage

    def setup(self) -> None:
        from hades_ray.guard.judge import open_judge
        from hades_ray.guard.sampling import prepare_tokenizer
        from hades_ray.models.registry import load_causal_lm

        self.job = GenerateJob.from_dict(self.job_dict)
        device = setup_torch(self.resources)
        tokenizer, self.model = load_causal_lm(self.job.generator, device, self.job.dtype)
        self.tokenizer = prepare_tokenizer(tokenizer)
        job = self.job
        self.judge = None
        if job.detector:
            self.judge = open_judge(
                job.detector, job.threshold, job.words, device, job.stride, lang=job.language, generator=self.model
            )

    def process(self, batch: pa.Table) -> dict[str, list]:
        rows = batch.select(list(self.inputs)).to_pylist()
        out = generate_rows(rows, self.model, self.tokenizer, self.judge, self.job)
        defaults = {"generation": "", "new_tokens": 0, "token_ids": [], "scores": "[]", "interventions": "[]"}
        defaults |= {"emitted_flagged": 0, "batch": "{}"}
        return {name: [o.get(name, defaults.get(name)) for o in out] for name in self.outputs}
