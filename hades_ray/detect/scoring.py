"""p(hallucination) from a trained span classifier: a pure function and its Ray Data actor."""

from __future__ import annotations

import numpy as np
import torch

from hades_ray.detect.spans import encode_spans, rows_to_items


@torch.no_grad()
def score_items(model, tokenizer, items: list[dict], mode: str, window: int, batch_size: int = 32) -> np.ndarray:
    """p(H) for ``{"words", "start", "end"}`` items, batched in length order (less padding)."""
    model.eval()
    order = sorted(range(len(items)), key=lambda i: len(items[i]["words"]))
    out = np.zeros(len(items), dtype=np.float64)
    device = next(model.parameters()).device
    for lo in range(0, len(order), batch_size):
        idx = order[lo : lo + batch_size]
        enc = {k: v.to(device) for k, v in encode_spans(tokenizer, [items[i] for i in idx], mode, window).items()}
        probs = torch.softmax(model(**enc).float(), dim=-1)[:, 1]
        out[idx] = probs.cpu().numpy()
    return out


class SpanScorer:
    """Ray Data callable class: loads the exported detector once per actor."""

    def __init__(self, model_dir: str, torch_threads: int = 1, batch_size: int = 32):
        from hades_ray.detect.model import load_detector

        torch.set_num_threads(torch_threads)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        self.tokenizer, self.model, self.settings = load_detector(model_dir, device=device)
        self.batch_size = batch_size

    def __call__(self, batch: dict) -> dict:
        p = score_items(
            self.model,
            self.tokenizer,
            rows_to_items(batch),
            self.settings["mode"],
            self.settings["window"],
            self.batch_size,
        )
        return {"row": np.asarray(batch["row"]), "p_hallucination": p}
