"""The PostgreSQL adapter's connection pool: bounded, each connection one thread's at a time.

Idle connections are kept (up to ``keep``) because opening one costs about a hundred
statements; at most ``size`` are open at once, and a caller that waits ``wait_s`` for
one gets ``JournalBusy``. ``postgres.py`` ("Connections") says why.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import TupleRow

from healthlog import errors

Conn = psycopg.Connection[TupleRow]


@dataclass(frozen=True, slots=True)
class Lease:
    conn: Conn
    #: it came from the idle list (and may have been dropped by the server meanwhile)
    reused: bool


class Pool:
    """Idle connections, each handed to one thread at a time; at most ``size`` open."""

    def __init__(self, connect: Callable[[], Conn], keep: int, size: int, wait_s: float):
        self._connect = connect
        self._keep = keep
        self._wait_s = wait_s
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[Conn] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def connection(self) -> Iterator[Lease]:
        if not self._slots.acquire(timeout=self._wait_s):
            raise errors.JournalBusy("every journal connection stayed in use")
        try:
            with self._lock:
                if self._closed:
                    raise errors.JournalUnavailable("the journal is closed")
                conn = self._idle.pop() if self._idle else None
            lease = Lease(self._connect(), False) if conn is None else Lease(conn, True)
            try:
                yield lease
            finally:
                self._give_back(lease.conn)
        finally:
            self._slots.release()

    def _give_back(self, conn: Conn) -> None:
        if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
            try:
                conn.rollback()
            except psycopg.Error:
                conn.close()
        with self._lock:
            if not conn.closed and not self._closed and len(self._idle) < self._keep:
                self._idle.append(conn)
                return
        conn.close()

    def drop_idle(self) -> None:
        """Close the idle connections: after one was found dead, the rest likely are."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.drop_idle()
