"""Ports for servers the tests start: always on 127.0.0.1, always free at the time of asking."""

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
