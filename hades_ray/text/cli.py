"""``hades-ray languages``: the 41 Wiki-40B languages, what each needs, and whether this machine has it.

For each language: the segmenter spaCy's tokenizer imports (and the pip extra that brings it), the
stop-word list MASK uses (``text/stopwords.py``), and the spaCy pipeline that finds its named entities
(its own, or the multilingual ``xx_ent_wiki_sm``), each marked installed here or not.
"""

from __future__ import annotations

import argparse
import re
from importlib import metadata

from hades_ray.text.languages import LANGUAGES, Language
from hades_ray.text.pipeline import resolve_pipeline_name
from hades_ray.text.stopwords import stop_words

COLUMNS = ("Wiki-40B", "language", "segmenter", "stop words", "NER pipeline", "installed here")
_REQUIREMENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def _distribution_installed(requirement: str) -> bool:
    try:
        metadata.distribution(_REQUIREMENT_NAME.match(requirement).group(0))
    except metadata.PackageNotFoundError:
        return False
    return True


def _pipeline_installed(name: str) -> bool:
    import spacy.util

    return spacy.util.is_package(name)


def segmenter_cell(lang: Language) -> str:
    seg = lang.segmenter
    if seg is None:
        return "none needed"
    system = f" + {seg.system}" if seg.system else ""
    return f"{seg.module}: hades_ray[{seg.extra}]{system}"


def stop_words_cell(lang: Language) -> str:
    """The list ``perturb.mask.stopwords=auto`` gives this language, and its size."""
    try:
        words = stop_words("auto", lang)
    except ImportError:  # a spaCy without this language's list
        return "none in this spaCy"
    return f"{'NLTK' if lang.is_default else 'spaCy'} ({len(words)})"


def ner_cell(lang: Language) -> str:
    pipeline = resolve_pipeline_name(lang, "auto")
    return f"{pipeline} (multilingual)" if lang.ner_is_multilingual else pipeline


def installed_cell(lang: Language) -> str:
    """Whether the segmenter's pip packages and the NER pipeline are installed here."""
    seg = lang.segmenter
    parts = []
    if seg is not None:
        missing = [p for p in seg.packages if not _distribution_installed(p)]
        parts.append(f"segmenter: {'no (' + ', '.join(missing) + ')' if missing else 'yes'}")
        if seg.system:
            parts[-1] += "; system library not checked"
    parts.append(f"NER: {'yes' if _pipeline_installed(resolve_pipeline_name(lang, 'auto')) else 'no'}")
    return ", ".join(parts)


def language_rows() -> list[tuple[str, ...]]:
    """One row per Wiki-40B language, in ``LANGUAGES``' order (English, then the others as Wiki-40B lists them)."""
    cells = (segmenter_cell, stop_words_cell, ner_cell, installed_cell)
    return [(lang.name, lang.english_name, *(cell(lang) for cell in cells)) for lang in LANGUAGES.values()]


def plain_table(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Columns padded to their widest cell, two spaces apart."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(columns, *rows)]
    lines = (columns, *rows)
    return ["  ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines]


def run(args: argparse.Namespace) -> int:
    from hades_ray.markdown import pipe_table

    rows = language_rows()
    lines = pipe_table(COLUMNS, rows) if args.markdown else plain_table(COLUMNS, rows)
    print("\n".join(lines))
    if not args.markdown:
        print(
            "\nA missing segmenter: pip install 'hades_ray[EXTRA]' (every one but ko: hades_ray[languages]). A missing "
            "pipeline: python -m spacy download NAME, or --set languages.LANG.spacy_model=blank (no entities)."
        )
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "languages",
        help="list the 41 Wiki-40B languages: segmenter, stop words, NER pipeline, and what is installed here",
        description=__doc__,
    )
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.set_defaults(func=run)
