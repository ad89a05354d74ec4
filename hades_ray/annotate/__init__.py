"""Judges: exporting items for crowd-sourcing or Label Studio, importing judgments, consensus labels.

Must not import: api, plan, report, reproduce, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
