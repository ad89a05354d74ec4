"""The work folder that selection rounds and judges share: its layout, the pool's schemas and readers, the
pool's features (computed once per pool shard) and the consensus labels of judged rounds. select/ and
annotate/ both read it, and neither imports the other.

Must not import: annotate, api, detect, guard, perturb, plan, report, reproduce, score, select, serve, train,
nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
