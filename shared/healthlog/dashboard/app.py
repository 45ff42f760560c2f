"""The dashboard's Flask app: security headers, the account in view, sign-in, the pages.

The account a request sees:

* with sign-in (``require_sign_in``, implied by binding beyond loopback): the account
  whose token was typed into the sign-in form (a POST from the dashboard's own page;
  never a token in a URL). Each sign-in starts a session of its own in this process
  (``sign_in.Sessions``): the cookie (HttpOnly, SameSite=Strict; ``__Host-`` and Secure over TLS
  or with ``secure_cookies``) carries only its random id, signed with a key random per
  process. A session ends at sign-out, when the account's token is rotated (it keeps
  the token hash it signed in with, and each request looks that hash up), after
  ``SESSION_MAX_AGE_S``, or when the process ends. Without a session, a page redirects
  to ``/sign-in`` and the API answers 401;
* without sign-in (127.0.0.1, the operator's own machine): the account ``account_name``
  names, else the journal's only account, else the one named by ``?account=NAME`` (the
  account selector); with several and none named, the API answers 400 saying so.
"""

from __future__ import annotations

import functools
import logging
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from flask import (
    Flask,
    Response,
    g,
    has_request_context,
    redirect,
    render_template,
    request,
    url_for,
)
from itsdangerous import BadSignature, URLSafeTimedSerializer
from werkzeug.exceptions import HTTPException

from healthlog import log, priority, reads, tokens
from healthlog.archive.port import Archive
from healthlog.config import Settings
from healthlog.dashboard.api import api
from healthlog.dashboard.errors import DashboardError
from healthlog.dashboard.sign_in import (
    FOREIGN_FORM,
    LOOPBACK_NAMES,
    NOT_FROM_A_URL,
    SECURE_SESSION_COOKIE,
    SESSION_COOKIE,
    SESSION_MAX_AGE_S,
    Sessions,
    SignInFailures,
    _hostname,
    from_another_site,
)
from healthlog.errors import PLOTLY_MISSING, needs_extra, plotly_missing
from healthlog.journal.port import ShowcaseReads
from healthlog.model import Account
from healthlog.reads import display, heavy

logger = logging.getLogger("healthlog.dashboard")

HERE = Path(__file__).resolve().parent

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
    priority: priority.SourcePriority = priority.DEFAULT
    # heavy reads (series, days, coverage) at once; beyond, a 503 (healthlog.reads.heavy)
    heavy_reads: int = heavy.SLOTS
    # the settings the watch's rules read (thresholds, the local folders): /prometheus
    # says which hold; None leaves them out
    settings: Settings | None = None


#: the pages that draw charts, and so load plotly.js (the summary draws its sparklines as
#: SVG of its own)
CHART_PAGES = frozenset({"metric", "records", "sleep", "workout"})


