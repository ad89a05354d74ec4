"""Judges: exporting items for crowd-sourcing or Label Studio, importing judgments, consensus labels."""

from hades_ray.annotate.consensus import agreement_report, item_status, krippendorff_alpha

__all__ = ["agreement_report", "item_status", "krippendorff_alpha"]
