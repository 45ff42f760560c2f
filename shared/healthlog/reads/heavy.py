"""At most a few heavy reads at a time in one process, and a clear "busy" beyond them.

A heavy read is one whose cost grows with the data it covers: a series, a day a row,
coverage, the MCP SQL tool. Each is bounded on its own (``reads.TooHeavy`` refuses a
series of more buckets than one read gives, before it starts), and a ``Gate`` bounds how
many run at once, so eight at once cannot take eight times the memory and every core.
A read that finds no slot within ``wait_s`` gets ``Busy`` (the dashboard's 503 with
``Retry-After``, the MCP tool's error), never a wait behind all the others; one whose
client went away is not begun (``Gone``). docs/security.md,
"Limits".
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from healthlog.errors import HealthlogError

#: heavy reads at once in one dashboard or MCP server: the machine's two cores
SLOTS = 2
#: how long a heavy read waits for a slot before it is told the server is busy
WAIT_S = 2.0
#: what a busy answer asks the client to wait before it asks again, in seconds
RETRY_AFTER_S = 2


class Busy(HealthlogError):
    """Every slot for heavy reads is taken: ask again in a moment."""

    exit_status = 1


class Gone(HealthlogError):
    """The client that asked went away before its heavy read began: it is not begun."""


#: how often a read waiting for a slot looks whether its client is still there, seconds
_LOOK_S = 0.05


def _never() -> bool:
    return False


class Gate:
    """``slots`` heavy reads at a time; ``with gate.slot():`` around each.

    ``gone``, when given, tells whether the client of the read in hand has gone away
    (the dashboard looks at its connection): a read whose client is gone stops waiting
    for a slot, and is not begun (``Gone``), so a page closed or a script stopped does
    not leave its work behind to hold a slot.
    """

    def __init__(
        self, slots: int = SLOTS, wait_s: float = WAIT_S, gone: Callable[[], bool] = _never
    ) -> None:
        self.slots = max(1, slots)
        self.wait_s = wait_s
        self.gone = gone
        self._free = threading.BoundedSemaphore(self.slots)

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        deadline = time.monotonic() + self.wait_s
        while not self._free.acquire(timeout=min(_LOOK_S, max(0.0, deadline - time.monotonic()))):
            if self.gone():
                raise Gone()
            if time.monotonic() >= deadline:
                raise Busy(
                    f"busy: {self.slots} heavy reads are at work; ask again in"
                    f" {RETRY_AFTER_S} s, or ask for less (a shorter range, a coarser"
                    " resolution)"
                )
        try:
            if self.gone():
                raise Gone()
            yield
        finally:
            self._free.release()
