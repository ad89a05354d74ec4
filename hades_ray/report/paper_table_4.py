"""The paper's Table 4 (Appendix A: Table 1's span features per POS and NER tag), as printed, and every check
its own figures allow: its "All" row against Table 1, H above N where Appendix A says so, and its rows
against the "All" row they are parts of.

The rows are the paper's nine: six POS rows and two NER rows, each set a partition of the spans, then All.
"POS:other" is every POS but the five named and "NER:null" a span in no entity, so "NER:other" is every
span in one (the paper names no entity type). ``paper_figures`` re-exports what the rest of the project
reads; this module imports nothing of the project, so ``paper_figures`` can import it.
"""

from __future__ import annotations

import math

FEATURES = ("mlm_prob", "mlm_entropy", "tfidf", "ppmi")  # the paper's column order, Table 1's keys
LABELS = ("H", "N")
POS_ROWS = ("POS:NOUN", "POS:VERB", "POS:ADJ", "POS:ADV", "POS:PROPN", "POS:other")
NER_ROWS = ("NER:null", "NER:other")
ROWS = POS_ROWS + NER_ROWS + ("All",)
PARTITIONS = {"POS": POS_ROWS, "NER": NER_ROWS}
# The word-probability column is printed in units of 1e-8 (its header); held, like Table 1, as a probability.
SCALE = {"mlm_prob": 1e-8}
NAMES = {"mlm_prob": "word probability", "mlm_entropy": "entropy", "tfidf": "TF-IDF", "ppmi": "PPMI"}

# Each row's printed cells, mean_std, H then N of each feature in FEATURES' order. Every cell is bold in
# the paper, so the bold marks nothing; the digits are kept as printed (".024" and "0.024" alike), because
# how many there are is how far a figure may be from what it rounds.
PRINTED = {
    "POS:NOUN": "6.98_32.0 1.68_6.34 2.75_1.52 1.86_1.13 .025_.021 .023_.018 .213_.145 .228_.140",
    "POS:VERB": "2.51_9.33 0.69_2.89 2.25_1.25 1.76_1.00 .019_.012 .018_.011 .206_.112 .216_.119",
    "POS:ADJ": "8.16_44.8 2.86_18.9 2.95_1.46 2.38_1.23 .021_.017 .017_.009 .180_.128 .164_.117",
    "POS:ADV": "5.13_14.2 2.65_12.2 2.56_1.18 1.97_1.09 .016_.011 .014_.008 .181_.114 .182_.105",
    "POS:PROPN": "14.3_33.6 4.35_17.8 3.12_1.73 1.56_1.39 .029_.026 .033_.029 .198_.150 .312_.275",
    "POS:other": "9.56_31.1 3.28_15.7 2.64_1.61 1.26_0.97 .013_.013 .011_.010 .158_.107 .205_.092",
    "NER:null": "5.37_25.6 1.24_7.19 2.52_1.47 1.79_1.06 .021_.019 .019_.014 .200_.132 .215_.126",
    "NER:other": "8.43_25.4 5.06_21.5 2.93_1.56 1.65_1.44 .023_.023 .026_0.024 .189_.146 .263_.237",
    "All": "5.85_25.6 1.30_7.67 2.58_1.49 1.78_1.07 .021_.019 .019_0.014 .198_.144 .216_.129",
}  # fmt: skip
TABLE_4_PRINTED = 144  # 9 rows x 4 features x H/N x (mean, std)

# Appendix A: "hallucinated content typically associates with higher word probability and word entropy
# irrespective of POS/NER tag".
H_ABOVE_N = ("mlm_prob", "mlm_entropy")


def parse_number(text: str, scale: float = 1.0) -> tuple[float, float]:
    """A printed figure and the half unit of its last digit, both times ``scale``."""
    digits = len(text.partition(".")[2])
    return float(text) * scale, 0.5 * 10.0**-digits * scale


def parse_cell(text: str, scale: float = 1.0) -> tuple[tuple[float, float], tuple[float, float]]:
    """((mean, std), (their half units)) of a printed ``mean_std`` cell."""
    mean, std = (parse_number(part, scale) for part in text.split("_"))
    return (mean[0], std[0]), (mean[1], std[1])


