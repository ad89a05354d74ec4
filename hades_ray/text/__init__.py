"""Language: the 41 Wiki-40B languages, their sentence ends, word units, stop words, entity labels and
spaCy pipelines, the one spaCy span tagger, word segmentation and stable seeding: what every stage asks
of a text.

Must not import: annotate, api, detect, guard, io, models, perturb, pipeline, plan, pool, report, reproduce,
score, select, serve, train, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
