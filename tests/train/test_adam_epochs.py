"""The plain training loop of the benchmarks (hades_ray.train.loop.adam_epochs): keyword inputs, and a
frozen parameter left as it was."""

from __future__ import annotations

import torch

from hades_ray.train.loop import adam_epochs


class Keyed(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.frozen, self.head = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
        self.frozen.requires_grad_(False)

    def forward(self, features):
        return self.head(self.frozen(features))


def test_adam_trains_only_what_trains_on_keyword_inputs():
    torch.manual_seed(0)
    x = torch.cat([torch.randn(16, 2) + 3, torch.randn(16, 2) - 3])
    y = torch.tensor([0] * 16 + [1] * 16)
    model = Keyed()
    frozen = model.frozen.weight.clone()
    adam_epochs(model, 0.1, 30, lambda: [({"features": x}, y)])
    assert torch.equal(model.frozen.weight, frozen) and (model(x).argmax(-1) == y).all()
