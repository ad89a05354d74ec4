"""``hades-ray plan``: what the perturbation job will cost on a corpus, from a sample of it.

``count``: the job's own batching and chunking applied to the sample (MASK runs, the models do not);
``measure``: tokens per second of REPLACE and RANK on the device at hand; ``budget``: device-hours,
wall time and the REPLACE/RANK actor split; ``cli``: the command.
"""
