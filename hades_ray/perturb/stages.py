"""The perturbation stages: MASK (prepare, CPU) -> REPLACE (masked LM) -> assemble (CPU) -> RANK
(causal LM), their columns, and their resources."""

from __future__ import annotations

import pyarrow as pa

from hades_ray.config import HadesConfig, config_from_dict
from hades_ray.perturb import steps
from hades_ray.perturb.schema import IDS, UNIT_TYPE
from hades_ray.pipeline.stage import Resources, Stage, setup_torch
from hades_ray.pool.schemas import SPAN_TYPE


class PerturbStage(Stage):
    """A perturbation stage: its config travels as a plain dict and is rebuilt once per actor; ``run``
    (a step of ``perturb/steps.py``) takes the rows' input columns and adds its outputs."""

    def __init__(self, config: HadesConfig, resources: Resources):
        super().__init__(resources)
        self.config_dict = config.to_dict()
        self.config: HadesConfig | None = None

    def setup(self) -> None:
        self.config = config_from_dict(self.config_dict)

    def process(self, batch: pa.Table) -> dict[str, list]:
        rows = self.run(batch.select(list(self.inputs)).to_pylist())
        return {name: [row[name] for row in rows] for name in self.outputs}


class PrepareStage(PerturbStage):
    """MASK: spaCy units (whole entities, content words past the context) and the MLM's tokens."""

    name = "prepare"
    inputs = {"doc_id": pa.string(), "text": pa.string(), "reject": pa.string()}
    outputs = {"status": pa.string(), "input_ids": IDS, "units": pa.list_(UNIT_TYPE), "chosen": pa.list_(IDS)}

    def setup(self) -> None:
        from hades_ray.models.registry import load_tokenizer
        from hades_ray.text.pipeline import load_pipeline

        super().setup()
        self.nlp = load_pipeline(self.config.lang, self.config.spacy_model)
        self.tokenizer = load_tokenizer(self.config.models.mlm)

    def run(self, rows: list[dict]) -> list[dict]:
        return steps.prepare_rows(rows, self.nlp, self.tokenizer, self.config)


class ReplaceStage(PerturbStage):
    """REPLACE: the masked LM fills every candidate left to right (forwards only)."""

    name = "replace"
    inputs = {"doc_id": pa.string(), "status": pa.string(), "input_ids": IDS, "units": pa.list_(UNIT_TYPE)}
    inputs |= {"chosen": pa.list_(IDS)}
    outputs = {"fills": pa.list_(IDS), "seconds_replace_forward": pa.float64()}
    drops = ("input_ids",)

    def setup(self) -> None:
        from hades_ray.models.registry import load_masked_lm
        from hades_ray.perturb.replace import vocabulary_bans
        from hades_ray.text.stopwords import stop_words

        super().setup()
        replace = self.config.perturb.replace
        device = setup_torch(self.resources)
        self.tokenizer, self.model = load_masked_lm(self.config.models.mlm, device, replace.dtype)
        mask_stops = self.config.perturb.mask.stopwords
        stops = None if replace.allow_stopwords else stop_words(mask_stops, self.config.lang)
        self.bans = vocabulary_bans(self.tokenizer, self.model.config.vocab_size, stops, replace.whole_words)

    def run(self, rows: list[dict]) -> list[dict]:
        timings = {"forward": 0.0}
        rows = steps.replace_rows(rows, self.model, self.tokenizer, self.bans, self.config, timings)
        for row in rows:
            row["seconds_replace_forward"] = timings["forward"] / max(len(rows), 1)
        return rows


class AssembleStage(PerturbStage):
    """Candidate texts and spans from the fills, and their causal-LM tokens (CPU)."""

    name = "assemble"
    inputs = {"status": pa.string(), "text": pa.string(), "units": pa.list_(UNIT_TYPE), "chosen": pa.list_(IDS)}
    inputs |= {"fills": pa.list_(IDS)}
    outputs = {"cand_texts": pa.list_(pa.string()), "cand_spans": pa.list_(pa.list_(SPAN_TYPE))}
    outputs |= {"rank_ids": pa.list_(IDS)}
    drops = ("units", "chosen", "fills")

    def setup(self) -> None:
        from transformers import AutoConfig

        from hades_ray.models.registry import load_tokenizer, model_revision, resolve_model

        super().setup()
        models = self.config.models
        self.mlm_tokenizer = load_tokenizer(models.mlm)
        self.lm_tokenizer = load_tokenizer(models.causal_lm)
        revision = model_revision(models.causal_lm)
        lm_config = AutoConfig.from_pretrained(resolve_model(models.causal_lm), revision=revision)
        self.max_length = steps.context_limit(lm_config, self.config.perturb.rank.max_length)

    def run(self, rows: list[dict]) -> list[dict]:
        return steps.assemble_rows(rows, self.mlm_tokenizer, self.lm_tokenizer, self.max_length)


class RankStage(PerturbStage):
    """RANK: perplexity of every candidate under the causal LM (forwards only)."""

    name = "rank"
    inputs = {"status": pa.string(), "rank_ids": pa.list_(IDS)}
    outputs = {"cand_ppls": pa.list_(pa.float64())}
    drops = ("rank_ids",)

    def setup(self) -> None:
        from hades_ray.models.registry import load_causal_lm

        super().setup()
        device = setup_torch(self.resources)
        tokenizer, self.model = load_causal_lm(self.config.models.causal_lm, device, self.config.perturb.rank.dtype)
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else (tokenizer.eos_token_id or 0)

    def run(self, rows: list[dict]) -> list[dict]:
        return steps.rank_rows(rows, self.model, self.pad_id, self.config.perturb.rank)


def perturb_stages(config: HadesConfig) -> list[Stage]:
    """The ordered stages with the resources the config gives them (the CPU stages share ``prepare``'s)."""
    res = config.perturb.resources
    return [
        PrepareStage(config, Resources.of(res.prepare)),
        ReplaceStage(config, Resources.of(res.replace)),
        AssembleStage(config, Resources.of(res.prepare)),
        RankStage(config, Resources.of(res.rank)),
    ]
