"""Model-in-the-loop selection of the instances judges see, one round at a time (paper §3.3).

Must not import: guard, serve, report, reproduce, plan, api.
"""
