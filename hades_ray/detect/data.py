"""Detector inputs: published HaDes files and this project's ``instances.jsonl``, read the same way.

Bad lines fail naming file and line, or (``detect.skip_bad``) go to ``quarantine.jsonl`` with their
reason. Unlabelled (-1) instances are counted and left out of training and evaluation.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hades_ray.io.hades_format import Instance, iter_numbered_instances, parse_instance, write_instances

log = logging.getLogger(__name__)


@dataclass
class LoadReport:
    """What reading cost: quarantined lines and unlabelled instances, per file."""

    bad: list[dict] = field(default_factory=list)
    unlabelled: dict[str, int] = field(default_factory=dict)

    def summary(self) -> dict:
        return {"quarantined": len(self.bad), "unlabelled_ignored": dict(self.unlabelled)}

    def write_quarantine(self, directory: str | Path) -> Path | None:
        if not self.bad:
            return None
        path = write_instances(self.bad, Path(directory) / "quarantine.jsonl")  # JSON lines, atomically
        log.warning("%d bad lines quarantined in %s", len(self.bad), path)
        return path


def numbered_instances(
    path: str | Path, skip_bad: bool, report: LoadReport, labelled_only: bool = False
) -> Iterator[tuple[int, Instance]]:
    """``(0-based line, instance)`` of every valid instance of ``path``, or of the labelled ones
    (``labelled_only``: the -1 ones are counted in ``report`` and logged)."""
    unlabelled = 0
    for number, instance in iter_numbered_instances(path, skip_bad=skip_bad, bad=report.bad):
        if labelled_only and not is_labelled(instance):
            unlabelled += 1
            continue
        yield number - 1, instance
    if unlabelled:
        report.unlabelled[str(path)] = unlabelled
        log.info("%s: %d unlabelled (-1) instances ignored", path, unlabelled)


def is_labelled(instance: Instance) -> bool:
    return instance.label in (0, 1)


def load_labelled(path: str | Path, skip_bad: bool, report: LoadReport) -> list[Instance]:
    """Instances labelled 0 or 1; the -1 ones are counted in ``report`` and logged."""
    return [instance for _, instance in numbered_instances(path, skip_bad, report, labelled_only=True)]


def instances_from_records(records: list[dict]) -> list[Instance]:
    """Parse in-memory records (``score_records``); errors name the record's position."""
    return [parse_instance(record, f"record {i}") for i, record in enumerate(records)]
