"""A set of detectors trained side by side on the same perturbed leads, kept in a work folder so that a
rerun on the same leads reuses them (jobs/bench_guard.py's judges and second opinion)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from hades_ray.pipeline import storage

# name -> (whose backbone, detector kind, mode): "causal" is the online detector on the causal LM.
DETECTOR_KINDS = {"online": ("mlm", "transformer", "online"), "lr": ("mlm", "lr", "offline")}
DETECTOR_KINDS["causal"] = ("causal_lm", "transformer", "online")


def kept_detectors(work: Path, docs: int) -> dict:
    """The record of the detectors in ``work`` (``detectors.json``) when it was made on ``docs`` leads, else {}."""
    record = work / "detectors.json"
    kept = json.loads(record.read_text()) if record.is_file() else {}
    return kept if kept.get("train_docs") == docs else {}


def trained_detectors(config, work: Path, source, docs: int, names=tuple(DETECTOR_KINDS)) -> dict:
    """The detectors ``names`` of an earlier run kept in ``work`` (same ``docs``), else those missing trained
    now into work/NAME on the labelled instances of the first ``docs`` leads of ``source`` perturbed (unless
    done): per detector its ``dir``, training ``seconds`` and ``valid`` metrics; the ``instances`` and
    ``perturb_seconds``; ``reused_from`` where nothing was trained."""
    from hades_ray.pipeline.laps import Laps
    from hades_ray.train.fit import train_detector
    from hades_ray.train.learnability import learnability_files

    kept = kept_detectors(work, docs)
    missing = [n for n in names if n not in kept or not Path(kept[n]["dir"], "detector.json").is_file()]
    if not missing:
        return kept | {"reused_from": str(work)}
    data = learnability_files(config, work, source, docs, {"train": 0.8, "valid": 0.2})
    detectors = kept | {key: data[key] for key in ("perturb_seconds", "instances") if key in data}
    for name in missing:
        backbone, kind, mode = DETECTOR_KINDS[name]
        settings = copy.deepcopy(config)
        settings.detect.backbone = config.detect.backbone if backbone == "mlm" else config.models.causal_lm
        laps = Laps()
        folder = train_detector(settings, *data["paths"], work / name, kind, mode, 1)
        detectors[name] = {"dir": str(folder), "seconds": laps.lap()}
        detectors[name]["valid"] = json.loads((folder / "metrics.json").read_text())
    detectors["train_docs"] = docs
    storage.write(work / "detectors.json", json.dumps(detectors, indent=2, default=str))
    return detectors
