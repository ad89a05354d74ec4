"""A moto S3 server on 127.0.0.1 for the benchmarks and the fault campaign, which run outside pytest
(tests/conftest.py's ``s3`` fixture is the tests' own)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from tests.loopback import free_port


def s3_env(port: int) -> dict[str, str]:
    """The AWS_* variables that send every S3 client of the project to 127.0.0.1:``port``, with 4 attempts
    a request (the tests' faults come 1 to 3 in a row; an outage outlasts them sooner than 8 would)."""
    return {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_MAX_ATTEMPTS": "4",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def wait_for_port(port: int, process: subprocess.Popen | None = None, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server for port {port} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout:g} s")


@contextmanager
def moto_server(buckets: tuple[str, ...] = ("hades",)):
    """Yields the port of a fresh moto server holding empty ``buckets``; stopped at the end."""
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_for_port(port, server)
        import boto3

        env = s3_env(port)
        client = boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        for bucket in buckets:
            client.create_bucket(Bucket=bucket)
        yield port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