def parse_row(cells: str) -> dict[str, dict[str, tuple]]:
    """feature -> label -> ((mean, std), (half units)) of one printed row."""
    parsed = iter(cells.split())
    keys = [(f, label) for f in FEATURES for label in LABELS]
    out: dict[str, dict[str, tuple]] = {}
    for (feature, label), cell in zip(keys, parsed, strict=True):
        out.setdefault(feature, {})[label] = parse_cell(cell, SCALE.get(feature, 1.0))
    return out


_PARSED = {row: parse_row(cells) for row, cells in PRINTED.items()}
# tag row -> feature -> label -> (mean, std), and the half units those carry, in the same shape.
TABLE_4 = {row: {f: {k: cell[0] for k, cell in by.items()} for f, by in fs.items()} for row, fs in _PARSED.items()}
HALF_UNITS = {row: {f: {k: cell[1] for k, cell in by.items()} for f, by in fs.items()} for row, fs in _PARSED.items()}


def _name(feature: str) -> str:
    return "PPMI" if feature == "ppmi" else feature  # the wording the report's notes have used


def all_row_notes(table_1: dict[str, dict[str, tuple[float, float]]]) -> list[str]:
    """Each cell of the All row that differs from the same cell of Table 1 (both print the same digits)."""
    notes = []
    for feature, by_label in TABLE_4["All"].items():
        for label, pair in by_label.items():
            for name, given, other in zip(("mean", "std"), pair, table_1[feature][label]):
                if not math.isclose(given, other, rel_tol=1e-9):
                    notes.append(f"Table 4's All row gives {_name(feature)} {label} {name} {given:g}, "
                                 f"Table 1 {other:g}")  # fmt: skip
    return notes


def h_above_n_notes() -> list[str]:
    """Each row whose H mean of word probability or entropy is not above its N mean, against Appendix A."""
    return [
        f"Table 4's {row} row gives H a mean {NAMES[feature]} of {TABLE_4[row][feature]['H'][0]:g}, not above "
        f"N's {TABLE_4[row][feature]['N'][0]:g}, though Appendix A finds H higher in it irrespective of tag"
        for row in ROWS
        for feature in H_ABOVE_N
        if TABLE_4[row][feature]["H"][0] <= TABLE_4[row][feature]["N"][0]
    ]


# The mix. A partition's rows with shares w (>= 0, summing to 1) give the All row's mean as sum(w * mean)
# and its second moment (std^2 + mean^2) as sum(w * (std^2 + mean^2)): both linear in w, so whether any
# shares give a printed All figure, each figure anywhere within its half unit, is a linear program. The
# sample std's n - 1 moves a mix's second moment by about (rows / spans) of itself, under 0.1% at the
# paper's thousands of spans per label, below a three-digit figure's half unit; it is left out. Each row's
# share is taken to be the same in every feature's column, as the paper gives every span every feature.
MOMENTS = ("mean", "std")


def _bounds(row: str, feature: str, label: str, moment: str) -> tuple[float, float]:
    """The interval a row's mean, or second moment, lies in when its printed mean and std are rounded."""
    (mean, std), (half_mean, half_std) = TABLE_4[row][feature][label], HALF_UNITS[row][feature][label]
    if moment == "mean":
        return mean - half_mean, mean + half_mean

    def square(x: float, half: float) -> tuple[float, float]:
        return max(0.0, abs(x) - half) ** 2, (abs(x) + half) ** 2

    (m_lo, m_hi), (s_lo, s_hi) = square(mean, half_mean), square(std, half_std)
    return m_lo + s_lo, m_hi + s_hi


def _constraints(rows: tuple[str, ...], label: str, keys: list[tuple[str, str]]) -> tuple[list, list]:
    """linprog's A_ub and b_ub: for each (feature, moment), the mix of the rows' lowest values is at most
    the All figure's highest, and the mix of their highest at least its lowest."""
    a_ub, b_ub = [], []
    for feature, moment in keys:
        low, high = _bounds("All", feature, label, moment)
        row_bounds = [_bounds(row, feature, label, moment) for row in rows]
        a_ub += [[lo for lo, _ in row_bounds], [-hi for _, hi in row_bounds]]
        b_ub += [high, -low]
    return a_ub, b_ub


