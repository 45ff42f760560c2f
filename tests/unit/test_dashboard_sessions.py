"""Dashboard sessions that end (Flask's test client over a real SQLite journal).

Each sign-in is a session of its own on the server, and the cookie only its random id:
signing out ends it (the old cookie is a 401 from then on), and so does rotating the
account's token. Sign-in and sign-out are POSTs from the dashboard's own pages: another
site's form is a 403, a token in a URL is never read. Over TLS the cookie is
``__Host-`` and Secure. Through a real server and browser: tests/acceptance/test_dashboard.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from flask.testing import FlaskClient
from healthlog import tokens
from healthlog.archive.local import LocalArchive
from healthlog.dashboard import DashboardOptions, create_app
from healthlog.dashboard.sign_in import (
    SECURE_SESSION_COOKIE,
    SESSION_COOKIE,
    SESSION_MAX_AGE_S,
    Sessions,
)
from healthlog.journal.sqlite import SqliteJournal
from healthlog.ops import accounts
from werkzeug.test import TestResponse

TLS = "https://dash.example"


@dataclass
class Site:
    folder: Path
    alice: str  # alice's token
    bob: str

    def client(self, secure_cookies: bool = False) -> FlaskClient:
        journal = SqliteJournal(str(self.folder / "journal.db"))
        app = create_app(
            journal,
            LocalArchive(self.folder / "archive"),
            DashboardOptions(require_sign_in=True, secure_cookies=secure_cookies),
        )
        app.testing = True
        return app.test_client()


@pytest.fixture
def site(tmp_path: Path) -> Site:
    journal = SqliteJournal(str(tmp_path / "journal.db"))
    journal.migrate()
    alice, bob = tokens.new_token(), tokens.new_token()
    journal.add_account("alice", tokens.hash_token(alice))
    journal.add_account("bob", tokens.hash_token(bob))
    journal.close()
    return Site(tmp_path, alice, bob)


def sign_in(client: FlaskClient, token: str, base_url: str = "http://localhost") -> str:
    """Sign in; the cookie the dashboard set (``name=value``)."""
    reply = client.post("/sign-in", data={"token": token}, base_url=base_url)
    assert reply.status_code == 302, reply.get_data(as_text=True)
    return reply.headers["Set-Cookie"].split(";")[0]


def bare(client: FlaskClient) -> FlaskClient:
    """Another client of the same app (the same sessions) with no cookie of its own:
    what it sends is the ``Cookie`` header a test gives, a value replayed."""
    return client.application.test_client(use_cookies=False)


def who(client: FlaskClient, cookie: str | None = None, base_url: str = "http://localhost") -> int:
    """The status of /api/session: with the client's cookies, or with ``cookie`` only."""
    if cookie is None:
        return client.get("/api/session", base_url=base_url).status_code
    headers = {"Cookie": cookie}
    return bare(client).get("/api/session", headers=headers, base_url=base_url).status_code


def sign_out(
    client: FlaskClient,
    cookie: str,
    base_url: str = "http://localhost",
    headers: dict[str, str] | None = None,
) -> TestResponse:
    """POST /sign-out with ``cookie`` (and ``headers``) only."""
    sent = {**(headers or {}), "Cookie": cookie}
    return bare(client).post("/sign-out", headers=sent, base_url=base_url)


def test_after_sign_out_the_old_cookie_is_no_session(site: Site) -> None:
    client = site.client()
    cookie = sign_in(client, site.alice)
    assert who(client, cookie) == 200
    assert sign_out(client, cookie).status_code == 302
    assert who(client, cookie) == 401  # the value replayed: ended on the server


def test_each_sign_in_is_a_session_of_its_own(site: Site) -> None:
    one = site.client()
    first = sign_in(one, site.alice)
    second = sign_in(one, site.alice)
    third = sign_in(one.application.test_client(), site.alice)  # another browser
    assert len({first, second, third}) == 3
    # a sign-in over a session ends that one; the others go on
    assert who(one, first) == 401
    assert who(one, second) == 200 and who(one, third) == 200
    sign_out(one, second)
    assert who(one, second) == 401
    assert who(one, third) == 200  # signing out one browser leaves another signed in


