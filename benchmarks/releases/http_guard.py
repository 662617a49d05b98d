"""Guards on a release download over HTTP (issue 26, item 4): credentials in a mirror URL
never shown, no redirect to another origin, and an overall deadline per file.

- :func:`redact_url`: ``scheme://user:password@host`` in any text becomes
  ``scheme://[redacted]@host`` (every message, log line and the fetch record pass it).
- :class:`DownloadGuard`: a ``requests`` response hook that refuses a redirect whose target
  has another scheme, host or port than the URL asked for (before it is followed), and a
  watchdog that shuts the connection's socket down when the file's deadline passes, so a
  server that trickles bytes (each read within the socket timeout) cannot hold a fetch
  open; either is one :class:`~voirdire.core.DataError` line.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from urllib.parse import urljoin, urlsplit

from voirdire.core import DataError

#: default seconds one file's download may take, from its request to its last byte
#: (``voirdire data fetch --deadline``)
DEFAULT_DEADLINE = 600.0

_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@]*@")


def redact_url(text: str) -> str:
    """``text`` with the user and password of every URL replaced by ``[redacted]``."""
    return _CREDENTIALS.sub(r"\1[redacted]@", text)


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of a URL, the port defaulted by the scheme."""
    u = urlsplit(url)
    port = u.port or {"http": 80, "https": 443}.get(u.scheme.lower())
    return u.scheme.lower(), (u.hostname or "").lower(), port


class DownloadGuard:
    """One file's download: the origin it may be served from and its deadline.

    Args:
        url: the URL asked for (its origin is the only one a redirect may go to).
        name: the release path, for messages.
        deadline: seconds from :meth:`start` until the download is cut off.
    """

    def __init__(self, url: str, name: str, deadline: float) -> None:
        self.origin, self.name, self.deadline = origin(url), name, float(deadline)
        self.expired = False
        self._timers: list[threading.Timer] = []
        self._t0 = time.monotonic()

    def start(self) -> None:
        """Start the clock (before the request is sent)."""
        self._t0, self.expired = time.monotonic(), False

    def remaining(self) -> float:
        """Seconds left before the deadline (at least a millisecond)."""
        return max(self.deadline - (time.monotonic() - self._t0), 0.001)

    def hook(self, response, *args, **kwargs):
        """``requests`` response hook: refuse a cross-origin redirect; arm the watchdog."""
        if response.is_redirect:
            target = urljoin(response.url, response.headers.get("location", ""))
            if origin(target) != self.origin:
                scheme, host, port = origin(target)
                raise DataError(
                    f"{self.name}: the mirror redirected to another origin "
                    f"({scheme}://{host}:{port}); refused, nothing was written"
                )
        self._arm(response)
        return response

    def _arm(self, response) -> None:
        raw = response.raw

        def cut() -> None:
            self.expired = True
            try:  # urllib3 >= 2.3: shut the socket for reading, from another thread
                raw.shutdown()
            except (AttributeError, ValueError, RuntimeError, OSError):
                conn = getattr(raw, "_connection", None)
                sock = getattr(conn, "sock", None)
                if sock is not None:
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass

        timer = threading.Timer(self.remaining(), cut)
        timer.daemon = True
        timer.start()
        self._timers.append(timer)

    def check(self) -> None:
        """Raises DataError once the deadline has passed."""
        if self.expired or time.monotonic() - self._t0 > self.deadline:
            self.expired = True
            raise self.error()

    def error(self) -> DataError:
        """The deadline's one-line error."""
        return DataError(
            f"{self.name}: the download took longer than {self.deadline:g} s "
            "(the per-file deadline, --deadline); cut off, nothing was written"
        )

    def stop(self) -> None:
        """Cancel the watchdogs."""
        for t in self._timers:
            t.cancel()
        self._timers.clear()
