"""Shard names and completion markers of a perturbation output (see ``hades_ray/pipeline/shards.py``)."""

from hades_ray.pipeline.shards import finished_shards, part_name, read_markers

__all__ = ["finished_shards", "part_name", "read_markers"]
