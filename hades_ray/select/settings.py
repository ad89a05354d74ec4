"""The ``select`` config section (selectors and their training)."""

from dataclasses import dataclass

from hades_ray.config import register_section


@dataclass
class SelectConfig:
    def validate(self) -> None:
        pass


register_section("select", SelectConfig)
