"""hades_ray: HaDes token-level hallucination detection as Ray jobs, and its detectors from Python.

``from hades_ray import Detector, guarded_generate`` (the README's "Python" section). Both load on
first use, so ``import hades_ray`` stays light: no torch, transformers or Ray until they are needed.
"""

__version__ = "0.1.0"
__all__ = ["Detector", "guarded_generate"]

_PUBLIC = {"Detector": "hades_ray.api.detector", "guarded_generate": "hades_ray.api.generate"}


def __getattr__(name: str):
    if name in _PUBLIC:
        import importlib

        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'hades_ray' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_PUBLIC])
