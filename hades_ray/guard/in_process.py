"""``generate``'s job on prompts and a generator already in memory (``hades_ray.guarded_generate``).

The same path as the command, without files: the prompts are cut into the shards ``guard.shard_size``
makes of a prompts file, each sorted by length as its reader sorts it (``prompts.prompt_table``), run
through the generation stage in ``guard.batch_size`` rows (each batch its own seed, from the job's seed
and the batch's first row) and turned into ``generations.jsonl``'s records by the shard writer's
``shard_outputs``. A prompt at place ``k`` stands where line ``k + 1`` of a prompts file stands, so the
same prompts, settings and seed give the command's text.
"""

from __future__ import annotations

from hades_ray.guard.prompts import given_prompt_row, prompt_table
from hades_ray.guard.stages import GenerateJob, GenerateStage, prompt_fits
from hades_ray.guard.writer import shard_outputs


def prompt_rows(prompts: list, model, tokenizer, max_new_tokens: int) -> list[dict]:
    """Each prompt as the row its line would be (``id`` ``prompt:N``, N its place from 1); any prompt the
    command would quarantine is one ``ValueError`` naming its place and the reason, before any work."""
    rows = []
    for k, prompt in enumerate(prompts):
        row = given_prompt_row(prompt, k, f"prompts[{k}]", f"prompt:{k + 1}")
        reason = row["reject"]
        if not reason and not prompt_fits(model, tokenizer, prompt, max_new_tokens):
            reason = f"prompt_too_long (its tokens and max_new_tokens={max_new_tokens} pass the model's context)"
        if reason:
            got = "" if isinstance(prompt, str) or prompt is None else f" (got {type(prompt).__name__})"
            raise ValueError(f"prompts[{k}]: {reason}{got}")
        rows.append(row)
    return rows


def generate_records(model, tokenizer, prompts: list, job: GenerateJob, judge, config) -> list[dict]:
    """``generations.jsonl``'s record of every prompt, in the prompts' order, each with ``events``: its
    lines of ``interventions.jsonl``. ``tokenizer`` is prepared (``sampling.prepare_tokenizer``)."""
    from hades_ray.guard.runner import generation_resources

    rows = prompt_rows(prompts, model, tokenizer, job.sampling.max_new_tokens)
    stage = GenerateStage.loaded(generation_resources(config), job, model, tokenizer, judge)
    records = []
    size = config.guard.shard_size
    for lo in range(0, len(rows), size):
        table = stage(prompt_table(rows[lo : lo + size]))
        generations, events, _, _ = shard_outputs(sorted(table.to_pylist(), key=lambda r: r["row"]), job.threshold)
        for record in generations:
            records.append(record | {"events": [e for e in events if e["id"] == record["id"]]})
    return records
