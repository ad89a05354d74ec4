"""The ``serve`` config section: where ``hades-ray serve`` listens, who may call it, how much one request
may carry, how requests are batched and how replicas scale (its flags override it).

What is scored, and how, is the ``score`` section's business (``score.mode``, ``score.words``,
``score.threshold``, ``score.stride``, ``score.max_chars``): the service and ``hades-ray score`` read the
same settings, so they give the same bytes. ``score.max_chars`` is the service's text length limit too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from hades_ray.errors import ConfigError

TOKEN_ENV = "HADES_SERVE_TOKEN"  # the bearer token, kept off command lines and out of config files


@dataclass
class ServeConfig:
    host: str = "127.0.0.1"  # loopback unless told otherwise (0.0.0.0: every interface)
    port: int = 8000
    token: str = ""  # bearer token callers must send; empty: HADES_SERVE_TOKEN, else no authentication
    max_request_bytes: int = 1_000_000  # larger bodies get 413 before they are parsed
    max_texts_per_request: int = 64  # a longer "texts" list gets 422
    max_batch_size: int = 16  # requests scored together by one replica (@serve.batch)
    batch_wait_timeout_s: float = 0.005  # how long a replica waits to fill a batch
    min_replicas: int = 1
    max_replicas: int = 1
    target_ongoing_requests: float = 4.0  # autoscaling aims at this many requests in flight per replica
    max_ongoing_requests: int = 32  # a replica queues at most this many (beyond: Serve backs off)
    num_cpus: float = 1.0  # per replica
    num_gpus: float = 0.0  # per replica (0: CPU)

    def bearer_token(self) -> str:
        """The token callers must present: the config's, else ``HADES_SERVE_TOKEN``; empty: none needed."""
        return self.token or os.environ.get(TOKEN_ENV, "")

    def validate(self) -> None:
        checks = [
            (bool(self.host.strip()), "serve.host: an interface address such as 127.0.0.1"),
            (self.min_replicas <= self.max_replicas, "serve.min_replicas must not exceed serve.max_replicas"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)
