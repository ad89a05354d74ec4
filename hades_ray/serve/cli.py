"""``hades-ray serve``: keep a detector loaded behind an HTTP API (Ray Serve) until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
import sys
import threading

from hades_ray.cli_common import add_config_args, add_detector_arg, add_key_flag, add_key_flags, config_from_args

APP_NAME = "hades"


def _check_port_free(host: str, port: int) -> None:
    """A port in use is a one-line error here, not a proxy that never comes up."""
    from hades_ray.errors import UserError

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:
            probe.bind((host, port))
        except OSError as error:
            reason = "is in use" if error.errno == errno.EADDRINUSE else f"cannot be bound ({error.strerror})"
            raise UserError(f"{host}:{port} {reason}; pick another with --port (or --host)") from None


def _stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT. Installed right after Ray starts: Ray's own handler aborts the
    process, so a SIGTERM that arrives while the application is still deploying must find ours."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def _serve(args: argparse.Namespace) -> int:
    from hades_ray.detect.detector import Detector
    from hades_ray.ray_runtime import init_ray

    config = config_from_args(args, resolve=False)
    s = config.serve
    Detector.open(args.model).scoring_mode(config.score.mode)  # a bad folder fails before Ray starts
    _check_port_free(s.host, s.port)
    own_cluster = not (config.ray.address or os.environ.get("RAY_ADDRESS"))
    ray = init_ray(config.ray.address, config.ray.num_cpus)
    stop = _stop_on_signals()
    from ray import serve

    from hades_ray.serve.app import service_app

    try:
        serve.start(http_options={"host": s.host, "port": s.port})
        serve.run(service_app(args.model, config), name=APP_NAME, route_prefix="/")
        auth = "bearer token required" if s.bearer_token() else "no token (set HADES_SERVE_TOKEN to require one)"
        print(f"serving {args.model} at http://{s.host}:{s.port}/ (API: /docs; {auth}); SIGTERM or Ctrl-C stops it")
        sys.stdout.flush()
        while not stop.wait(1.0):
            pass
    finally:
        # A private cluster goes with its Serve; on a shared one only this application is removed.
        if own_cluster:
            serve.shutdown()
        else:
            serve.delete(APP_NAME)
        ray.shutdown()
    print("stopped")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("serve", help="serve a trained detector over HTTP (Ray Serve) until stopped")
    add_detector_arg(parser)
    add_key_flags(parser, "serve", "host", "port", "max_replicas", "num_gpus")
    add_key_flag(parser, "language")  # the requests' default (en, the config's default, yields to the detector's)
    add_config_args(parser)
    parser.set_defaults(func=_serve)