def create_app(
    journal: ShowcaseReads, archive: Archive, options: DashboardOptions | None = None
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
    app.extensions["healthlog"] = {
        "journal": journal,
        "archive": archive,
        "options": options,
        "heavy": heavy.Gate(options.heavy_reads, gone=_client_gone),
    }

    @app.template_global()
    def in_view(path: str) -> str:
        """``path`` with the ``?account=`` this page was asked with, so that every link of
        a page (its navigation, an error page's way back) stays on the account in view."""
        chosen = request.args.get("account")
        return path if not chosen else f"{path}?{urlencode({'account': chosen})}"

    # a random key per process: sessions end with the process, no key to keep or leak;
    # it signs the session's id, so a made-up cookie is refused before any lookup
    signer = URLSafeTimedSerializer(secrets.token_bytes(32), salt="healthlog-dashboard")
    sessions = Sessions()
    app.extensions["healthlog"]["sessions"] = sessions

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

    @app.errorhandler(reads.TooHeavy)
    def _too_heavy(exc: reads.TooHeavy) -> Any:
        return _error(400, str(exc))

    @app.errorhandler(heavy.Gone)
    def _gone(exc: heavy.Gone) -> Any:
        rule = request.url_rule.rule if request.url_rule else None
        log.event(logger, logging.INFO, "dashboard.client_gone", route=rule)
        return Response(status=499)  # nobody reads it: nginx's "client closed request"

    @app.errorhandler(heavy.Busy)
    def _busy(exc: heavy.Busy) -> Any:
        response = app.make_response(_error(503, str(exc)))
        response.headers["Retry-After"] = str(heavy.RETRY_AFTER_S)
        return response

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

    def secure() -> bool:
        return options.secure_cookies or request.is_secure

    def cookie_name() -> str:
        # over plain HTTP a browser would drop a __Host- cookie (it must be Secure)
        return SECURE_SESSION_COOKIE if secure() else SESSION_COOKIE

    def session_id() -> str | None:
        """The id in this request's session cookie, if the cookie is one we signed."""
        raw = request.cookies.get(cookie_name())
        if not raw:
            return None
        try:
            found = signer.loads(raw, max_age=SESSION_MAX_AGE_S)
        except BadSignature:
            return None
        return found if isinstance(found, str) else None

    def session_account() -> Account | None:
        """The account of this request's session (read once a request), if it has one."""
        if "session_account" not in g:
            g.session_account = _session_account()
        found: Account | None = g.session_account
        return found

    def _session_account() -> Account | None:
        found = session_id()
        session = None if found is None else sessions.get(found)
        if found is None or session is None:
            return None
        # one index lookup: the hash it signed in with still finds its account, or the
        # token was rotated (or the account removed) and the session ends with it
        account = journal.account_by_token_hash(session.token_hash)
        if account is None or account.id != session.account_id:
            sessions.end(found)
            return None
        return account

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

    @app.get("/prometheus")
    def prometheus() -> Any:
        """healthlog's state in Prometheus' text format (dashboard.prometheus): every
        account on loopback, the signed-in one's alone with sign-in."""
        try:
            from prometheus_client import CollectorRegistry, generate_latest

            from healthlog.dashboard.prometheus import CONTENT_TYPE, JournalCollector
        except ImportError:
            raise DashboardError(503, needs_extra("healthlog dashboard", "dashboard")) from None
        alone = options.require_sign_in or options.account_name is not None
        registry = CollectorRegistry(auto_describe=False)
        registry.register(
            JournalCollector(
                journal,
                (lambda: [current_account()]) if alone else journal.accounts,
                whole=not options.require_sign_in,
                settings=options.settings,
            )
        )
        return Response(generate_latest(registry), mimetype=None, content_type=CONTENT_TYPE)

    app.extensions["healthlog"]["session_account"] = session_account

    # --- sign-in --------------------------------------------------------------------

    @app.get("/sign-in")
    def sign_in_form() -> Any:
        if "token" in request.args:
            return _error(400, NOT_FROM_A_URL)
        if not options.require_sign_in:
            return redirect(url_for("summary"))
        return render_template("sign_in.html", page="sign-in", title="Sign in", error=None)

    failures = SignInFailures()

    @app.post("/sign-in")
    def sign_in() -> Any:
        if "token" in request.args:
            return _error(400, NOT_FROM_A_URL)
        # another site's page signing this browser in to an account of its choosing
        if from_another_site():
            log.event(logger, logging.WARNING, "dashboard.sign_in_foreign")
            return _error(403, FOREIGN_FORM)
        if not options.require_sign_in:
            return redirect(url_for("summary"))
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
        token_hash = tokens.hash_token(token)
        account = journal.account_by_token_hash(token_hash) if token else None
        if account is None or not allowed(account):
            failures.add(client)
            log.event(logger, logging.INFO, "dashboard.sign_in_refused", client=client)
            # the token is not repeated: it may be a real one, mistyped
            refused = "No account has this token."
            html = render_template("sign_in.html", page="sign-in", title="Sign in", error=refused)
            return Response(html, status=401, mimetype="text/html")
        failures.clear(client)
        if (before := session_id()) is not None:
            sessions.end(before)  # a sign-in over a session ends it: one cookie, one session
        log.event(logger, logging.INFO, "dashboard.signed_in", account_id=account.id)
        response = redirect(url_for("summary"))
        response.set_cookie(
            cookie_name(),
            signer.dumps(sessions.start(account.id, token_hash)),
            max_age=SESSION_MAX_AGE_S,
            httponly=True,
            samesite="Strict",
            secure=secure(),
            path="/",  # and no Domain: this host only (a __Host- cookie requires both)
        )
        return response

    @app.post("/sign-out")
    def sign_out() -> Any:
        if from_another_site():
            log.event(logger, logging.WARNING, "dashboard.sign_out_foreign")
            return _error(403, FOREIGN_FORM)
        if (found := session_id()) is not None:
            sessions.end(found)  # the cookie's value is no session from now on
        response = redirect(url_for("sign_in_form") if options.require_sign_in else "/")
        response.delete_cookie(
            cookie_name(), path="/", httponly=True, samesite="Strict", secure=secure()
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
    def summary() -> Any:
        """The home page: today and the last 7 days of each metric (reads.summary)."""
        return page("summary", "Summary")

    @app.get("/status")
    def status() -> Any:
        """What ``healthlog status`` says, and the watch's rules that hold."""
        return page("status", "Status")

    @app.get("/coverage")
    def coverage() -> Any:
        return page("coverage", "Coverage")

    @app.get("/metrics")
    def metrics() -> Any:
        return page("metrics", "Metrics")

    @app.get("/metrics/<path:metric>")  # a posted name may hold a /
    def metric(metric: str) -> Any:
        # UnknownName: a 404 page naming the nearest
        title = display.metric_name(metric)  # the JS adds the field and unit
        return page("metric", title, lambda r: r.metric_fields(metric), metric=metric)

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

    app.register_blueprint(api)
    return app


@functools.cache
def _plotly_js() -> bytes:
    """plotly.js as the installed plotly package ships it (read once)."""
    from importlib import resources

    return (resources.files("plotly") / "package_data" / "plotly.min.js").read_bytes()


def _client_gone() -> bool:
    """Whether the client of the request in hand has closed its connection: its socket
    reads as ended (a peek, nothing taken from it). False where the server gives no
    socket (a test client, another WSGI server)."""
    sock = request.environ.get("werkzeug.socket") if has_request_context() else None
    if not isinstance(sock, socket.socket):
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except (BlockingIOError, InterruptedError):
        return False  # nothing to read: still there
    except OSError:
        return True  # reset, or closed under us


def _error(status: int, message: str) -> Any:
    """A readable error: JSON for the API, a page for a person; never a traceback."""
    if request.path.startswith("/api/"):
        return {"error": message, "status": status}, status
    html = render_template(
        "error.html", page="error", title="Error", status=status, message=message
    )
    return Response(html, status=status, mimetype="text/html")
