"""The online guard: generation that checks each word as it completes and resamples flagged ones.

Must not import: api, plan, report, reproduce, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
