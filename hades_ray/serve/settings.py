"""The ``serve`` config section: where ``hades-ray serve`` listens, who may call it, how much one request
may carry, how requests are batched and how replicas scale (its flags override it).

What is scored, and how, is the ``score`` section's business (``score.mode``, ``score.words``,
``score.threshold``, ``score.stride``, ``score.max_chars``): the service and ``hades-ray score`` read the
same settings, so they give the same bytes. ``score.max_chars`` is the service's text length limit too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hades_ray.config_keys import INT32, key, require

TOKEN_ENV = "HADES_SERVE_TOKEN"  # the bearer token, kept off command lines and out of config files


@dataclass
class ServeConfig:
    host: str = key("127.0.0.1", help="interface to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface)")
    port: int = key(8000, "[1, 65535]", help="HTTP port (default 8000)")
    token: str = ""  # bearer token callers must send; empty: HADES_SERVE_TOKEN, else no authentication
    max_request_bytes: int = key(1_000_000, f"[1, {INT32}]")  # larger bodies get 413 before they are parsed
    max_texts_per_request: int = key(64, "[1, 100000]")  # a longer "texts" list gets 422
    max_batch_size: int = key(16, "[1, 10000]")  # requests scored together by one replica (@serve.batch)
    batch_wait_timeout_s: float = key(0.005, "[0, 60]")  # how long a replica waits to fill a batch
    min_replicas: int = key(1, "[0, 10000]")
    max_replicas: int = key(1, "[1, 10000]", help="replicas autoscale up to this many (each loads the detector once)")
    # autoscaling aims at this many requests in flight per replica
    target_ongoing_requests: float = key(4.0, "(0, 100000]")
    max_ongoing_requests: int = key(32, "[1, 100000]")  # a replica queues at most this many (beyond: Serve backs off)
    num_cpus: float = key(1.0, "[0, 1024]")  # per replica
    num_gpus: float = key(0.0, "[0, 64]", help="GPUs per replica (0: CPU; 0.5 packs two)")

    def bearer_token(self) -> str:
        """The token callers must present: the config's, else ``HADES_SERVE_TOKEN``; empty: none needed."""
        return self.token or os.environ.get(TOKEN_ENV, "")

    def validate(self) -> None:
        require(
            (bool(self.host.strip()), "serve.host: an interface address such as 127.0.0.1"),
            (self.min_replicas <= self.max_replicas, "serve.min_replicas must not exceed serve.max_replicas"),
        )
