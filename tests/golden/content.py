"""What a golden check compares: a file's content, not its bytes.

The same job on two machines writes the same decisions but not always the same last bits of a float
(vector units round differently, micro models' random weights come from vectorised samplers), and
Parquet files carry their writer's version in their bytes. So each output file is read for its content
and split into two parts:

- the *skeleton*: everything discrete (ids, texts, spans, labels, counts, tokens, the schema, the
  structure of every JSON value), with each float replaced by a placeholder; compared exactly, by
  sha256;
- the *floats*, in reading order; compared with a stated tolerance (``RTOL``, ``ATOL``). A float written
  rounded (text with a fixed number of decimals, a JSON value rounded by the code: at least 3 and at
  most 12 significant digits) may also differ by one unit of its last digit, since the true value
  may lie on either side of a rounding boundary. Many floats are kept as a sketch (``SKETCH_OVER``):
  their count, the sum of their magnitudes and projections on fixed +-1 vectors, compared within the
  bound the tolerance puts on each.

Parquet is read as Arrow, one record per column (``file:column``); JSON is parsed (time keys dropped),
JSON Lines line by line; YAML is parsed; in any other text a number with a decimal point or exponent is
a float and the rest is the skeleton; a safetensors file is its tensors' names, dtypes and shapes plus
their values as floats. Other binary files are hashed as written.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from decimal import Decimal
from pathlib import Path

import numpy as np

# The stated tolerance of every float a golden job writes: |got - recorded| <= ATOL + RTOL * |recorded|.
# Between torch's CPU kernels (default, AVX2, AVX-512) and with BLAS/oneDNN limited to AVX2, floats
# moved by at most 0.36 of it on one machine (tests/golden/README.md); a decision's margin must exceed
# it (tests/golden/margins.py).
RTOL = 1e-5
ATOL = 1e-8
SKETCH_OVER = 64  # more floats than this in one record are kept as a sketch, not value by value
PROJECTIONS = 8
FLOAT = "\u2248"  # the skeleton's placeholder for a float
# Keys whose values are wall-clock times or durations, dropped at any depth of every JSON output.
TIME_KEYS = (
    "timings",  # summary.json of perturb and generate; round.json (per phase)
    "wall_seconds",  # score's summary.json
    "stage_seconds",  # score's summary.json
    "examples_per_s",  # a trained detector's metrics.json
)
# What a job's output folder holds that is not its output: marker folders (finish times, stage seconds,
# fingerprints of absolute paths and file times), lock files, Ray Train's run folder beside a trained
# detector (checkpoints named by the time they were taken; the exported detector next to it counts).
MARKER_DIRS = ("markers", "_markers")
LOCK_FILES = ("_lock.json", ".lock")
RUN_DIRS = ("ray_train",)
# A decimal number with a point or an exponent, not glued to letters (hex colours, ids) or other digits.
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)(?![\w.])")


def output_files(folder: Path, skip: tuple[str, ...] = ()) -> list[Path]:
    """A job's output files under ``folder``, by sorted relative path; ``skip``: top folders that are
    the job's inputs."""
    files = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder)
        if set(relative.parts[:-1]) & {*MARKER_DIRS, *RUN_DIRS} or relative.name in LOCK_FILES:
            continue
        if relative.parts[0] not in skip:
            files.append(relative)
    return files


