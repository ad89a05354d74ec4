"""The Python API (``from hades_ray import Detector, guarded_generate``): the commands' numbers for
objects in memory. ``detector.py``: open, score, stream, stopping criteria; ``stream.py``: ``POST
/score/next`` in process; ``stopping.py``: the ``model.generate`` hook; ``generate.py``: the guard on
one's own model; ``hub.py``: a detector folder or hub repository at a revision.

Must not import: any cli.py (the one floor above its own, hades_ray/floors.py).
"""
