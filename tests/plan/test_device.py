"""The device check's pieces in the package (hades_ray/plan/device.py): its config on each device, a pool
row's bytes without its place in the input, and the plan from measured tokens/s."""

from hades_ray.plan.device import check_config, row_content, segments_plan


def test_the_check_runs_bfloat16_on_the_gpu_only_and_takes_the_candidates_it_is_given():
    cpu, cuda = check_config("m", "g", "cpu", candidates=4), check_config("m", "g", "cuda")
    assert (cpu.models.mlm, cpu.models.causal_lm, cpu.perturb.rank.num_candidates) == ("m", "g", 4)
    assert cpu.perturb.replace.dtype != "bfloat16" and cpu.perturb.resources.replace.num_gpus == 0
    assert (cuda.perturb.replace.dtype, cuda.perturb.rank.dtype) == ("bfloat16", "bfloat16")
    assert cuda.perturb.resources.rank.num_gpus == 1


def test_a_rows_bytes_leave_out_where_its_lead_sat():
    row = {"doc_id": "d", "text": "t", "shard": 3, "row": 7}
    assert row_content(row) == row_content({**row, "shard": 0, "row": 0}) != row_content({**row, "text": "u"})
    assert row_content(None) is None


def test_the_plan_scales_with_the_measured_tokens():
    from hades_ray.plan.count import SampleCounts

    work = {"mlm_token_forwards_done": 80_000, "lm_tokens": 16_000, "lm_token_forwards_done": 16_000}
    counts = SampleCounts(read=10, perturbed=8, candidates=160, mlm_forward_calls=40, lm_forward_calls=8, **work)
    counts.prepare_seconds = 1.0
    measured = {"device": "cpu", "replace": {"tokens_per_s": 1000.0}, "rank": {"tokens_per_s": 1000.0}}
    slow = segments_plan(counts, measured, "cpu")
    fast = segments_plan(counts, {**measured, "replace": {"tokens_per_s": 2000.0}}, "cuda")
    assert slow["device_kind"] == "CPU core" and fast["device_kind"] == "GPU"
    assert fast["replace_device_hours"] < slow["replace_device_hours"] and slow["device_hours"] > 0
