"""The models the jobs load: names to sources (``registry.py``: a hub id at a revision or the offline
kit), the offline kit's build and the micro models of the tests.

Must not import: perturb, detect, train, select, annotate, score, guard, serve, report, reproduce, plan, api
(every model stage loads through here).
"""
