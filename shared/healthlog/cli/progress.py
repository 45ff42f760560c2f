"""A progress line for long commands, on a terminal only.

``Progress(label, unit, enabled=...)`` redraws one line on stderr, at most ten times a
second: the count, the total and share when known, and the rate
(``replay: 120/400 deliveries (30%), 41/s``). It is ``enabled`` only when a person is
watching (``shown_to_person``: stdout and stderr are terminals and ``--json`` was not
asked for), so a script, a pipe or a log file never gets one. ``done()``, or the end of
a ``with`` block, clears the line.

The work reports through ``update(done, total)``, the callback ``replay`` and
``reconcile`` take, or ``wrap`` counts the items of an iterable as they pass.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO, TypeVar

T = TypeVar("T")

#: the shortest time between two redraws, seconds
REDRAW_S = 0.1


def shown_to_person(json_output: bool = False) -> bool:
    """Whether a progress line would be read: both streams a terminal, no --json."""
    return not json_output and sys.stdout.isatty() and sys.stderr.isatty()


class Progress:
    """One progress line; every method is a no-op when not ``enabled``."""

    def __init__(
        self,
        label: str,
        unit: str,
        *,
        enabled: bool,
        total: int | None = None,
        stream: IO[str] | None = None,
    ) -> None:
        self.label = label
        self.unit = unit
        self.enabled = enabled
        self.total = total
        self.count = 0
        self._stream = stream if stream is not None else sys.stderr
        self._started = time.monotonic()
        self._drawn = 0.0
        self._width = 0

    def update(self, done: int, total: int | None = None) -> None:
        """``done`` items so far (of ``total``, when it is known)."""
        self.count = done
        if total is not None:
            self.total = total
        now = time.monotonic()
        if self.enabled and (now - self._drawn >= REDRAW_S or done == self.total):
            self._drawn = now
            self._draw(self.line(now))

    def advance(self, n: int = 1) -> None:
        self.update(self.count + n)

    def wrap(self, items: Iterable[T]) -> Iterator[T]:
        """``items``, counted as they pass (the line looked at every 256th, and at the end)."""
        if not self.enabled:
            for item in items:
                self.count += 1
                yield item
            return
        for n, item in enumerate(items, self.count + 1):
            yield item
            if not n & 0xFF:
                self.update(n)
            else:
                self.count = n
        self.update(self.count)

    def line(self, now: float | None = None) -> str:
        """The text of the progress line as it stands."""
        elapsed = (time.monotonic() if now is None else now) - self._started
        rate = self.count / elapsed if elapsed > 0 else 0.0
        of = f"/{self.total:,}" if self.total is not None else ""
        share = f" ({self.count / self.total:.0%})" if self.total else ""
        shown_rate = f"{rate:,.0f}" if rate >= 10 else f"{rate:.1f}"
        return f"{self.label}: {self.count:,}{of} {self.unit}{share}, {shown_rate}/s"

    def _draw(self, text: str) -> None:
        pad = max(0, self._width - len(text))
        self._stream.write("\r" + text + " " * pad)
        self._stream.flush()
        self._width = len(text)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.done()

    def done(self) -> None:
        """Clear the line (the command's own output follows)."""
        if self.enabled and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0
