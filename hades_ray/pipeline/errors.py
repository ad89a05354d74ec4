"""Errors a user can act on; the CLI prints them as one line and exits with code 2."""


class ResourceError(RuntimeError):
    """The cluster cannot place an actor of some stage."""


class OutputLockedError(RuntimeError):
    """Another run is writing to the same output."""


class StoreError(RuntimeError):
    """The output's disk or store failed in a way a rerun cannot fix by itself (no space left, a store that
    kept refusing requests through every retry); finished shards are kept for the rerun."""
