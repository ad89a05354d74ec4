"""The engine under every sharded job; README.md in this folder describes it.

Must not import: text, io, models, perturb, detect, train, select, annotate, score, guard, serve, report,
reproduce, plan, api (the engine knows no text, model or detector).
"""
