"""``hades-ray report``: the pipeline's outputs as the paper's analyses, one module per section.

Must not import: reproduce, plan, serve, api, guard.
"""
