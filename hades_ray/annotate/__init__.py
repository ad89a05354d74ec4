"""Judges: exporting items for crowd-sourcing or Label Studio, importing judgments, consensus labels."""
