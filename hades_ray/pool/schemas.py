"""The pool as the perturbation job writes it (hades_ray/perturb/writer.py): a document's spans, its
``pool/`` and ``instances/`` parts, and the instance columns selection reads."""

from __future__ import annotations

import pyarrow as pa

SPAN_TYPE = pa.struct(
    [
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("orig_start", pa.int64()),
        ("orig_end", pa.int64()),
        ("original", pa.string()),
        ("replacement", pa.string()),
        ("ner", pa.string()),
        ("pos", pa.string()),
    ]
)
POOL_SCHEMA = pa.schema(
    [
        ("doc_id", pa.string()),
        ("title", pa.string()),
        ("original", pa.string()),
        ("perturbed", pa.string()),
        ("ppl", pa.float64()),
        ("candidate", pa.int32()),
        ("candidate_ppls", pa.list_(pa.float64())),
        ("spans", pa.list_(SPAN_TYPE)),
        ("shard", pa.int32()),
        ("row", pa.int64()),
    ]
)
INSTANCE_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("doc_id", pa.string()),
        ("words", pa.list_(pa.string())),
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("replacement", pa.string()),
        ("original_span", pa.string()),
        ("ner", pa.string()),
        ("pos", pa.string()),
        ("hallucination", pa.int8()),
    ]
)
# The instance columns selection reads.
POOL_COLUMNS = ("id", "doc_id", "words", "start", "end", "replacement", "original_span")
