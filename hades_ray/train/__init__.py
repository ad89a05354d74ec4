"""Training detectors: Ray Train for the span classifier (and the head alone on stored vectors), the
LR/SVM fits, Ray Tune sweeps and their search spaces, learnability curves.

Must not import: select, annotate, score, guard, serve, report, reproduce, plan, api.
"""
