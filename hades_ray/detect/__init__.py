"""Detectors and every way they score: the span classifier (its backbone, head, views and windows), the
LR/SVM features, stored span representations (``reps.py``), detector folders, scoring jobs and thresholds.

Must not import: annotate, api, guard, plan, report, reproduce, score, select, serve, train, nor any cli.py
(the floors above its own, hades_ray/floors.py).
"""