def normalized_bytes(path: Path, replacements: dict[str, str]) -> bytes:
    """A file's bytes with absolute paths written as their placeholders, and a JSON file without its
    time keys: what the byte-level comparison of two revisions compares."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    text = replace_paths(text, replacements)
    if path.suffix == ".json":
        text = json.dumps(drop_time_keys(json.loads(text)), sort_keys=True, indent=1, ensure_ascii=False)
    return text.encode("utf-8")


def replace_paths(text: str, replacements: dict[str, str]) -> str:
    for real, name in sorted(replacements.items(), key=lambda item: -len(item[0])):
        text = text.replace(real, name)
    return text


def drop_time_keys(value):
    if isinstance(value, dict):
        return {k: drop_time_keys(v) for k, v in value.items() if k not in TIME_KEYS}
    if isinstance(value, list):
        return [drop_time_keys(v) for v in value]
    return value


def _rounding_step(written: str, any_digits: bool) -> float:
    """One unit of the last digit of a float as written; 0 where it was not written rounded: full
    precision (13 or more significant digits) or, unless ``any_digits``, fewer than 3 (a setting)."""
    digits = Decimal(written).as_tuple()
    significant = len(str(int("".join(map(str, digits.digits)) or "0")))
    if significant >= 13 or (not any_digits and significant < 3):
        return 0.0
    return float(Decimal(1).scaleb(digits.exponent))


def _split(value, floats: list[tuple[float, float]]):
    """The skeleton of a parsed value; its finite floats appended to ``floats`` in order, each with the
    rounding step it was written with."""
    if isinstance(value, float) and math.isfinite(value):
        floats.append((value, _rounding_step(repr(value), any_digits=False)))
        return FLOAT
    if isinstance(value, float):
        return repr(value)  # nan and inf are decisions too
    if isinstance(value, dict):
        return {str(k): _split(v, floats) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_split(v, floats) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, str | int | bool) or value is None:
        return value
    return str(value)  # dates, decimals: compared as written


def _text_split(text: str, floats: list[tuple[float, float]]) -> str:
    def placeholder(match: re.Match) -> str:
        written = match.group(0)
        floats.append((float(written), _rounding_step(written, any_digits=True)))
        return FLOAT

    return _NUMBER.sub(placeholder, text)


def _json(text: str):
    return drop_time_keys(json.loads(text))


def _parquet_records(path: Path) -> dict[str, tuple[object, list[float]]]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    records = {"": (str(table.schema.remove_metadata()), [])}
    for name in table.column_names:
        floats: list[float] = []
        records[f":{name}"] = (_split(table.column(name).to_pylist(), floats), floats)
    return records


def _safetensors_record(path: Path) -> tuple[object, list[float]]:
    from safetensors.numpy import load_file

    tensors = load_file(str(path))
    skeleton = {name: [str(t.dtype), list(t.shape)] for name, t in sorted(tensors.items())}
    values = [np.asarray(tensors[name], dtype=np.float64).ravel() for name in sorted(tensors)]
    return skeleton, [(v, 0.0) for v in (np.concatenate(values).tolist() if values else [])]


def records_of(path: Path, replacements: dict[str, str]) -> dict[str, tuple[object, list[float]]]:
    """A file's records by suffix ("" for the whole file, ``:column`` for a Parquet column): each a
    skeleton and its floats. ``replacements``: absolute paths and the names they are written as."""
    if path.suffix == ".parquet":
        return _parquet_records(path)
    if path.suffix == ".safetensors":
        return {"": _safetensors_record(path)}
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return {"": (hashlib.sha256(data).hexdigest(), [])}
    text = replace_paths(text, replacements)
    floats: list[tuple[float, float]] = []
    if path.suffix == ".json":
        return {"": (_split(_json(text), floats), floats)}
    if path.suffix == ".jsonl":
        lines = []
        for line in text.splitlines():
            try:
                lines.append(_split(_json(line), floats))
            except json.JSONDecodeError:
                lines.append(_text_split(line, floats))
        return {"": (lines, floats)}
    if path.suffix in (".yaml", ".yml"):
        import yaml

        return {"": (_split(yaml.safe_load(text), floats), floats)}
    return {"": (_text_split(text, floats), floats)}


# --- records: what is stored and how two are compared ----------------------------------------------


def _signs(n: int) -> np.ndarray:
    """PROJECTIONS fixed +-1 vectors of length n (integer draws: the same on every machine)."""
    return np.random.default_rng(20221).integers(0, 2, size=(PROJECTIONS, n)).astype(np.float64) * 2 - 1


def summarize(skeleton, floats: list[float]) -> dict:
    """The stored form of one record: the skeleton's digest, and its floats or their sketch."""
    canonical = json.dumps(skeleton, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    record = {"skeleton": hashlib.sha256(canonical.encode("utf-8")).hexdigest()}
    if len(floats) <= SKETCH_OVER:
        record["floats"] = [float(f"{v:.9g}") for v, _ in floats]
        if any(step for _, step in floats):
            record["steps"] = [step for _, step in floats]
        return record
    values = np.asarray([v for v, _ in floats], dtype=np.float64)
    record["sketch"] = {
        "n": len(floats),
        "l1": float(f"{math.fsum(np.abs(values)):.9g}"),
        "projections": [float(f"{math.fsum(row):.9g}") for row in _signs(len(floats)) * values],
    }
    return record


def _allowed(want: float, step: float) -> float:
    return ATOL + RTOL * abs(want) + step


def compare(name: str, want: dict, got: dict) -> str | None:
    """None when ``got`` matches ``want`` within the tolerance, else one line saying how it differs."""
    if got["skeleton"] != want["skeleton"]:
        return f"{name}: discrete content differs (texts, ids, labels, counts, tokens or structure)"
    if "floats" in want:
        wanted, values = want["floats"], got.get("floats", [])
        if len(wanted) != len(values):
            return f"{name}: {len(values)} floats, {len(wanted)} recorded"
        deviations = _deviations(want, got)
        bad = [k for k, d in enumerate(deviations) if d > 1.0]
        if bad:
            k = max(bad, key=lambda b: deviations[b])
            return (
                f"{name}: {len(bad)} of {len(wanted)} floats outside the tolerance; the worst, #{k}: "
                f"{values[k]!r}, recorded {wanted[k]!r}"
            )
        return None
    sketch, mine = want["sketch"], got.get("sketch", {})
    if mine.get("n") != sketch["n"]:
        return f"{name}: {mine.get('n')} floats, {sketch['n']} recorded"
    # Each float may move by ATOL + RTOL*|x|: a +-1 projection by at most the sum of those bounds.
    bound = ATOL * sketch["n"] + RTOL * sketch["l1"]
    moved = max(abs(a - b) for a, b in zip(mine["projections"], sketch["projections"]))
    moved = max(moved, abs(mine["l1"] - sketch["l1"]))
    if moved > bound:
        return f"{name}: its {sketch['n']} floats moved by {moved:.3g} in a projection, beyond the bound {bound:.3g}"
    return None


def _deviations(want: dict, got: dict) -> list[float]:
    steps = want.get("steps") or [0.0] * len(want["floats"])
    return [abs(g - w) / _allowed(w, s) for g, w, s in zip(got.get("floats", []), want["floats"], steps)]


def float_deviation(want: dict, got: dict) -> float:
    """The largest deviation of ``got`` from ``want`` in units of the tolerance (1.0 is the limit)."""
    if "floats" in want:
        return max(_deviations(want, got), default=0.0)
    sketch, mine = want["sketch"], got["sketch"]
    bound = ATOL * sketch["n"] + RTOL * sketch["l1"]
    return max(abs(a - b) for a, b in zip(mine["projections"], sketch["projections"])) / bound
