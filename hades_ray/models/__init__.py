"""The models the jobs load: names to sources (``registry.py``: a hub id at a revision or the offline
kit), the offline kit's build and the micro models of the tests.

Must not import: annotate, api, detect, guard, perturb, plan, pool, report, reproduce, score, select, serve,
train, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
