"""``hades-ray plan``: device-hours and costs of the jobs at Wiki-40B scale, from measured throughput,
and the per-language corpus plan.

Must not import: api, reproduce, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
