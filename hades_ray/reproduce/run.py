"""``hades-ray reproduce tables`` end to end: the grid, its cost, the Tune experiment, then the tables
(``OUT/tables.md`` and ``OUT/tables.json``) from the trials' test predictions."""

from __future__ import annotations

import logging
from pathlib import Path

from hades_ray.config import HadesConfig
from hades_ray.errors import UserError
from hades_ray.pipeline.laps import Laps
from hades_ray.pipeline.storage import write, write_json_atomic
from hades_ray.reproduce.cost import format_cost, grid_cost
from hades_ray.reproduce.experiment import failed_cells, require_dataset, run_experiment
from hades_ray.reproduce.grid import Grid, pin_grid, read_grid
from hades_ray.reproduce.tables import build_tables
from hades_ray.reproduce.trial import epoch_split, split_path, test_items

log = logging.getLogger(__name__)
TABLES_JSON, TABLES_MD = "tables.json", "tables.md"


def label_source(dataset: Path, setting: str) -> str:
    """Where the labels come from: the setting, or (auto) the judgments beside a ``dataset build`` folder."""
    if setting != "auto":
        return setting
    imports = list(dataset.resolve().parent.glob("round-*/judgments/import-*.csv"))
    if not imports:
        return "unknown"  # e.g. the published Wiki-Hades folder: its labels are the paper's crowd judgments
    return "simulated" if any(p.name.endswith(".simulated.csv") for p in imports) else "human"


def prepare(config: HadesConfig, dataset: str | Path) -> tuple[Grid, list, Path]:
    """The grid (its pins recorded in ``config``), its cells and the checked dataset folder."""
    dataset = require_dataset(Path(dataset))
    grid = read_grid(config)
    pin_grid(config, grid)
    cells = grid.cells(config.reproduce.modes)
    if not cells:
        raise FileNotFoundError(f"{grid.path}: no row has a mode in reproduce.modes ({config.reproduce.modes})")
    split = config.reproduce.test_split
    if not test_items(dataset, split, config.detect.skip_bad)[0]:
        raise UserError(
            f"{split_path(dataset, split)}: no labelled instances to score (the published Wiki-Hades test.txt "
            "withholds its labels): --set reproduce.test_split=valid scores the validation split instead"
        )
    return grid, cells, dataset


def cost_text(config: HadesConfig, grid: Grid, cells: list, dataset: Path) -> str:
    from hades_ray.detect.data import LoadReport, load_labelled

    train = load_labelled(split_path(dataset, "train"), config.detect.skip_bad, LoadReport())
    return format_cost(grid_cost(config.to_dict(), grid, cells, train))


def epoch_note(config: HadesConfig) -> str:
    """Which split picked each detector's best epoch, and a warning when it is the split the tables score."""
    if epoch_split(config) == "train_slice":
        share = config.reproduce.epoch_slice_share
        return (f"Each detector's epoch was picked on a seeded {share:.0%} of train.txt's documents (seed "
                f"{config.seed}), held out of its training.")  # fmt: skip
    if config.reproduce.test_split == "valid":
        return (
            "valid.txt is both the scored split and the one that picked each detector's epoch, so the figures "
            "lean optimistic; --set reproduce.epoch_split=train_slice picks the epoch on a slice of train.txt."
        )
    return "Each detector's epoch was picked on valid.txt."


def write_tables(config: HadesConfig, grid: Grid, cells: list, dataset: Path, output: Path, extra: dict) -> str:
    """tables.json and tables.md from the cells' predictions; returns the Markdown."""
    from hades_ray.report.render import page_md
    from hades_ray.report.reproduce import reproduce_section

    tables = build_tables(output, grid, cells, config.seed, config.reproduce.bootstrap_resamples)
    labels = label_source(dataset, config.reproduce.labels)
    stand_ins = any(r.stands_in_for for r in grid.rows)
    warning = " (SIMULATED judges, not people: the figures say nothing about the paper's data)"
    scored = f"Scored split: {config.reproduce.test_split}.txt of {dataset.resolve()}"
    notes = [f"{scored}; its labels: {labels}{warning if labels == 'simulated' else ''}."]
    notes.append(epoch_note(config))
    if stand_ins:
        notes.append("Backbones are SMALL STAND-INS for the paper's (named in each row), run through the same code.")
    data = {"dataset": str(dataset.resolve()), "labels": labels, "grid": str(grid.path), "stand_ins": stand_ins,
            "seed": config.seed, "bootstrap_resamples": config.reproduce.bootstrap_resamples, "notes": notes,
            "tables": tables, **extra}  # fmt: skip
    write_json_atomic(output / TABLES_JSON, data)
    text = page_md("HaDes Tables 2-3", [reproduce_section(output)])  # the report's own section and renderer
    write(output / TABLES_MD, text)
    return text


def reproduce_tables(config: HadesConfig, dataset: str | Path, output: str | Path, force: bool = False) -> dict:
    """Run the grid (keeping its finished cells; ``force``: none) and write the tables; returns the
    Markdown, the failed cells and timings."""
    grid, cells, dataset = prepare(config, dataset)
    output = Path(output)
    print(f"grid {grid.path} on {dataset}: {len(cells)} trials\n" + cost_text(config, grid, cells, dataset), flush=True)
    laps = Laps()
    trials = run_experiment(config, grid, cells, dataset, output, force)
    wall = laps.lap()
    failed = failed_cells(trials)
    markdown = write_tables(config, grid, cells, dataset, output, {"wall_seconds": wall, "failed": failed})
    return {"markdown": markdown, "failed": failed, "wall_seconds": wall, "trials": trials}
