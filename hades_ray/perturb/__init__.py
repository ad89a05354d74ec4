"""The perturbation job (paper §3.1): read leads, MASK spans, REPLACE them with a masked LM, RANK the
candidates by GPT-2 perplexity (with the shared prefix), and the artifact checks.

Must not import: detect, train, select, annotate, score, guard, serve, report, reproduce, plan, api.
"""