def test_rotating_the_token_ends_the_accounts_sessions(site: Site) -> None:
    client = site.client()
    # two browsers of alice's, one of bob's
    alices = [sign_in(client.application.test_client(), site.alice) for _ in range(2)]
    bobs = sign_in(client.application.test_client(), site.bob)
    assert [who(client, c) for c in alices] == [200, 200]
    journal = SqliteJournal(str(site.folder / "journal.db"))  # `healthlog account rotate`'s
    try:
        rotated = accounts.rotate(journal, "alice")
    finally:
        journal.close()
    assert [who(client, c) for c in alices] == [401, 401]
    assert who(client, bobs) == 200  # another account's session goes on
    assert client.post("/sign-in", data={"token": site.alice}).status_code == 401
    assert who(client, sign_in(client, rotated.token)) == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://localhost:8080"},  # another port
        {"Sec-Fetch-Site": "cross-site"},  # no Origin, and the browser's marker says so
        {"Origin": "http://evil.example"},  # a browser without Sec-Fetch-Site
        {"Origin": "null"},  # an opaque origin (a sandboxed frame): not ours
    ],
    ids=["cross-site", "another-port", "marker-only", "origin-only", "null-origin"],
)
def test_a_sign_in_or_out_from_another_sites_page_is_refused(
    site: Site, headers: dict[str, str]
) -> None:
    client = site.client()
    reply = client.post("/sign-in", data={"token": site.alice}, headers=headers)
    assert reply.status_code == 403
    text = reply.get_data(as_text=True)
    assert (
        "Sign-in and sign-out are taken only from this dashboard" in text and site.alice not in text
    )
    assert "Set-Cookie" not in reply.headers
    assert who(client) == 401  # no session was made
    cookie = sign_in(client, site.alice)
    out = sign_out(client, cookie, headers=headers)
    assert out.status_code == 403 and "Set-Cookie" not in out.headers
    assert who(client, cookie) == 200  # not signed out


def test_the_dashboards_own_form_and_a_script_sign_in(site: Site) -> None:
    """Its own page (same-origin; Chromium sends Origin: null under no-referrer), a
    browser without the marker naming this host, and curl (neither header)."""
    own: tuple[dict[str, str], ...] = (
        {"Sec-Fetch-Site": "same-origin", "Origin": "null"},
        {"Sec-Fetch-Site": "same-origin", "Origin": "http://localhost"},
        {"Origin": "http://localhost"},
        {},
    )
    for headers in own:
        client = site.client()
        reply = client.post("/sign-in", data={"token": site.alice}, headers=headers)
        assert reply.status_code == 302, headers
        assert who(client) == 200, headers
        assert client.post("/sign-out", headers=headers).status_code == 302, headers
        assert who(client) == 401, headers


def test_a_token_in_a_url_is_never_read(site: Site) -> None:
    client = site.client()
    for reply in (
        client.get(f"/sign-in?token={site.alice}"),
        client.post(f"/sign-in?token={site.alice}"),
        client.post(f"/sign-in?token={site.alice}", data={"token": site.bob}),
    ):
        assert reply.status_code == 400
        text = reply.get_data(as_text=True)
        assert "never taken from a URL" in text and "healthlog account rotate" in text
        assert site.alice not in text and "Set-Cookie" not in reply.headers
        assert who(client) == 401
    assert client.get("/sign-in").status_code == 200  # the form itself


def test_over_tls_the_cookie_is_host_only_and_secure(site: Site) -> None:
    for client, base_url in ((site.client(), TLS), (site.client(secure_cookies=True), None)):
        url = base_url or "http://localhost"
        reply = client.post("/sign-in", data={"token": site.alice}, base_url=url)
        cookie = reply.headers["Set-Cookie"]
        parts = [p.strip() for p in cookie.split(";")]
        assert parts[0].startswith(SECURE_SESSION_COOKIE + "="), cookie
        assert "Secure" in parts and "Path=/" in parts and "HttpOnly" in parts, cookie
        assert not any(p.lower().startswith("domain") for p in parts), cookie
        assert who(client, parts[0], url) == 200
        # the plain name is not read where the cookie must be __Host-
        plain = SESSION_COOKIE + "=" + parts[0].split("=", 1)[1]
        assert who(client, plain, url) == 401
        out = sign_out(client, parts[0], url)
        assert out.headers["Set-Cookie"].startswith(SECURE_SESSION_COOKIE + "=;")
    over_http = site.client().post("/sign-in", data={"token": site.alice})
    assert over_http.headers["Set-Cookie"].startswith(SESSION_COOKIE + "=")
    assert "Secure" not in over_http.headers["Set-Cookie"]


def test_a_session_ends_after_its_age_and_the_store_is_bounded() -> None:
    now = [100.0]
    sessions = Sessions(clock=lambda: now[0], limit=3)
    first = sessions.start("a", "hash-a")
    now[0] += SESSION_MAX_AGE_S - 1
    assert sessions.get(first) is not None
    now[0] += 1
    assert sessions.get(first) is None and len(sessions) == 0
    started = [sessions.start("a", "hash-a") for _ in range(4)]
    assert len(sessions) == 3  # the fourth ended the oldest
    assert sessions.get(started[0]) is None
    assert all(sessions.get(s) is not None for s in started[1:])
    sessions.end(started[1])
    assert sessions.get(started[1]) is None and len(sessions) == 2
