"""Judges: exporting items for crowd-sourcing or Label Studio, importing judgments, consensus labels.

Must not import: train, score, guard, serve, reproduce, plan, api.
"""
