"""The published HaDes instance format: one JSON object per line.

``replaced`` is whitespace-separated words with the target span wrapped in ``===``; ``replaced_ids``
is ``[first, last]`` (inclusive) word indices of the span; ``hallucination`` is 1, 0, or -1 (unknown).

The words are separated by spaces in every language, also in Chinese, Japanese and Thai, which are
written without them: so no word may hold a space (writing one is refused), and ``instance_text`` gives
the running text back in the instance's ``language`` (a field of non-English records; absent: English).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hades_ray.errors import UserError
from hades_ray.pipeline import storage
from hades_ray.io.lines import MAX_LINE_BYTES, LineError, decode_line, iter_raw_lines
from hades_ray.text.languages import DEFAULT_LANGUAGE, LANGUAGES, NAMES, Language, language_of

MARK = "==="
LABELS = (-1, 0, 1)
# A record's fields as this project writes them; ``language`` only in non-English records (absent: English).
RECORD_FIELDS = ("replaced", "replaced_ids", "hallucination", "id", "doc_id", "original_span", "replacement")
LANGUAGE_FIELD = "language"


class HadesFormatError(UserError):
    """A line that is not a valid HaDes instance; the message names file, line and field."""


@dataclass
class Instance:
    words: list[str]  # the text's words, markers removed
    start: int  # first word of the span
    end: int  # last word of the span (inclusive)
    label: int = -1
    extra: dict[str, Any] = field(default_factory=dict)  # any other fields (id, doc_id, ...) kept as is

    def to_json(self) -> dict[str, Any]:
        try:
            replaced = mark_span(self.words, self.start, self.end)
        except HadesFormatError as error:
            raise HadesFormatError(f"instance {self.extra.get('id', '(no id)')}: {error}") from None
        return {
            "replaced": replaced,
            "replaced_ids": [self.start, self.end],
            "hallucination": self.label,
            **self.extra,
        }


def instance_language(instance: Instance) -> Language:
    """The language of an instance: its record's ``language`` field, the default (English) where it has none."""
    return language_of(instance.extra)


def instance_text(instance: Instance) -> str:
    """The instance's running text, words joined the way its language is written (spaces or none)."""
    return instance_language(instance).join(instance.words)


def span_text(instance: Instance) -> str:
    """The text of the instance's target span, joined like ``instance_text``."""
    return instance_language(instance).join(instance.words[instance.start : instance.end + 1])


def check_words(words: list[str]) -> None:
    """Refuse words that would not come back as written from space-separated ``replaced``: an empty word,
    or one holding whitespace (it would read back as several)."""
    for index, word in enumerate(words):
        if not isinstance(word, str) or word.split() != [word]:
            raise HadesFormatError(
                f"word {index} ({_short(word)}) is empty or holds whitespace: HaDes words are separated by "
                "spaces, so a word must be one run of non-space characters (cut words with hades_ray.text.words)"
            )


def mark_span(words: list[str], start: int, end: int) -> str:
    """Join ``words`` with single spaces, wrapping words ``start..end`` in ``===``; a word that would not
    read back as itself is refused (``check_words``)."""
    check_words(words)
    marked = list(words)
    marked[start] = MARK + marked[start]
    marked[end] = marked[end] + MARK
    return " ".join(marked)


def _unmark(replaced: str) -> tuple[list[str], int | None, int | None]:
    words: list[str] = []
    start = end = None
    for index, word in enumerate(replaced.split()):
        if word.startswith(MARK) and len(word) > len(MARK) and start is None:
            start, word = index, word[len(MARK) :]
        if word.endswith(MARK) and len(word) > len(MARK) and end is None and start is not None:
            end, word = index, word[: -len(MARK)]
        words.append(word)
    return words, start, end


