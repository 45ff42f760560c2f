"""The dashboard's sign-in: its sessions, its refused tries, the requests it takes.

``Sessions`` are the signed-in sessions (a random id each, what the cookie carries, and
the token hash each signed in with, so a rotation ends it); ``SignInFailures`` counts the
refused sign-ins per client address; ``from_another_site`` is the rule that a sign-in or
sign-out is taken from the dashboard's own pages only, and ``LOOPBACK_NAMES`` the names a
dashboard without sign-in answers at (``_hostname``: against DNS rebinding).
``app.create_app`` wires them into the sign-in routes and every request.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from flask import request

SESSION_COOKIE = "healthlog_session"
#: the cookie's name over TLS (or with ``secure_cookies``): a browser keeps a ``__Host-``
#: cookie only when it is Secure, for path /, with no Domain (docs/security.md)
SECURE_SESSION_COOKIE = "__Host-" + SESSION_COOKIE
SESSION_MAX_AGE_S = 12 * 3600
#: the most sessions kept at once; past it a new sign-in ends the oldest session
SESSIONS_MAX = 1000

#: refused sign-ins from one client address within the window before it must wait
SIGN_IN_FAILURES = 5
SIGN_IN_WINDOW_S = 15 * 60


class SignInFailures:
    """Refused sign-ins per client address, in memory: after ``SIGN_IN_FAILURES`` in
    ``SIGN_IN_WINDOW_S`` the address waits until the oldest leaves the window (a 429,
    answered at once: no thread is held to slow a guesser down)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: dict[str, list[float]] = {}

    def _recent(self, client: str, now: float) -> list[float]:
        recent = [t for t in self._seen.get(client, []) if now - t < SIGN_IN_WINDOW_S]
        if recent:
            self._seen[client] = recent
        else:
            self._seen.pop(client, None)
        return recent

    def wait_s(self, client: str) -> int:
        """Seconds ``client`` must wait before trying again; 0: it may try now."""
        with self._lock:
            now = self._clock()
            recent = self._recent(client, now)
            if len(recent) < SIGN_IN_FAILURES:
                return 0
            return int(SIGN_IN_WINDOW_S - (now - recent[0])) + 1

    def add(self, client: str) -> None:
        with self._lock:
            now = self._clock()
            self._seen[client] = [*self._recent(client, now), now]

    def clear(self, client: str) -> None:
        with self._lock:
            self._seen.pop(client, None)


@dataclass(frozen=True, slots=True)
class Session:
    """One sign-in: whose, with which token (its hash), and when (the store's clock)."""

    account_id: str
    token_hash: str  # the account's token hash at sign-in: a rotation ends the session
    started: float


class Sessions:
    """The signed-in sessions, in memory: a random id each (what the cookie carries).

    A session ends when it is ``end``-ed (sign-out), ``SESSION_MAX_AGE_S`` after it
    started, or, with ``limit`` sessions kept, when a newer sign-in needs its place (the
    oldest goes first); all of them end with the process.
    """

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, limit: int = SESSIONS_MAX
    ) -> None:
        self._clock = clock
        self._limit = limit
        self._lock = threading.Lock()
        self._by_id: dict[str, Session] = {}  # oldest first: the order they started in

    def _expire(self, now: float) -> None:
        while self._by_id:
            oldest = next(iter(self._by_id))
            if now - self._by_id[oldest].started < SESSION_MAX_AGE_S:
                return
            del self._by_id[oldest]

    def start(self, account_id: str, token_hash: str) -> str:
        """A new session's id: 256 random bits, never one given before."""
        session_id = secrets.token_urlsafe(32)
        with self._lock:
            now = self._clock()
            self._expire(now)
            while len(self._by_id) >= self._limit:
                del self._by_id[next(iter(self._by_id))]
            self._by_id[session_id] = Session(account_id, token_hash, now)
        return session_id

    def get(self, session_id: str) -> Session | None:
        """The session with this id, if it has not ended."""
        with self._lock:
            self._expire(self._clock())
            return self._by_id.get(session_id)

    def end(self, session_id: str) -> None:
        with self._lock:
            self._by_id.pop(session_id, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_id)


#: what a sign-in or sign-out that another site's page sent is told (a 403)
FOREIGN_FORM = (
    "Sign-in and sign-out are taken only from this dashboard's own pages; this request "
    "came from another site's page, so it was not read. Open the dashboard and use its form."
)
#: what a token in a sign-in's URL is told (a 400): it is never read
NOT_FROM_A_URL = (
    "A token is never taken from a URL, so this one was not read: an address stays in the "
    "browser's history and in proxies' logs. Sign in with the form; if the token in the "
    "address was a real one, `healthlog account rotate NAME` replaces it."
)


def from_another_site() -> bool:
    """Whether the browser says that a page of another origin sent this request.

    ``Sec-Fetch-Site`` when the browser sends it (every current one does): only
    ``same-origin`` (and ``none``, a request the user typed) are the dashboard's own. A
    browser without it still sends ``Origin`` with a POST: it must name this host (an
    opaque ``null`` does not). A request with neither is a script's (curl), not a page's.
    """
    site = request.headers.get("Sec-Fetch-Site")
    if site is not None:
        return site not in ("same-origin", "none")
    origin = request.headers.get("Origin")
    if origin is None:
        return False
    return urlsplit(origin).netloc.lower() != request.host.lower()


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def _hostname(host: str) -> str:
    """The name in a Host header, without its port (``[::1]:8082`` -> ``::1``)."""
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host
