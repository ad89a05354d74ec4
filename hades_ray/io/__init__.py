"""Reading and writing the project's records: the HaDes format, JSON Lines with line numbers, the input
readers (Wiki-40B, Parquet, the demo corpus) and CSV that spreadsheets cannot run.

Must not import: annotate, api, detect, guard, models, perturb, plan, pool, report, reproduce, score, select,
serve, train, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
