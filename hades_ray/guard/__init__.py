"""The online guard: generation that checks each word as it completes and resamples flagged ones.

Must not import: select, annotate, train, serve, report, reproduce, plan, api.
"""
