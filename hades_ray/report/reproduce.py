"""Tables 2-3 as ``hades-ray reproduce tables`` wrote them (``OUT/tables.json``): each cell the paper's
figure, ours and the difference, and the paired tests between rows. The report only reads the file."""

from __future__ import annotations

import json
from pathlib import Path

from hades_ray.report.inputs import ReportInputError
from hades_ray.report.model import Section, Table, fmt

TABLE_KEYS = ("accuracy", "gmean", "bss", "auc", "n_precision", "n_recall", "n_f1", "h_precision", "h_recall", "h_f1")
COLUMNS = tuple(zip(TABLE_KEYS, ("Acc", "G-Mean", "BSS", "AUC", "N P", "N R", "N F1", "H P", "H R", "H F1")))
PAIRED_COLUMNS = ["A", "B", "n", "A right, B wrong", "B right, A wrong", "McNemar exact p", "G-Mean A - B",
                  "95% bootstrap CI"]  # fmt: skip


def _cell(cell: dict) -> str:
    diff = "–" if cell["diff"] is None else f"{cell['diff']:+.2f}"
    return f"{fmt(cell['paper'], 2)}{'†' if cell['note'] else ''} / {fmt(cell['ours'], 2)} ({diff})"


def _paired(table: dict) -> Table:
    rows = []
    for c in table["paired"]:
        low, high = c.get("gmean_ci_low"), c.get("gmean_ci_high")
        ci = "–" if low is None else f"[{100 * low:+.2f}, {100 * high:+.2f}]"
        diff = fmt(100 * c.get("gmean_difference", float("nan")), 2)
        p = fmt(c.get("mcnemar_exact_p"), 4)
        rows.append([c["a"], c["b"], c["n"], c.get("a_right_b_wrong"), c.get("b_right_a_wrong"), p, diff, ci])
    return Table(f"{table['title']}: paired tests on the same test items", PAIRED_COLUMNS, rows)


def reproduce_section(folder: str | Path) -> Section:
    """The section of a ``hades-ray reproduce tables --output`` folder."""
    path = Path(folder) / "tables.json"
    if not path.is_file():
        raise ReportInputError(f"--tables {folder}: no tables.json; run `hades-ray reproduce tables` first")
    data = json.loads(path.read_text(encoding="utf-8"))
    section = Section("reproduce", "Tables 2-3: the paper and ours", numbers=data)
    legend = ("Each cell: the paper / ours (ours - paper), in percent; BSS lower is better; – where the paper "
              "prints none (BSS and AUC of LR and SVM), where it has no such row, or where a trial has none; † where "
              "the paper's figure does not follow from its others.")  # fmt: skip
    section.notes += [*data.get("notes", []), legend]
    for table in data["tables"].values():
        rows = [[r["label"], *(_cell(r["cells"][k]) for k, _ in COLUMNS), r["n"]] for r in table["rows"]]
        section.tables.append(Table(table["title"], ["Model", *(name for _, name in COLUMNS), "n"], rows))
        section.notes += [f"† {r['row']} {name}: {r['cells'][k]['note']}." for r in table["rows"]
                          for k, name in COLUMNS if r["cells"][k]["note"]]  # fmt: skip
        if table["paired"]:
            section.tables.append(_paired(table))
    return section
