"""The engine under every sharded job; README.md in this folder describes it.

Must not import: annotate, api, detect, guard, io, models, perturb, plan, pool, report, reproduce, score,
select, serve, train, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
