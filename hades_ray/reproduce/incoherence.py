"""The decoding study's incoherence proxy: the surprisal jump at each replaced span.

For a replaced span, ``jump = S(replacement | perturbed text before it) - S(original | original text
before it)``, where ``S`` is the summed surprisal (nats, -ln p) that the causal LM of the RANK step
(GPT-2; the offline kit's ``local:gpt2``) gives the tokens covering the span's characters. A replacement
counts as incoherent when ``jump > ln 100``: the LM finds it at least 100 times less likely in its
context than the word it replaced.

Why this tracks incoherence: an incoherent perturbation is one that does not fit its context (wrong
part of speech, a broken collocation, a word that contradicts what came before), which is exactly what
raises a language model's surprisal at that place. Subtracting the original word's surprisal at the same
place removes what is not about fit: a rare but correct name or number is surprising in both texts, so
its jump stays small, while a fluent but false swap (a different city, another year: the
hallucinations HaDes wants) also stays small. The proxy is offline, deterministic and cheap (one forward
per text) and uses the model the pipeline already ranks candidates with. Its limits: the LM reads only
the left context, so a replacement that breaks the sentence after it is missed; the kit's small GPT-2 is
a weak judge of world knowledge; and the threshold is a choice (the study also reports the median jump
and the shares above ln 10 and ln 1000). The judges' export of the same replacements
(hades_ray/reproduce/judging.py) lets people check it.
"""

from __future__ import annotations

import math

import numpy as np
import torch

THRESHOLD = math.log(100)
OTHER_THRESHOLDS = {"ln10": math.log(10), "ln1000": math.log(1000)}


class IncoherenceProxy:
    """Surprisal jumps of replaced spans under one causal LM (loaded once, on the CPU)."""

    def __init__(self, causal_lm: str, threshold: float = THRESHOLD):
        from hades_ray.models.registry import load_causal_lm

        self.reference, self.threshold = causal_lm, threshold
        self.tokenizer, self.model = load_causal_lm(causal_lm, device="cpu")
        self.max_tokens = int(getattr(self.model.config, "n_positions", 1024)) - 1
        self.cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    @torch.inference_mode()
    def token_surprisals(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(character offsets, surprisal in nats) of each token of ``text``, the first one scored after BOS."""
        if text not in self.cache:
            enc = self.tokenizer(text, return_offsets_mapping=True, truncation=True, max_length=self.max_tokens)
            bos = self.tokenizer.bos_token_id  # as RANK (perturb/rank.py): without one the first token goes unscored
            ids = torch.tensor([([] if bos is None else [bos]) + list(enc["input_ids"])])
            logits = self.model(input_ids=ids).logits[0, :-1].float()
            nll = torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="none").numpy()
            nll = nll if bos is not None else np.concatenate([[0.0], nll])
            self.cache[text] = (np.asarray(enc["offset_mapping"], dtype=int).reshape(-1, 2), nll)
        return self.cache[text]

    def span_surprisal(self, text: str, start: int, end: int) -> float:
        """Summed surprisal of the tokens overlapping characters ``[start, end)``."""
        offsets, nll = self.token_surprisals(text)
        inside = (offsets[:, 0] < end) & (offsets[:, 1] > start) & (offsets[:, 1] > offsets[:, 0])
        return float(nll[inside].sum())

    def measure(self, rows: list[dict]) -> list[dict]:
        """One record per replaced span of pool rows (``original``, ``perturbed``, ``spans``)."""
        out = []
        for row in rows:
            for span in row["spans"] or []:
                replaced = self.span_surprisal(row["perturbed"], span["start"], span["end"])
                original = self.span_surprisal(row["original"], span["orig_start"], span["orig_end"])
                jump = replaced - original
                out.append({"doc_id": row["doc_id"], "original": span["original"],
                            "replacement": span["replacement"], "start": span["start"],
                            "jump": round(jump, 4), "incoherent": jump > self.threshold})  # fmt: skip
        return out

    def summary(self, spans: list[dict]) -> dict:
        """Counts and shares over one setting's spans."""
        jumps = np.array([s["jump"] for s in spans], dtype=float)
        flagged = int(sum(s["incoherent"] for s in spans))
        docs = {s["doc_id"] for s in spans if s["incoherent"]}
        shares = {f"incoherence_rate_{k}": float((jumps > v).mean()) if jumps.size else None
                  for k, v in OTHER_THRESHOLDS.items()}  # fmt: skip
        return {
            "incoherent": flagged,
            "incoherence_rate": flagged / len(spans) if spans else None,
            "texts_with_incoherent": len(docs),
            "surprisal_jump_median": float(np.median(jumps)) if jumps.size else None,
            **shares,
        }

    def description(self) -> dict:
        return {
            "name": "surprisal jump at the replaced span (hades_ray/reproduce/incoherence.py)",
            "lm": self.reference,
            "threshold_nats": round(self.threshold, 4),
            "definition": "S(replacement | perturbed left context) - S(original | original left context) > ln 100,"
            " S the summed -ln p of the causal LM's tokens covering the span",
        }
