"""The online guard: generation that checks each word as it completes and resamples flagged ones."""
