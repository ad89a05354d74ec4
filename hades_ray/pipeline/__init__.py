"""The engine under every sharded job; README.md in this folder describes it."""
