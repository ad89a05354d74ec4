"""Reading and writing the project's records: the HaDes format, JSON Lines with line numbers, the input
readers (Wiki-40B, Parquet, the demo corpus) and CSV that spreadsheets cannot run.

Must not import: models, perturb, detect, train, select, annotate, score, guard, serve, report, reproduce,
plan, api (files know languages and the engine only).
"""
