"""The rows a REPLACE benchmark fills (``steps.kept_rows``): the first that MASK keeps, in row order."""

from __future__ import annotations

import json

from hades_ray.config import load_config
from hades_ray.perturb.steps import kept_rows
from hades_ray.text.pipeline import load_pipeline

LEAD = (
    "Marie Curie was a physicist and chemist. She was born in Warsaw in 1867. "
    "She moved to Paris and studied physics at the University of Paris. "
    "Her research on radioactivity earned two Nobel Prizes in physics and chemistry. "
    "She founded the Curie Institute in Paris, which still studies cancer today."
)


def test_the_first_kept_rows_in_order_across_shards(micro_home, tmp_path):
    from hades_ray.models.registry import load_masked_lm

    config = load_config("local")
    texts = [LEAD, "Too short.", LEAD.replace("Curie", "Sklodowska"), LEAD.replace("Paris", "Lyon")]
    source = tmp_path / "leads.jsonl"
    source.write_text("".join(json.dumps({"id": f"d{k}", "text": t}) + "\n" for k, t in enumerate(texts)))
    nlp, (tokenizer, _) = load_pipeline(config.language, config.spacy_model), load_masked_lm("local:mlm", "cpu")
    rows = kept_rows(str(source), 2, nlp, tokenizer, config, shard_size=2)
    assert [row["doc_id"] for row in rows] == ["d0", "d2"]
    assert all(row["status"] == "ok" and len(row["chosen"]) == config.perturb.rank.num_candidates for row in rows)
    assert [row["doc_id"] for row in kept_rows(str(source), 10, nlp, tokenizer, config)] == ["d0", "d2", "d3"]
