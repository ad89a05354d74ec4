"""Model-in-the-loop selection of the instances judges see, one round at a time (paper §3.3).

Must not import: api, plan, report, reproduce, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
