"""Model-in-the-loop selection of the instances judges see, one round at a time (paper Sec. 3.2); the
simulated judge panel and the dataset built from the judged rounds (both read the pool's features)."""
