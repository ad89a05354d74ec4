"""The ``detect`` config section (detectors and their training)."""

from dataclasses import dataclass

from hades_ray.config import register_section


@dataclass
class DetectConfig:
    def validate(self) -> None:
        pass


register_section("detect", DetectConfig)
