"""The online guard: generation that checks each word as it completes and resamples flagged ones, and what
its generations are measured by (metrics.py; arms.py runs and measures a benchmark's arms). It only
generates: every p(H) it acts on comes from a detector of detect/ (``Scorer.score``, ``score_spans``,
``incremental``).

Must not import: api, plan, report, reproduce, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
