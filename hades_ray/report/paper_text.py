"""The paper's Table 4 (the span features per POS and NER tag), Table 1B (the label's correlation with each
feature) and the figures its text gives in words, each set beside ours (``paper_figures`` holds theirs).

A span's tags are those ``hades-ray dataset build`` records for the original span (``tags.json``, as in
Fig. 4); where a dataset has none (one built before, the published Wiki-Hades, a pool's learnability
labels) spaCy tags the span as it stands in the instance's text, and the table says which. Those tags (the
POS of the span's root, its first entity type) put each span in the paper's nine Table 4 rows (``paper_rows``).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
from scipy import stats

from hades_ray.io.hades_format import Instance
from hades_ray.report import paper_figures as paper
from hades_ray.report.model import Table, fmt
from hades_ray.text.languages import Language

log = logging.getLogger(__name__)
TAGS_FILE = "tags.json"  # {instance id: {"pos": POS, "ner": NER type or ""}}, written by dataset build
NOT_HELD = "not held"
TITLES = {"mlm_prob": "word probability", "mlm_entropy": "entropy", "tfidf": "TF-IDF", "ppmi": "PPMI"}


def read_tags(dataset: Path | None) -> dict[str, dict[str, str]] | None:
    """``dataset/tags.json`` (instance id -> pos, ner), or None where the dataset has none."""
    from hades_ray.report.inputs import read_json

    path = dataset / TAGS_FILE if dataset is not None else None
    if path is None or not path.is_file():
        return None
    return read_json(path, "the span tags `hades-ray dataset build` writes")


def spacy_tags(instances: list[Instance], language: Language) -> list[tuple[str, str]]:
    """(POS of the span's root, its first entity type or "") of each span as it stands in its text."""
    from hades_ray.text.pipeline import load_pipeline
    from hades_ray.text.tagging import tag_text_spans

    nlp = load_pipeline(language)
    texts, offsets = [], []
    for i in instances:
        before = language.join(i.words[: i.start])
        start = len(before) + (len(language.joiner) if before else 0)
        texts.append(language.join(i.words))
        offsets.append((start, start + len(language.join(i.words[i.start : i.end + 1]))))
    return [(tags.root_pos, tags.entity) for tags in tag_text_spans(nlp, texts, offsets, batch_size=32)]


def instance_tags(instances: list[Instance], tags: dict | None, language: Language) -> tuple[list, str]:
    """Each instance's (pos, ner) and where they come from."""
    if tags is not None:
        found = [tags.get(str(i.extra.get("id")), {}) for i in instances]
        return [(t.get("pos", ""), t.get("ner", "")) for t in found], "the original span's tags (tags.json)"
    return spacy_tags(instances, language), "spaCy on the span as it stands in the text (no tags.json)"


def mean_std(values: np.ndarray) -> tuple[float | None, float | None, int]:
    values = values[np.isfinite(values)]
    if not values.size:
        return None, None, 0
    return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else None, int(values.size)


def paper_rows(pos: str, ner: str) -> list[str]:
    """The rows of the paper's Table 4 a span with these tags counts in, All last: its POS row ("POS:other"
    for a POS the paper gives no row) and its NER row ("NER:null" in no entity, "NER:other" in any). A
    span with no POS was not tagged (no tags.json entry, or spaCy found no token), so it counts in All only."""
    if not pos:
        return ["All"]
    named = f"POS:{pos}"
    return [named if named in paper.TABLE_4_ROWS else "POS:other", "NER:other" if ner else "NER:null", "All"]


def table_4_numbers(values: dict[str, np.ndarray], labels: np.ndarray, tags: list[tuple[str, str]]) -> dict:
    """tag row -> feature -> label -> (mean, std, n), for each of the paper's Table 4 rows in its order
    (``paper_rows`` puts each span in them), a row without spans included so the paper's figures show."""
    groups = {row: np.zeros(len(labels), dtype=bool) for row in paper.TABLE_4_ROWS}
    for i, (pos, ner) in enumerate(tags):
        for row in paper_rows(pos, ner):
            groups[row][i] = True
    return {
        tag: {
            feature: {side: mean_std(column[mask & (labels == code)]) for side, code in (("H", 1), ("N", 0))}
            for feature, column in values.items()
        }
        for tag, mask in groups.items()
    }


def _mean_std(mean: float, std: float | None) -> str:
    return f"{mean:.3g} ({'–' if std is None else f'{std:.3g}'})"


def _ours(mean: float | None, std: float | None, n: int) -> str:
    """Our mean (std): "–" without instances, the std "–" with one."""
    return _mean_std(mean, std) if n else "–"


def table_4(numbers: dict, tags_source: str) -> Table:
    """The paper's Table 4 beside ours: one row per tag and feature, mean (std) per label."""
    rows = []
    for tag, features in numbers.items():
        for feature, by_label in features.items():
            theirs = paper.TABLE_4[tag][feature]
            rows.append([tag, TITLES[feature],
                         _mean_std(*theirs["H"]), _ours(*by_label["H"]),
                         _mean_std(*theirs["N"]), _ours(*by_label["N"]),
                         f"{by_label['H'][2]} / {by_label['N'][2]}"])  # fmt: skip
    return Table(
        f"Table 4 beside ours: mean (std) per tag and label, the word probability as a probability (the paper "
        f"prints it x 1e-8); tags: {tags_source}; the paper's rows, 'POS:other' every other POS, 'NER:other' "
        f"every entity type",
        ["tag", "feature", "paper H", "ours H", "paper N", "ours N", "n H / n N"],
        rows,
    )


def correlations(values: dict[str, np.ndarray], labels: np.ndarray) -> dict[str, dict]:
    """The point-biserial correlation of the label (H = 1) with each feature, its p-value and n (our choice
    of coefficient: the paper's is not held)."""
    out = {}
    for feature, column in values.items():
        finite = np.isfinite(column)
        x, y = column[finite], labels[finite]
        if x.size < 3 or len(set(y)) < 2 or np.ptp(x) == 0:
            out[feature] = {"r": None, "p_value": None, "n": int(x.size)}
            continue
        result = stats.pointbiserialr(y, x)
        out[feature] = {"r": float(result.statistic), "p_value": float(result.pvalue), "n": int(x.size)}
    return out


def table_1b(numbers: dict[str, dict]) -> Table:
    rows = [[TITLES[f], NOT_HELD if paper.TABLE_1B.get(f) is None else fmt(paper.TABLE_1B[f], 3),
             fmt(r["r"], 3), fmt(r["p_value"], 4), r["n"]] for f, r in numbers.items()]  # fmt: skip
    return Table("Table 1B beside ours: the label's correlation with each feature (ours: point-biserial r; the "
                 f"paper's is a heatmap whose numbers it does not print, so {NOT_HELD})",
                 ["feature", "paper", "ours", "p", "n"], rows)  # fmt: skip


def text_figures(ours: dict[str, float | None], where: str) -> tuple[Table, dict]:
    """The paper's figures given in words (``paper.TEXT_FIGURES``) that ``ours`` has, beside ours, and
    whether ours reads as the words say."""
    rows, numbers = [], {}
    for figure in paper.TEXT_FIGURES:
        if figure.key not in ours:
            continue
        value = ours[figure.key]
        if value is None:
            verdict = "-"
        elif figure.compare == "over":
            verdict = "yes" if value > figure.value else "no"
        else:
            verdict = "yes" if abs(value - figure.value) <= figure.tolerance else "no"
        digits = 1 if figure.unit else 0
        rows.append([figure.label, f'"{figure.words}"', fmt(value, digits), verdict])
        numbers[figure.key] = {"paper": figure.words, "ours": value, "as_the_paper_says": verdict}
    tolerance = "; 'about' and '~' read as within 5 points (the pool: within half its size)"
    table = Table(f"The paper's text beside ours ({where}{tolerance})",
                  ["figure", "the paper's words", "ours", "as the words say"], rows)  # fmt: skip
    return table, numbers
