"""The perturbation job's Arrow types between its stages (what its shards hold: hades_ray/pool/schemas.py)."""

import pyarrow as pa

IDS = pa.list_(pa.int32())  # token ids
UNIT_TYPE = pa.struct(
    [
        ("start", pa.int32()),
        ("end", pa.int32()),
        ("token_start", pa.int32()),
        ("token_end", pa.int32()),
        ("ner", pa.string()),
        ("pos", pa.string()),
    ]
)
