"""``hades-ray plan``: device-hours and costs of the jobs at Wiki-40B scale, from measured throughput,
and the per-language corpus plan.

Must not import: report, reproduce, serve, api (a plan runs no pipeline output).
"""
