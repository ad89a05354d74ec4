"""Detectors and every way they score: the span classifier (its backbone, head, views and windows), the
LR/SVM features, stored span representations (``reps.py``), detector folders, scoring jobs and thresholds.

Must not import: train, select, annotate, score, guard, serve, report, reproduce, plan, api, perturb
(training, rounds and commands build on detectors, never the other way).
"""
