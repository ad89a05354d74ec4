"""Model-in-the-loop selection of the instances judges see, one round at a time (paper Sec. 3.2)."""

from hades_ray.select.ratio import detector_rates, explain_ratio, subsampling_ratio

__all__ = ["detector_rates", "explain_ratio", "subsampling_ratio"]