def parse_instance(record: Any, where: str = "") -> Instance:
    """Validate one decoded JSON record; errors name ``where`` (``file:line``) and the field."""
    prefix = f"{where}: " if where else ""
    if not isinstance(record, dict):
        raise HadesFormatError(f"{prefix}expected a JSON object")
    replaced = record.get("replaced")
    if not isinstance(replaced, str) or not replaced.strip():
        raise HadesFormatError(f"{prefix}field 'replaced': missing or not a non-empty string")
    ids = record.get("replaced_ids")
    if not (isinstance(ids, list) and len(ids) == 2 and all(type(i) is int for i in ids)):
        raise HadesFormatError(f"{prefix}field 'replaced_ids': expected [first, last] word indices")
    label = record.get("hallucination", -1)
    # 1.0 or true would compare equal to 1 and be written back as they came: only the integers pass.
    if type(label) is not int or label not in LABELS:
        raise HadesFormatError(f"{prefix}field 'hallucination': {_short(label)} is not one of the integers -1, 0, 1")
    words, start, end = _unmark(replaced)
    first, last = ids
    if first > last:
        raise HadesFormatError(f"{prefix}field 'replaced_ids': {ids} is reversed")
    if first < 0 or last >= len(words):
        raise HadesFormatError(f"{prefix}field 'replaced_ids': {ids} out of range for {len(words)} words")
    if start is not None and (start, end) != (first, last):
        raise HadesFormatError(
            f"{prefix}field 'replaced_ids': {ids} disagrees with the === markers at [{start}, {end}]"
        )
    _check_language(record, prefix)
    extra = {k: v for k, v in record.items() if k not in ("replaced", "replaced_ids", "hallucination")}
    return Instance(words=words, start=first, end=last, label=label, extra=extra)


def _check_language(record: dict, prefix: str) -> None:
    if LANGUAGE_FIELD not in record:  # absent: the default language
        return
    value = record[LANGUAGE_FIELD]
    if not isinstance(value, str) or value.lower() not in LANGUAGES:
        raise HadesFormatError(
            f"{prefix}field 'language': {_short(value)} is not a Wiki-40B language name "
            f"(one of {' '.join(NAMES)}; absent means {DEFAULT_LANGUAGE.name})"
        )


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def instance_from_line(raw: bytes | None, number: int, where: str) -> Instance | None:
    """The instance on line ``number`` (1-based; ``raw`` its bytes, None when over-long), None for a
    blank line; a bad line raises ``HadesFormatError`` naming ``where``."""
    try:
        line = decode_line(raw, number)
    except LineError as error:
        raise HadesFormatError(f"{where}: {error}") from None
    if not line.strip():
        return None
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise HadesFormatError(f"{where}: not valid JSON ({error.msg} at column {error.colno})") from None
    except RecursionError:
        raise HadesFormatError(f"{where}: JSON nested too deeply") from None
    except ValueError as error:  # e.g. an integer of more than 4,300 digits
        raise HadesFormatError(f"{where}: not usable JSON ({error})") from None
    return parse_instance(record, where)


def iter_numbered_instances(
    path: str | Path, skip_bad: bool = False, bad: list | None = None
) -> Iterator[tuple[int, Instance]]:
    """``(line number, instance)`` of a HaDes file, line by line (lines of at most 1 MiB). Bad lines
    raise ``HadesFormatError`` naming file and line, or with ``skip_bad`` are appended to ``bad`` as
    ``{"file", "line", "reason"}``."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"HaDes file not found: {path}")
    if not path.is_file():
        raise HadesFormatError(f"{path}: not a file (a HaDes file is JSON lines)")
    with path.open("rb") as handle:
        for number, raw in iter_raw_lines(handle, MAX_LINE_BYTES):
            where = f"{path}:{number}"
            try:
                instance = instance_from_line(raw, number, where)
                if instance is not None:
                    yield number, instance
            except HadesFormatError as error:
                if not skip_bad:
                    raise
                if bad is not None:
                    bad.append({"file": str(path), "line": number, "reason": str(error)})


def read_instances(path: str | Path, skip_bad: bool = False, bad: list | None = None) -> list[Instance]:
    """The instances of a HaDes file, as ``iter_numbered_instances`` reads them."""
    return [instance for _, instance in iter_numbered_instances(path, skip_bad, bad)]


def write_instances(instances, path: str | Path) -> Path:
    """Write instances (``Instance`` or ready dicts) as HaDes JSON lines, atomically."""
    path = Path(path)
    with storage.open_atomic(path) as handle:
        for item in instances:
            record = item.to_json() if isinstance(item, Instance) else item
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path
