"""``hades-ray report``: the pipeline's outputs as the paper's analyses, one module per section.

Must not import: api, reproduce, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
