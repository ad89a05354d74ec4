"""Model-in-the-loop selection of the instances judges see, one round at a time (paper §3.3); the
simulated judge panel and the dataset built from the judged rounds (both read the pool's features)."""
