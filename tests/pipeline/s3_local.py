"""A moto S3 server on 127.0.0.1: ``start_moto`` for tests/conftest.py's ``s3`` fixture, ``moto_server``
for the benchmarks and the fault campaign, which run outside pytest. ``python -m tests.pipeline.s3_local
--port P`` is the server itself: moto's S3 with its writes one at a time, since moto 5 checks a
conditional write's If-Match / If-None-Match and then writes, unlocked, on a threaded server (two takers
of a stale lock could both pass the same ETag's check), where S3 does both at once."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
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


def start_moto(port: int) -> subprocess.Popen:
    """This module's server on 127.0.0.1:``port``, in a session of its own (stop it with ``os.killpg``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.pipeline.s3_local", "--port", str(port)],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


@contextmanager
def moto_server(buckets: tuple[str, ...] = ("hades",)):
    """Yields the port of a fresh moto server holding empty ``buckets``; stopped at the end."""
    port = free_port()
    server = start_moto(port)
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


def serve(port: int) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import run_simple

    os.environ.setdefault("MOTO_PORT", str(port))
    app, writes = DomainDispatcherApplication(create_backend_app), threading.Lock()

    def one_write_at_a_time(environ, start_response):
        if environ["REQUEST_METHOD"] in ("PUT", "POST", "DELETE"):
            with writes:  # the condition's check and the write as one step, as S3 makes them
                return list(app(environ, start_response))
        return app(environ, start_response)

    run_simple("127.0.0.1", port, one_write_at_a_time, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True, help="the port on 127.0.0.1 to serve S3 on")
    serve(parser.parse_args().port)
