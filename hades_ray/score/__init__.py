"""``hades-ray score``: free text to per-word p(hallucination), as scores.jsonl, the heatmap page and CSV,
on a detector of detect/ (the same records ``serve`` and the Python API return).

Must not import: api, plan, report, reproduce, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
