"""The dashboard's Flask app: security headers, the account in view, sign-in, the pages.

The account a request sees:

* with sign-in (``require_sign_in``, implied by binding beyond loopback): the account
  whose token was typed into the sign-in form, kept in a signed session cookie
  (HttpOnly, SameSite=Strict, Secure over TLS or with ``secure_cookies``) whose key is
  random per process, so a restart signs everyone out. Without a session, a page
  redirects to ``/sign-in`` and the API answers 401;
* without sign-in (127.0.0.1, the operator's own machine): the account ``account_name``
  names, else the journal's only account, else the one named by ``?account=NAME`` (the
  account selector); with several and none named, the API answers 400 saying so.
"""

from __future__ import annotations

import functools
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from flask import Flask, Response, g, redirect, render_template, request, url_for
from itsdangerous import BadSignature, URLSafeTimedSerializer
from werkzeug.exceptions import HTTPException

from healthlog import log, overlap, reads, tokens
from healthlog.archive.port import Archive
from healthlog.errors import PLOTLY_MISSING, plotly_missing
from healthlog.journal.port import Journal
from healthlog.model import Account

logger = logging.getLogger("healthlog.dashboard")

HERE = Path(__file__).resolve().parent
SESSION_COOKIE = "healthlog_session"
SESSION_MAX_AGE_S = 12 * 3600

#: only the dashboard itself: no CDN, no inline script, no request to another host
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)


@dataclass(frozen=True)
class DashboardOptions:
    account_name: str | None = None  # show only this account
    require_sign_in: bool = False
    secure_cookies: bool = False  # Secure cookies even over plain HTTP (behind a TLS proxy)
    # which source counts first where samples overlap (HEALTHLOG_SOURCE_PRIORITY)
    priority: overlap.SourcePriority = overlap.DEFAULT


#: the pages that draw charts, and so load plotly.js
CHART_PAGES = frozenset({"metric", "records", "sleep", "workout"})


