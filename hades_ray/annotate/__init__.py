"""Judges: exporting items for crowd-sourcing or Label Studio, importing judgments, the simulated panel, the
consensus rules' shares and the dataset build (the consensus labels themselves are pool/'s).

Must not import: api, plan, report, reproduce, nor any cli.py (the floors above its own, hades_ray/floors.py).
"""
