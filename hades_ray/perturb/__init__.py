"""The perturbation job (paper §3.1-3.2): read leads, MASK spans, REPLACE them with a masked LM, RANK the
candidates by GPT-2 perplexity (with the shared prefix), and the artifact checks.

Must not import: annotate, api, guard, plan, report, reproduce, score, select, serve, train, nor any cli.py
(the floors above its own, hades_ray/floors.py).
"""