def mix(rows: tuple[str, ...], label: str, keys: list[tuple[str, str]], objective: list[float] | None = None):
    """The shares of ``rows`` that give every (feature, moment) of ``keys`` in the All row (minimising
    ``objective`` . shares), or None when no shares do."""
    from scipy.optimize import linprog

    a_ub, b_ub = _constraints(rows, label, keys)
    cost = objective if objective is not None else [0.0] * len(rows)
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=[[1.0] * len(rows)], b_eq=[1.0], bounds=(0, 1))
    return result.x if result.status == 0 else None


def reachable_std(rows: tuple[str, ...], label: str, feature: str, keys: list[tuple[str, str]]) -> tuple[float, float]:
    """The least and most std of ``feature`` in All that shares of ``rows`` giving ``keys`` allow: the
    extreme second moments of the mix, less the All mean's largest and smallest square."""
    low_mean, high_mean = _bounds("All", feature, label, "mean")
    row_bounds = [_bounds(row, feature, label, "std") for row in rows]
    least = mix(rows, label, keys, [lo for lo, _ in row_bounds])
    most = mix(rows, label, keys, [-hi for _, hi in row_bounds])
    lowest = sum(w * lo for w, (lo, _) in zip(least, row_bounds)) - high_mean**2
    highest = sum(w * hi for w, (_, hi) in zip(most, row_bounds)) - low_mean**2
    return math.sqrt(max(0.0, lowest)), math.sqrt(max(0.0, highest))


def _figure(feature: str, label: str, moment: str) -> str:
    value = TABLE_4["All"][feature][label][MOMENTS.index(moment)]
    return f"{_name(feature)} {label} {moment} {value:g}"


EVERY = [(f, m) for f in FEATURES for m in MOMENTS]


def culprits(rows: tuple[str, ...], label: str) -> list[tuple[str, str]] | None:
    """None where shares of ``rows`` give every All figure of ``label``; else each figure without which
    they do (none: no one figure explains it)."""
    if mix(rows, label, EVERY) is not None:
        return None
    return [key for key in EVERY if mix(rows, label, [k for k in EVERY if k != key]) is not None]


def mix_notes() -> list[str]:
    """For each partition and label whose rows no shares mix into the All row: which All figures, left out,
    let them, and the std the mix then gives any of those that is a std."""
    notes = []
    for partition, rows in PARTITIONS.items():
        for label in LABELS:
            found = culprits(rows, label)
            if found is None:
                continue
            note = f"no shares of Table 4's {partition} rows give all its All row's {label} figures within rounding"
            if found:
                note += f"; leaving out {' or '.join(_figure(f, label, m) for f, m in found)} they do"
            for feature, _ in [key for key in found if key[1] == "std"]:
                low, high = reachable_std(rows, label, feature, [k for k in EVERY if k != (feature, "std")])
                note += f", and give a {_name(feature)} {label} std of {low:.3g} to {high:.3g}"
            notes.append(note)
    return notes


def entity_shares(share_h: float) -> dict[str, tuple[float, float]] | None:
    """The percent of spans in no entity, and of entity spans that are H, that the NER rows imply: each
    label's NER:null share (least and most, from the All figures the rows mix into) weighted by the label
    shares ``share_h`` and 100 - ``share_h``; None where the rows mix into no All figures of a label."""
    extremes = {}
    for label in LABELS:
        found = culprits(NER_ROWS, label) or []
        usable = [k for k in EVERY if k not in found]
        least, most = mix(NER_ROWS, label, usable, [1.0, 0.0]), mix(NER_ROWS, label, usable, [-1.0, 0.0])
        if least is None:
            return None
        extremes[label] = (least[0], most[0])
    h, n = share_h / 100, 1 - share_h / 100
    # Both shares move one way with each label's null share, so the corners give their least and most.
    corners = [(w_h, w_n) for w_h in extremes["H"] for w_n in extremes["N"]]
    not_entities = [float(100 * (h * w_h + n * w_n)) for w_h, w_n in corners]
    entities_h = [float(100 * h * (1 - w_h) / (h * (1 - w_h) + n * (1 - w_n))) for w_h, w_n in corners]
    return {"spans_not_entities": (min(not_entities), max(not_entities)),
            "entities_h": (min(entities_h), max(entities_h))}  # fmt: skip


def notes(table_1: dict[str, dict[str, tuple[float, float]]]) -> list[str]:
    """Every Table 4 figure that does not follow from the others it is tied to, one sentence each."""
    return all_row_notes(table_1) + h_above_n_notes() + mix_notes()
