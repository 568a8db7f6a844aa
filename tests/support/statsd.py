"""A StatsD listener on 127.0.0.1 (UDP) that keeps every metric line it receives, for the deployment's tests."""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class StatsdLine:
    """``name:value|type`` as StatsD sends it (``g`` gauge, ``c`` counter, ``ms`` timer)."""

    name: str
    value: float
    kind: str

    @classmethod
    def parse(cls, line: str) -> StatsdLine | None:
        name, _, rest = line.partition(":")
        value, _, kind = rest.partition("|")
        try:
            return cls(name, float(value), kind.split("|")[0])
        except ValueError:
            return None


class StatsdListener:
    """Receives on ``host:port`` from :meth:`__enter__` to :meth:`__exit__`; :meth:`wait_for` reads what came."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.lines: list[StatsdLine] = []
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._receive, daemon=True)

    def __enter__(self) -> StatsdListener:
        self._socket.bind((self.host, self.port))
        self._socket.settimeout(0.2)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._socket.close()

    def _receive(self) -> None:
        while not self._stop.is_set():
            try:
                packet = self._socket.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                return
            self.lines += [parsed for line in packet.decode(errors="replace").splitlines()
                           if (parsed := StatsdLine.parse(line)) is not None]

    def latest(self, prefix: str) -> dict[str, StatsdLine]:
        """The last line received of each name starting with ``prefix``."""
        return {line.name: line for line in list(self.lines) if line.name.startswith(prefix)}

    def wait_for(self, name: str, timeout_s: float = 60) -> StatsdLine:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if found := self.latest(name).get(name):
                return found
            time.sleep(0.2)
        seen = sorted({line.name for line in self.lines})
        raise AssertionError(f"no StatsD line {name!r} within {timeout_s} s; received {len(seen)} names: {seen[:60]}")
