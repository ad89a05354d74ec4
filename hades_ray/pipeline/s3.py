"""The project's one S3 configuration, for both clients that talk to it: ``pyarrow.fs`` (every read and
write of parts, markers and views) and boto3 (the conditional writes ``pyarrow.fs`` does not offer, which
the output lock needs: ``If-None-Match: *`` to create, ``If-Match: ETAG`` to renew or take over).

Both follow ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL``, ``AWS_DEFAULT_REGION`` / ``AWS_REGION`` and the
usual credential chain, and both retry transient errors (500, 503, SlowDown, reset connections) with
exponential back-off: ``AWS_MAX_ATTEMPTS`` attempts in all (the AWS SDKs' own variable; ``RETRY_ATTEMPTS``
without it). boto3's retries are counted (``retries()``);
pyarrow's happen inside its C++ client, which reports none.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

import pyarrow.fs as pafs

from hades_ray.pipeline.errors import StoreError

log = logging.getLogger(__name__)
RETRY_ATTEMPTS = 8  # at the SDKs' back-off (up to 20 s apart) a store may be unavailable ~a minute
_retries = {"count": 0}
_retries_lock = threading.Lock()


@dataclass(frozen=True)
class Settings:
    endpoint: str  # "" for AWS itself
    region: str
    attempts: int = RETRY_ATTEMPTS


def settings() -> Settings:
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or ""
    region = os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION") or "us-east-1"
    return Settings(endpoint, region, _attempts(os.environ.get("AWS_MAX_ATTEMPTS", "")))


def _attempts(value: str) -> int:
    if not value.strip():
        return RETRY_ATTEMPTS
    if not value.strip().isdigit() or int(value) < 1:
        raise StoreError(f"AWS_MAX_ATTEMPTS={value!r}: give a whole number of attempts, 1 or more")
    return int(value)


def filesystem() -> pafs.S3FileSystem:
    """The pyarrow S3 filesystem for the current settings (one per settings: making one costs ms)."""
    return _filesystem(settings())


@functools.lru_cache(maxsize=8)
def _filesystem(config: Settings) -> pafs.S3FileSystem:
    options: dict = {
        "region": config.region,
        "retry_strategy": pafs.AwsStandardS3RetryStrategy(max_attempts=config.attempts),
        "allow_delayed_open": True,  # a small file is one PUT, not a multipart upload's three requests
        # The SDK's 1 s connect and 3 s request timeouts fail a busy store's requests through every retry.
        "connect_timeout": 10,
        "request_timeout": 60,
    }
    if config.endpoint:
        scheme, _, host = config.endpoint.partition("://")
        options.update(endpoint_override=host or scheme, scheme=scheme if host else "https")
    return pafs.S3FileSystem(**options)


def client():
    """A boto3 S3 client for the same settings, with standard-mode retries that are counted."""
    return _client(settings())


@functools.lru_cache(maxsize=8)
def _client(config: Settings):
    import boto3
    from botocore.config import Config

    retries = {"max_attempts": config.attempts, "mode": "standard"}
    made = boto3.session.Session().client(
        "s3",
        endpoint_url=config.endpoint or None,
        region_name=config.region,
        config=Config(retries=retries, connect_timeout=10, read_timeout=60),
    )
    made.meta.events.register("after-call.s3", _count_retries)
    return made


def _count_retries(parsed=None, **_) -> None:
    attempts = int(((parsed or {}).get("ResponseMetadata") or {}).get("RetryAttempts") or 0)
    if attempts:
        with _retries_lock:
            _retries["count"] += attempts


def retries() -> int:
    """Transient errors this process's boto3 client retried after a back-off."""
    return _retries["count"]


def bucket_key(uri: str) -> tuple[str, str]:
    bucket, _, key = uri.split("://", 1)[1].partition("/")
    return bucket, key


@dataclass(frozen=True)
class Tagged:
    """An object as read: its bytes, its ETag and its age by the store's own clock (no host clock enters)."""

    body: bytes
    etag: str
    age_s: float


class ConditionFailed(Exception):
    """The object exists (create-if-absent) or changed since it was read (If-Match)."""


class ConditionalWritesUnsupported(Exception):
    """The store ignores or refuses conditional writes."""


def _code(error) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _status(error) -> int:
    return int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


def put_conditional(uri: str, body: bytes, if_match: str | None = None) -> str:
    """PUT ``body`` only if no object is there (``if_match`` None) or only if it still has ETag
    ``if_match``; returns the new ETag, raises ``ConditionFailed`` when the condition does not hold."""
    from botocore.exceptions import ClientError

    bucket, key = bucket_key(uri)
    condition = {"IfMatch": if_match} if if_match else {"IfNoneMatch": "*"}
    try:
        return client().put_object(Bucket=bucket, Key=key, Body=body, **condition)["ETag"]
    except ClientError as error:
        if _status(error) in (409, 412) or _code(error) in ("PreconditionFailed", "ConditionalRequestConflict"):
            raise ConditionFailed(uri) from None
        if _status(error) == 501 or _code(error) == "NotImplemented":
            raise ConditionalWritesUnsupported(uri) from None
        raise


def get_tagged(uri: str) -> Tagged | None:
    """The object with its ETag and age, or None when there is none."""
    from botocore.exceptions import ClientError

    bucket, key = bucket_key(uri)
    try:
        reply = client().get_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if _status(error) == 404 or _code(error) in ("NoSuchKey", "404"):
            return None
        raise
    body = reply["Body"].read()
    date = reply.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get("date")
    now = parsedate_to_datetime(date) if date else None
    age = (now - reply["LastModified"]).total_seconds() if now else 0.0
    return Tagged(body, reply["ETag"], max(age, 0.0))


def delete_if_match(uri: str, etag: str) -> None:
    """Remove the object if it still has ``etag`` (a lock taken over since is left to its new holder)."""
    from botocore.exceptions import ClientError

    bucket, key = bucket_key(uri)
    try:
        client().delete_object(Bucket=bucket, Key=key, IfMatch=etag)
    except ClientError as error:
        if _status(error) not in (404, 412) and _code(error) not in ("PreconditionFailed", "NoSuchKey"):
            raise
