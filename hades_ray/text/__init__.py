"""Language: the 41 Wiki-40B languages, their sentence ends, word units, stop words and spaCy
pipelines, word segmentation and stable seeding: what every stage asks of a text.

Must not import: io, models, perturb, detect, train, select, annotate, score, guard, serve, report,
reproduce, plan, api, pipeline (the lowest room: every other one reads text through it).
"""
