"""Labelled instances for the label analyses: the dataset's judged items when ``--dataset`` is given,
else the learnability labels of the pool (replaced spans H, untouched content words N), and the
report says which."""

from __future__ import annotations

import random
from pathlib import Path

from hades_ray.detect.data import LoadReport, load_labelled
from hades_ray.io.hades_format import Instance
from hades_ray.report.inputs import ReportInputError
from hades_ray.config import recorded_language

SPLIT_FILES = ("train.txt", "valid.txt", "test.txt")
LEARNABILITY = (
    "learnability labels (train/learnability.py: replaced spans H, untouched content words of the same texts N)"
)


def dataset_instances(dataset: Path) -> list[Instance]:
    files = [dataset / name for name in SPLIT_FILES if (dataset / name).is_file()]
    if not files:
        raise ReportInputError(
            f"--dataset {dataset}: no train.txt, valid.txt or test.txt; run `hades-ray dataset build`"
        )
    report, instances = LoadReport(), []
    for path in files:
        instances += load_labelled(path, skip_bad=False, report=report)
    return instances


def labelled_instances(
    pool: Path | None, dataset: Path | None, seed: int, limit: int, max_docs: int | None = None
) -> tuple[list[Instance], str]:
    """(at most ``limit`` labelled instances, a seeded sample; where their labels come from). Pool labels
    come from its first ``max_docs`` documents."""
    if dataset is not None:
        instances, source = dataset_instances(dataset), f"the dataset's labels ({dataset})"
    elif pool is not None:
        from hades_ray.train.learnability import pool_instances

        language = recorded_language(pool)
        instances = pool_instances(pool / "pool", seed=seed, limit_docs=max_docs, language=language)
        source = LEARNABILITY
    else:
        return [], ""
    if len(instances) > limit:
        # Said beside the labels, so a reader sees the section's n is a sample, not what was dropped.
        source += f"; a seeded sample of {limit} of its {len(instances)} (--feature-limit)"
        instances = random.Random(seed).sample(instances, limit)
    return instances, source
