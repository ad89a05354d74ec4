"""Training detectors: Ray Train for the span classifier (and the head alone on stored vectors), the
LR/SVM fits, Ray Tune sweeps and their search spaces, learnability curves, a set of detectors trained
side by side and reused (detector_set.py); ``cli.py``: the ``train`` and ``tune`` commands.

Must not import: api, plan, report, reproduce, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