class DashboardError(Exception):
    """A request the dashboard answers with ``status`` and a readable message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


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


def create_app(
    journal: Journal, archive: Archive, options: DashboardOptions | None = None
) -> Flask:
    """The dashboard over ``journal`` (migrated) and ``archive``."""
    options = options or DashboardOptions()
    app = Flask(
        "healthlog.dashboard",
        template_folder=str(HERE / "templates"),
        static_folder=str(HERE / "static"),
        static_url_path="/static",
    )
    app.config["PROPAGATE_EXCEPTIONS"] = False
    app.config["MAX_CONTENT_LENGTH"] = 64 * 1024  # the sign-in form is all that is posted
    app.extensions["healthlog"] = {"journal": journal, "archive": archive, "options": options}

    @app.template_global()
    def in_view(path: str) -> str:
        """``path`` with the ``?account=`` this page was asked with, so that every link of
        a page (its navigation, an error page's way back) stays on the account in view."""
        chosen = request.args.get("account")
        return path if not chosen else f"{path}?{urlencode({'account': chosen})}"

    # a random key per process: sessions end with the process, no key to keep or leak
    signer = URLSafeTimedSerializer(secrets.token_bytes(32), salt="healthlog-dashboard")

    @app.before_request
    def _started() -> Any:
        g.started = time.monotonic()
        # without sign-in the dashboard trusts whoever reaches 127.0.0.1; a web page the
        # browser is showing could reach it too through a name it points at 127.0.0.1
        # (DNS rebinding), so only requests addressed to a loopback name are served
        if not options.require_sign_in and _hostname(request.host) not in LOOPBACK_NAMES:
            return _error(421, "this dashboard answers only at 127.0.0.1, localhost or [::1]")
        # a page of another site may point an <img> or a fetch at the API (each a heavy
        # read); browsers mark such a request, and it is refused unread
        if request.path.startswith("/api/") and request.headers.get("Sec-Fetch-Site") in (
            "cross-site",
            "same-site",
        ):
            return _error(403, "the dashboard's API answers its own pages only")
        return None

    @app.after_request
    def _headers(response: Response) -> Response:
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        if request.path.startswith("/api/") or request.endpoint in ("sign_in", "sign_out"):
            response.headers["Cache-Control"] = "no-store"
        # the route's pattern, never its values (a metric, a source, a token)
        log.event(
            logger,
            logging.DEBUG,
            "dashboard.request",
            method=request.method,
            route=request.url_rule.rule if request.url_rule else None,
            status=response.status_code,
            ms=round((time.monotonic() - g.get("started", time.monotonic())) * 1000, 1),
        )
        return response

    @app.errorhandler(DashboardError)
    def _dashboard_error(exc: DashboardError) -> Any:
        return _error(exc.status, exc.message)

    @app.errorhandler(reads.UnknownName)
    @app.errorhandler(reads.NotFound)
    def _not_found(exc: Exception) -> Any:
        return _error(404, str(exc))

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> Any:
        return _error(exc.code or 500, exc.description or exc.name)

    @app.errorhandler(Exception)
    def _failure(exc: Exception) -> Any:
        # the type only: a message may quote what it choked on; never a traceback
        log.event(logger, logging.ERROR, "dashboard.failed", error=type(exc).__name__)
        return _error(500, "the dashboard failed to read this; see its log for the error type")

    # --- the account in view --------------------------------------------------------

    def session_account() -> Account | None:
        raw = request.cookies.get(SESSION_COOKIE)
        if not raw:
            return None
        try:
            account_id = signer.loads(raw, max_age=SESSION_MAX_AGE_S)
        except BadSignature:
            return None
        if not isinstance(account_id, str):
            return None
        return journal.get_account(account_id)

    def allowed(account: Account) -> bool:
        return options.account_name is None or account.name == options.account_name

    def current_account() -> Account:
        """The account this request sees; DashboardError (401/400/404) if none."""
        if options.require_sign_in:
            account = session_account()
            if account is None or not allowed(account):
                raise DashboardError(401, "sign in with your account's token first")
            return account
        accounts = journal.accounts()
        wanted = options.account_name or request.args.get("account") or None
        if wanted is not None:
            for account in accounts:
                if account.name == wanted:
                    return account
            raise DashboardError(404, f"no account named {wanted!r}")
        if len(accounts) == 1:
            return accounts[0]
        if not accounts:
            raise DashboardError(404, "no accounts yet: `healthlog account add NAME` makes one")
        raise DashboardError(
            400, "this journal has several accounts: choose one (?account=NAME) in the selector"
        )

    app.extensions["healthlog"]["current_account"] = current_account
    app.extensions["healthlog"]["session_account"] = session_account

    # --- sign-in --------------------------------------------------------------------

    @app.get("/sign-in")
    def sign_in_form() -> Any:
        if not options.require_sign_in:
            return redirect(url_for("overview"))
        return render_template("sign_in.html", page="sign-in", title="Sign in", error=None)

    failures = SignInFailures()

    @app.post("/sign-in")
    def sign_in() -> Any:
        if not options.require_sign_in:
            return redirect(url_for("overview"))
        client = request.remote_addr or "-"
        wait_s = failures.wait_s(client)
        if wait_s:
            log.event(logger, logging.WARNING, "dashboard.sign_in_throttled", client=client)
            told = f"Too many refused sign-ins from here: try again in {wait_s // 60 + 1} min."
            html = render_template("sign_in.html", page="sign-in", title="Sign in", error=told)
            reply = Response(html, status=429, mimetype="text/html")
            reply.headers["Retry-After"] = str(wait_s)
            return reply
        token = (request.form.get("token") or "").strip()
        account = journal.account_by_token_hash(tokens.hash_token(token)) if token else None
        if account is None or not allowed(account):
            failures.add(client)
            log.event(logger, logging.INFO, "dashboard.sign_in_refused", client=client)
            # the token is not repeated: it may be a real one, mistyped
            refused = "No account has this token."
            html = render_template("sign_in.html", page="sign-in", title="Sign in", error=refused)
            return Response(html, status=401, mimetype="text/html")
        failures.clear(client)
        log.event(logger, logging.INFO, "dashboard.signed_in", account_id=account.id)
        response = redirect(url_for("overview"))
        response.set_cookie(
            SESSION_COOKIE,
            signer.dumps(account.id),
            max_age=SESSION_MAX_AGE_S,
            httponly=True,
            samesite="Strict",
            secure=options.secure_cookies or request.is_secure,
            path="/",
        )
        return response

    @app.post("/sign-out")
    def sign_out() -> Any:
        response = redirect(url_for("sign_in_form") if options.require_sign_in else "/")
        response.delete_cookie(
            SESSION_COOKIE,
            path="/",
            httponly=True,
            samesite="Strict",
            secure=options.secure_cookies or request.is_secure,
        )
        return response

    # --- pages: a template each, drawn by its JS from the API -------------------------

    def page(
        name: str, title: str, check: Callable[[reads.Reads], object] | None = None, **data: str
    ) -> Any:
        """A page, after ``check`` on the account's reads (its UnknownName, NotFound: a 404)."""
        if options.require_sign_in and session_account() is None:
            return redirect(url_for("sign_in_form"))
        if check is not None and (found := page_reads()) is not None:
            check(found)
        # one template for every page: its own JS (js/<page>.js) draws it from the API
        charts = name in CHART_PAGES
        if charts and (missing := plotly_missing()) is not None:
            # no plotly.js to load: the page says what to install, not "Plotly?"
            data = {**data, "charts-missing": missing}
            charts = False
        return render_template(
            "page.html",
            page=name,
            title=title,
            data=data,
            sign_in=options.require_sign_in,
            charts=charts,
        )

    def page_reads() -> reads.Reads | None:
        """The reads of the account in view, or None when the page's JS should say why."""
        try:
            return reads.Reads(journal, current_account(), options.priority)
        except DashboardError as exc:
            if exc.status == 401:
                raise
            return None

    @app.get("/")
    def overview() -> Any:
        return page("overview", "Overview")

    @app.get("/coverage")
    def coverage() -> Any:
        return page("coverage", "Coverage")

    @app.get("/metrics")
    def metrics() -> Any:
        return page("metrics", "Metrics")

    @app.get("/metrics/<path:metric>")  # a posted name may hold a /
    def metric(metric: str) -> Any:
        # UnknownName: a 404 page naming the nearest
        return page("metric", metric, lambda r: r.metric_fields(metric), metric=metric)

    @app.get("/sleep")
    def sleep() -> Any:
        return page("sleep", "Sleep")

    @app.get("/workouts")
    def workouts() -> Any:
        return page("workouts", "Workouts")

    @app.get("/workouts/<path:identity>")
    def workout(identity: str) -> Any:
        return page("workout", "Workout", lambda r: r.workout(identity), identity=identity)

    @app.get("/records")
    def records() -> Any:
        return page("records", "Records")

    @app.get("/deliveries")
    def deliveries() -> Any:
        return page("deliveries", "Deliveries")

    @app.get("/deliveries/<delivery_id>")
    def delivery(delivery_id: str) -> Any:
        return page("delivery", "Delivery", lambda r: r.delivery(delivery_id), delivery=delivery_id)

    @app.get("/static/vendor/plotly.min.js")
    def plotly_js() -> Any:
        try:
            script = _plotly_js()
        except ImportError:  # installed without the extra: say what to install, not a 500
            return Response(PLOTLY_MISSING + "\n", status=503, mimetype="text/plain")
        return Response(
            script, mimetype="text/javascript", headers={"Cache-Control": "max-age=86400"}
        )

    from healthlog.dashboard.api import api

    app.register_blueprint(api)
    return app


LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


def _hostname(host: str) -> str:
    """The name in a Host header, without its port (``[::1]:8082`` -> ``::1``)."""
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@functools.cache
def _plotly_js() -> bytes:
    """plotly.js as the installed plotly package ships it (read once)."""
    from importlib import resources

    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()


def _error(status: int, message: str) -> Any:
    """A readable error: JSON for the API, a page for a person; never a traceback."""
    if request.path.startswith("/api/"):
        return {"error": message, "status": status}, status
    html = render_template(
        "error.html", page="error", title="Error", status=status, message=message
    )
    return Response(html, status=status, mimetype="text/html")
