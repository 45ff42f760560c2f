"""The dashboard in a real browser: `healthlog dashboard` over a folded SQLite journal.

Headless Chromium (tests/browser.py) opens every page and checks: no console error (a
CSP violation is one), no request to any host but the dashboard's, the metric chart
draws the folded values and re-fetches a finer resolution on zoom, the coverage
calendar marks the gap left in the data, and with sign-in required account A's token
shows none of account B's data while the API answers 401 without the cookie. Sessions
end: a cookie replayed after sign-out or a token rotation is a 401, and another site's
page can neither sign the browser in nor out. A unit or source holding plotly's markup
is drawn as text, with no link in any chart. A screenshot of each page is written under
the test's tmp_path.
"""

from __future__ import annotations

import html
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
import requests
from healthlog.archive.local import LocalArchive
from healthlog.dashboard.sign_in import SESSION_COOKIE
from healthlog.journal.sqlite import SqliteJournal
from healthlog.local import launcher
from healthlog.local.launcher import free_port
from healthlog.model import ParseStatus
from healthlog.ops.retention import retain

from tests import browser
from tests.browser import visit
from tests.dashboard_data import (
    ALICE_SOURCE,
    BOB_SOURCE,
    BOB_STEPS,
    GAP,
    WORKOUT_ID,
    Folded,
    build,
)

PAGES = {
    "summary": "/",
    "status": "/status",
    "coverage": "/coverage",
    "metrics": "/metrics",
    "metric": "/metrics/step_count",
    "metric-discrete": "/metrics/resting_heart_rate",
    "sleep": "/sleep",
    "workouts": "/workouts",
    "workout": f"/workouts/{WORKOUT_ID}",
    "records": "/records?section=ecg",
    "deliveries": "/deliveries",
}


@dataclass
class Site:
    url: str
    folded: Folded
    folder: Path


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Folded, Path]:
    folder = tmp_path_factory.mktemp("dashboard-data")
    return build(folder), folder


@pytest.fixture(scope="module")
def site(data: tuple[Folded, Path]) -> Iterator[Site]:
    folded, folder = data
    port = free_port()
    with browser.dashboard(folder, port, "--account", "alice"):
        yield Site(f"http://127.0.0.1:{port}", folded, folder)


def test_the_status_page_shows_the_watchs_rules_that_hold_first(driver: Any, site: Site) -> None:
    """The rules ``healthlog status --check`` lists, with what to do, before the counts:
    alice has a failed delivery (unreadable) and her phone's last delivery is old."""
    assert visit(driver, site.url, "/status", None, "status") == "yes"
    found = driver.find_element("id", "watch").text
    assert "failed unreadable · alice" in found and "healthlog replay" in found
    assert "no_delivery · alice" in found
    headings = [h.text for h in driver.find_elements("css selector", "#content h2")]
    assert headings[0] == "Watch"


def test_every_page_loads_with_no_error_and_no_other_host(
    driver: Any, site: Site, tmp_path: Path
) -> None:
    for name, path in PAGES.items():
        assert visit(driver, site.url, path, tmp_path, name) == "yes", path
        text = driver.find_element("id", "content").text
        assert BOB_SOURCE not in driver.page_source, path
        assert text, path
    ready = visit(driver, site.url, f"/deliveries/{site.folded.failed_id}", tmp_path, "delivery")
    assert ready == "yes"
    assert "unreadable" in driver.find_element("id", "content").text
    link = driver.find_element("id", "body").get_attribute("href")
    assert requests.get(link, timeout=30).content == b'{"data": not json}'


def test_the_metric_chart_draws_the_folded_points_and_zooms_finer(
    driver: Any, site: Site, tmp_path: Path
) -> None:
    visit(driver, site.url, "/metrics/step_count", None, "")
    traces = driver.execute_script(
        "return document.querySelector('.js-plotly-plot').data"
        ".map(t => ({name: t.name, type: t.type, x: t.x, y: t.y}))"
    )
    bars = next(t for t in traces if t["name"] == "sum")
    assert bars["type"] == "bar"
    assert dict(zip(bars["x"], bars["y"], strict=True)) == site.folded.steps
    chart = driver.find_element("id", "chart")
    assert chart.get_attribute("data-resolution") == "day"

    # zoom to one day: the page re-fetches that range, at a finer resolution
    driver.execute_script(
        "Plotly.relayout(document.getElementById('chart'),"
        " {'xaxis.range': ['2026-03-02 00:00', '2026-03-03 00:00']})"
    )
    browser.wait_until(
        driver, lambda _: chart.get_attribute("data-resolution") != "day", 20, "no re-fetch on zoom"
    )
    assert chart.get_attribute("data-resolution") == "minute"
    ys = driver.execute_script(
        "return document.querySelector('.js-plotly-plot').data.find(t => t.name == 'sum').y"
    )
    assert sum(ys) == site.folded.steps["2026-03-02"] and len(ys) == 3
    # a hover says the time of day of a minute's bucket, not its day alone
    said = driver.execute_script(
        "return document.querySelector('.js-plotly-plot').data.find(t => t.name == 'sum')"
        ".xhoverformat"
    )
    assert said == "%Y-%m-%d %H:%M"
    assert not browser.console_errors(driver)
    driver.save_screenshot(str(tmp_path / "metric-zoomed.png"))
    print(f"screenshot of the zoomed chart: {tmp_path / 'metric-zoomed.png'}")


#: the pages that draw charts
CHART_PAGES = ("metric", "metric-discrete", "sleep", "workout", "records")
#: plotly's buttons and links that send a chart to plotly's cloud (Chart Studio)
OFF_MACHINE = ("share", "cloud", "chart studio", "edit in", "plotly")


def test_no_chart_offers_a_button_or_link_off_the_machine(driver: Any, site: Site) -> None:
    """No "Share chart..." (it posts the chart's data to cloud.plotly.com), no plotly logo
    link, no link to another host; every plot drawn with the pages' one config."""
    own = urlsplit(site.url).netloc
    for name in CHART_PAGES:
        path = PAGES[name]
        visit(driver, site.url, path, None, "")
        found = driver.execute_script(
            "const plots = [...document.querySelectorAll('.js-plotly-plot')];"
            "return {"
            " config: HL.plotConfig,"
            " contexts: plots.map(p => Object.fromEntries("
            "   Object.keys(HL.plotConfig).map(k => [k, p._context[k]]))),"
            " buttons: [...document.querySelectorAll('.modebar-btn')]"
            "   .map(b => [b.getAttribute('data-title') || '', b.getAttribute('href')]),"
            " links: [...document.querySelectorAll('a[href]')].map(a => a.href)};"
        )
        assert found["contexts"], f"{path}: no chart drawn"
        assert all(c == found["config"] for c in found["contexts"]), (path, found["contexts"])
        titles = [title for title, _ in found["buttons"]]
        assert "Download plot as a PNG" in titles, (path, titles)  # the mode bar is there
        leaving = [t for t in titles if any(word in t.lower() for word in OFF_MACHINE)]
        assert not leaving, f"{path}: mode-bar buttons that leave the machine: {leaving}"
        hrefs = [h for _, h in found["buttons"] if h] + found["links"]
        foreign = [h for h in hrefs if not browser.own(h, own)]
        assert not foreign, f"{path} links to other hosts: {foreign}"
        assert found["config"].get("showSendToCloud") is False
        assert found["config"].get("displaylogo") is False


def test_a_day_that_is_no_date_is_said_so_and_the_last_month_drawn(driver: Any, site: Site) -> None:
    """alice's 21 days of steps all lie in the month up to her last day with data."""
    visit(driver, site.url, "/metrics/step_count?day=2026-02-31", None, "")
    said = driver.find_element("id", "message").text
    assert said == (
        'day: "2026-02-31" is not a date (YYYY-MM-DD); showing the last month with data.'
    )
    chart = driver.find_element("id", "chart")
    assert chart.get_attribute("data-resolution") == "day"
    assert int(chart.get_attribute("data-count")) == len(site.folded.steps)


def test_the_metrics_list_says_its_times_are_utc_and_names_the_sources(
    driver: Any, site: Site
) -> None:
    visit(driver, site.url, "/metrics", None, "")
    table = driver.find_element("css selector", "#content table")
    heads = [th.text for th in table.find_elements("css selector", "thead th")]
    assert heads[7:] == ["first (UTC)", "last (UTC)", "sources"]
    steps = next(
        [td.text for td in row.find_elements("css selector", "td")]
        for row in table.find_elements("css selector", "tbody tr")
        if row.find_elements("css selector", "td")[1].text == "step_count"
    )
    assert steps[9] == ALICE_SOURCE


def test_a_workouts_distance_is_what_the_phone_sent(driver: Any, site: Site) -> None:
    """Not the few fixes of its route: the 5.2 km sent; the route's own figure only where
    nothing was sent, and said to be the route's."""
    visit(driver, site.url, PAGES["workout"], None, "")
    terms = driver.find_elements("css selector", "dl.facts dt")
    values = driver.find_elements("css selector", "dl.facts dd")
    facts = {t.text: v.text for t, v in zip(terms, values, strict=True)}
    assert facts["distance"] == "5.2 km"
    assert facts["elevation gain"].endswith(" m (from the route)")


def test_a_discrete_metric_is_an_average_with_its_band(driver: Any, site: Site) -> None:
    visit(driver, site.url, "/metrics/resting_heart_rate", None, "")
    traces = driver.execute_script(
        "return document.querySelector('.js-plotly-plot').data"
        ".map(t => ({name: t.name, fill: t.fill || null, x: t.x, y: t.y}))"
    )
    names = [t["name"] for t in traces]
    # the band a closed shape on each side of the gap, never one across it
    assert names == ["min–max", "min–max", "average"]
    average = traces[2]
    drawn = list(zip(average["x"], average["y"], strict=True))
    assert {x: y for x, y in drawn if y is not None} == site.folded.resting
    assert [y for _, y in drawn].count(None) == 1  # the line breaks once: at the gap
    days = sorted(site.folded.resting)
    before = [d for d in days if d < GAP[0].isoformat()]
    after = [d for d in days if d > GAP[1].isoformat()]
    for band, run in zip(traces[:2], (before, after), strict=True):
        assert band["fill"] == "toself"
        assert sorted(set(band["x"])) == run  # its own days only: it spans no gap
        here = [site.folded.resting[d] for d in run]
        assert band["y"] == here + here[::-1]  # one reading a day: min = max = it


def test_the_coverage_calendar_shows_the_gap(driver: Any, site: Site) -> None:
    visit(driver, site.url, "/coverage", None, "")
    block = driver.find_element("css selector", ".metric-block[data-metric='step_count']")
    gap_cells = block.find_elements("css selector", ".calendar a.gap")
    days = {c.get_attribute("data-day") for c in gap_cells}
    expected = {(GAP[0] + timedelta(days=n)).isoformat() for n in range((GAP[1] - GAP[0]).days + 1)}
    assert days == expected
    assert all(c.get_attribute("data-points") == "0" for c in gap_cells)
    full = block.find_element("css selector", ".calendar a[data-day='2026-03-02']")
    assert int(full.get_attribute("data-points")) == 3
    assert full.get_attribute("href").endswith("/metrics/step_count?day=2026-03-02")
    # the gaps are listed on demand, in the table under the calendar
    row = driver.find_element("css selector", ".coverage-table tr[data-metric='step_count']")
    row.find_element("css selector", "details.gaps summary").click()
    advice = row.find_element("css selector", f"[data-gap='{GAP[0]}/{GAP[1]}']").text
    assert "Manual Export" in advice
    full.click()  # the cell opens the metric page for that day
    # the coverage page is drawn too: wait for the navigation, then for the new page
    browser.wait_until(
        driver,
        lambda d: urlsplit(d.current_url).path == "/metrics/step_count",
        30,
        "the calendar cell did not open the metric page",
    )
    browser.wait_ready(driver)
    chart = driver.find_element("id", "chart")
    # a day of a cumulative metric: its hours, as the Health app's D shows steps
    assert chart.get_attribute("data-resolution") == "hour"
    assert "range=D" in driver.current_url and "until=2026-03-02" in driver.current_url
    assert not browser.console_errors(driver)


def test_a_body_retention_removed_is_said_so_not_offered(
    driver: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """After `healthlog retention`, the delivery's page says when the body was removed
    (no download link), the API reports it, and the body's URL is a 410 saying why."""
    folder = tmp_path_factory.mktemp("dashboard-retained")
    folded = build(folder)
    journal = SqliteJournal(str(folder / "journal.db"))
    try:  # every parsed body: each was received before now
        report = retain(journal, LocalArchive(folder / "archive"), timedelta(0))
        parsed = {d.id: d.body_removed_at for d in journal.deliveries(status=ParseStatus.PARSED)}
    finally:
        journal.close()
    assert report.removed == len(parsed) > 0
    removed_id = folded.delivery_ids[0]  # alice's steps: parsed, its body gone
    assert folded.failed_id not in parsed
    removed_at = parsed[removed_id]
    assert removed_at is not None
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with browser.dashboard(folder, port, "--account", "alice"):
        one = requests.get(f"{url}/api/deliveries/{removed_id}", timeout=30).json()
        assert one["body_url"] is None
        assert one["body_removed_at"] == removed_at.isoformat()
        day = removed_at.date().isoformat()
        gone = requests.get(f"{url}/api/deliveries/{removed_id}/body", timeout=30)
        assert gone.status_code == 410
        assert "retention removed" in gone.json()["error"] and day in gone.json()["error"]
        listed = requests.get(f"{url}/api/deliveries", timeout=30).json()["deliveries"]
        alices = set(parsed) - {folded.bob_delivery_id}
        assert {d["id"] for d in listed if d["body_removed_at"]} == alices

        assert visit(driver, url, f"/deliveries/{removed_id}", None, "") == "yes"
        text = driver.find_element("id", "body-removed").text
        assert "Removed by healthlog retention on " + day in text
        assert not driver.find_elements("id", "body")
        assert "Download the body" not in driver.find_element("id", "content").text
        # a body retention keeps (a failed delivery's) is still offered, and downloads
        assert visit(driver, url, f"/deliveries/{folded.failed_id}", None, "") == "yes"
        link = driver.find_element("id", "body").get_attribute("href")
        assert requests.get(link, timeout=30).content == b'{"data": not json}'
        assert not driver.find_elements("id", "body-removed")


def test_without_the_dashboard_extra_it_says_what_to_install(
    driver: Any, data: tuple[Folded, Path]
) -> None:
    """plotly not importable (installed without the extra): the banner names the extra,
    plotly.js is a 503 saying it, a chart page says it, the other pages draw."""
    folder = data[1]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    advice = "pip install 'healthlog[dashboard]'"
    with browser.dashboard(folder, port, "--account", "alice", without=("plotly",)):
        script = requests.get(url + "/static/vendor/plotly.min.js", timeout=30)
        assert script.status_code == 503, script.text
        assert script.headers["Content-Type"].startswith("text/plain")
        assert advice in script.text and "Traceback" not in script.text
        browser.console_errors(driver)
        driver.get(url + "/metrics/step_count")
        assert browser.wait_ready(driver) == "error"
        assert advice in driver.find_element("id", "message").text
        assert not browser.console_errors(driver)  # the page does not ask for plotly.js
        assert visit(driver, url, "/deliveries", None, "") == "yes"
    log = (folder / f"dashboard-{port}.log").read_text()
    told = [line for line in log.splitlines() if advice in line]
    assert len(told) == 1 and told[0].startswith("healthlog dashboard needs"), log
    assert "dashboard.failed" not in log and "ImportError" not in log, log


def test_an_unknown_metric_is_a_readable_404_page(driver: Any, site: Site) -> None:
    driver.get(site.url + "/metrics/step_cuont")
    assert "step_count" in driver.find_element("tag name", "main").text
    assert "Traceback" not in driver.page_source
    assert requests.get(site.url + "/metrics/step_cuont", timeout=30).status_code == 404
    errors = browser.console_errors(driver)
    assert all("404" in e for e in errors), errors  # the page's own status, nothing else


def test_sign_in_shows_only_that_accounts_data(
    driver: Any, data: tuple[Folded, Path], tmp_path: Path
) -> None:
    folded, folder = data
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with browser.dashboard(folder, port, "--require-sign-in"):
        for path in ("/api/status", "/api/catalog", "/api/series?metric=step_count"):
            reply = requests.get(url + path, timeout=30)
            assert reply.status_code == 401 and "error" in reply.json()
        driver.delete_all_cookies()
        browser.console_errors(driver)  # drop what came before
        driver.get(url + "/coverage")
        assert urlsplit(driver.current_url).path == "/sign-in"
        assert not browser.console_errors(driver)
        driver.save_screenshot(str(tmp_path / "sign-in.png"))
        driver.find_element("id", "token").send_keys(folded.alice.token)
        driver.find_element("css selector", "form.sign-in button").click()
        assert browser.wait_ready(driver) == "yes"
        cookie = driver.get_cookie("healthlog_session")
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert folded.alice.token not in cookie["value"]
        for name, path in PAGES.items():
            visit(driver, url, path, tmp_path, f"signed-in-{name}")
            assert BOB_SOURCE not in driver.page_source, path
        visit(driver, url, "/metrics/step_count?source=" + BOB_SOURCE, None, "")
        values = driver.execute_script(
            "return document.querySelector('.js-plotly-plot').data.flatMap(t => t.y)"
        )
        assert BOB_STEPS not in values
        catalog = driver.execute_script(
            "return fetch('/api/catalog?account=bob').then(r => r.text())"
        )
        assert BOB_SOURCE not in catalog and "step_count" in catalog
        # bob's delivery is not found, even by its id
        reply = driver.execute_script(
            f"return fetch('/api/deliveries/{folded.bob_delivery_id}').then(r => r.status)"
        )
        assert reply == 404
        driver.find_element("css selector", "form.sign-out button").click()
        # the click submits a form: wait for the navigation it starts, not the click
        browser.wait_until(
            driver,
            lambda d: urlsplit(d.current_url).path == "/sign-in",
            30,
            "signing out did not lead to the sign-in page",
        )
        status = driver.execute_script("return fetch('/api/status').then(r => r.status)")
        assert status == 401


def test_with_several_accounts_the_selector_chooses_one(
    driver: Any, data: tuple[Folded, Path]
) -> None:
    folder = data[1]
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with browser.dashboard(folder, port):
        browser.console_errors(driver)
        driver.get(url + "/metrics/step_count")
        assert browser.wait_ready(driver) == "error"
        assert "several accounts" in driver.find_element("id", "message").text
        errors = browser.console_errors(driver)
        assert all("400" in e for e in errors), errors  # the API's "choose one"
        select = driver.find_element("id", "account-select")
        driver.execute_script(
            "arguments[0].value = 'bob'; arguments[0].dispatchEvent(new Event('change'))", select
        )
        browser.wait_until(
            driver, lambda d: "account=bob" in d.current_url, 20, "the selector did not choose bob"
        )
        assert browser.wait_ready(driver) == "yes"
        values = driver.execute_script(
            "return document.querySelector('.js-plotly-plot').data.flatMap(t => t.y)"
        )
        assert values == [BOB_STEPS]
        nav = driver.find_element("css selector", "header nav a[data-nav='coverage']")
        assert nav.get_attribute("href").endswith("/coverage?account=bob")
        assert not browser.console_errors(driver)


# --- sessions that end ----------------------------------------------------------------------


def test_a_session_ends_at_sign_out_and_when_the_token_is_rotated(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Through the real server: each sign-in its own cookie; the value a sign-out ended,
    replayed, is a 401; so is every session of an account whose token `healthlog account
    rotate` replaced; a token in the sign-in's URL signs no one in."""
    folder = tmp_path_factory.mktemp("dashboard-sessions")
    folded = build(folder)  # its own journal: alice's token is rotated here
    port = free_port()
    url = f"http://127.0.0.1:{port}"

    def sign_in(token: str) -> str:
        reply = requests.post(
            url + "/sign-in", data={"token": token}, allow_redirects=False, timeout=30
        )
        assert reply.status_code == 302, reply.text
        return str(reply.cookies[SESSION_COOKIE])

    def status(session: str) -> int:
        cookies = {SESSION_COOKIE: session}
        return requests.get(url + "/api/status", cookies=cookies, timeout=30).status_code

    with browser.dashboard(folder, port, "--require-sign-in"):
        first, second, third = (sign_in(folded.alice.token) for _ in range(3))
        bobs = sign_in(folded.bob.token)
        assert len({first, second, third}) == 3
        assert [status(s) for s in (first, second, third, bobs)] == [200] * 4
        out = requests.post(
            url + "/sign-out", cookies={SESSION_COOKIE: first}, allow_redirects=False, timeout=30
        )
        assert out.status_code == 302
        assert status(first) == 401  # replayed after its sign-out
        assert status(second) == 200  # another sign-in goes on

        in_url = requests.get(
            url + "/sign-in",
            params={"token": folded.alice.token},
            allow_redirects=False,
            timeout=30,
        )
        assert in_url.status_code == 400 and SESSION_COOKIE not in in_url.cookies
        assert folded.alice.token not in in_url.text

        env = launcher.clean_env({"HEALTHLOG_JOURNAL_URL": f"sqlite:///{folder}/journal.db"})
        rotated = subprocess.run(
            [str(browser.BIN / "healthlog"), "account", "rotate", "alice"],
            env=env,
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert rotated.returncode == 0, rotated.stderr
        assert status(second) == 401 and status(third) == 401  # alice's sessions ended
        assert status(bobs) == 200  # bob's token was not rotated
    log = (folder / f"dashboard-{port}.log").read_text()
    assert folded.alice.token not in log and folded.bob.token not in log


#: another site's page that posts a form to the dashboard as soon as it is opened
FORGED = """<!doctype html><title>elsewhere</title>
<form id="forged" method="post" action="{action}">
<input name="token" value="{token}"></form>
<script>document.getElementById("forged").submit()</script>"""


@contextmanager
def another_site(page: str) -> Iterator[int]:
    """A server of another program on 127.0.0.1 serving ``page``; its port."""
    body = page.encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


REFUSED = "Sign-in and sign-out are taken only from this dashboard's own pages"


def _forged_post(driver: Any, page: str, url: str) -> str:
    """Open another site's ``page`` that posts to the dashboard at ``url``; the text of
    the page the browser lands on."""
    driver.get(page)
    browser.wait_until(
        driver,
        lambda d: (
            d.current_url.startswith(url)
            and d.execute_script("return document.readyState") == "complete"
        ),
        30,
        "the forged form did not reach the dashboard",
    )
    return str(driver.find_element("tag name", "main").text)


def test_another_sites_form_cannot_sign_in_or_out(driver: Any, data: tuple[Folded, Path]) -> None:
    """Login CSRF: a page elsewhere (another host name, or another port of this host)
    posting bob's token to the sign-in makes no session in the browser; posting to the
    sign-out does not end alice's. Both are a 403 saying why."""
    folded, folder = data
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    sign_in = FORGED.format(action=f"{url}/sign-in", token=html.escape(folded.bob.token))
    sign_out = FORGED.format(action=f"{url}/sign-out", token="")
    with browser.dashboard(folder, port, "--require-sign-in"):
        driver.get(url + "/sign-in")
        driver.delete_all_cookies()
        with another_site(sign_in) as other:
            # cross-site (localhost is another site than 127.0.0.1), then same-site
            for page in (f"http://localhost:{other}/", f"http://127.0.0.1:{other}/"):
                text = _forged_post(driver, page, url)
                assert "403" in text and REFUSED in text, (page, text)
                assert driver.get_cookie(SESSION_COOKIE) is None, page
                said = driver.execute_script("return fetch('/api/session').then(r => r.status)")
                assert said == 401, page
        driver.get(url + "/sign-in")
        driver.find_element("id", "token").send_keys(folded.alice.token)
        driver.find_element("css selector", "form.sign-in button").click()
        assert browser.wait_ready(driver) == "yes"
        signed = driver.get_cookie(SESSION_COOKIE)["value"]
        with another_site(sign_out) as other:
            for page in (f"http://localhost:{other}/", f"http://127.0.0.1:{other}/"):
                text = _forged_post(driver, page, url)
                assert "403" in text and REFUSED in text, (page, text)
                assert driver.get_cookie(SESSION_COOKIE)["value"] == signed, page
        driver.get(url + "/")
        assert browser.wait_ready(driver) == "yes"  # still signed in
        assert driver.find_element("id", "account").text == "account alice"
        driver.find_element("css selector", "form.sign-out button").click()  # its own: out
        browser.wait_until(
            driver,
            lambda d: urlsplit(d.current_url).path == "/sign-in",
            30,
            "signing out did not lead to the sign-in page",
        )
        assert (
            requests.get(
                url + "/api/status", cookies={SESSION_COOKIE: signed}, timeout=30
            ).status_code
            == 401
        )
    log = (folder / f"dashboard-{port}.log").read_text()
    assert log.count("dashboard.sign_in_foreign") == 2, log
    assert log.count("dashboard.sign_out_foreign") == 2, log
    assert folded.bob.token not in log


# --- data is text everywhere --------------------------------------------------------------

#: a name a body may carry that plotly's pseudo-HTML would draw as a link leaving the machine
PAYLOAD = '<a href="http://example.invalid/">Session expired: click to sign in again</a>'
#: plotly's hovertemplate would fill in a %{y} of a name written into the template
UNIT = PAYLOAD + " %{y} 100%"
SOURCE = PAYLOAD + " %{x} & <b>co</b> &lt;i&gt;"  # an entity in a name is shown as written
METRIC = "<a href='http://example.invalid/'>click</a> & %{y}"
HOSTILE_WORKOUT = "0A1B2C3D-0000-4000-8000-00000000BAD0"


def hostile_build(where: Path) -> None:
    """An account whose every unit, source and one metric's name is markup for plotly."""
    from healthlog import tokens
    from healthlog.fold.pass_ import FoldPass
    from healthlog.fold.player import Player

    from tests.conftest import Phone, metrics_body

    journal = SqliteJournal(str(where / "journal.db"))
    journal.migrate()
    try:
        token = tokens.new_token()
        account = journal.add_account("alice", tokens.hash_token(token))
        archive = LocalArchive(where / "archive")
        phone = Phone(journal, archive, account, token)
        days = [f"2026-03-0{d}" for d in range(1, 4)]
        points: list[dict[str, object]] = [
            {"date": f"{d} 08:00:00 +0100", "qty": 40 + n, "source": SOURCE}
            for n, d in enumerate(days)
        ]
        metrics = [(name, UNIT, points) for name in ("step_count", "resting_heart_rate", METRIC)]
        phone.send(metrics_body(*metrics))
        # a point sent without a source (stored with "" for one) beside one with a source
        sourceless: list[dict[str, object]] = [
            {"date": "2026-03-01 08:00:00 +0100", "qty": 3},
            {"date": "2026-03-02 08:00:00 +0100", "qty": 2, "source": "Watch"},
        ]
        phone.send(metrics_body(("flights_climbed", "count", sourceless)))
        sleep: list[dict[str, object]] = [
            {
                "startDate": f"{d} 23:00:00 +0100",
                "endDate": f"{d} 23:59:00 +0100",
                "qty": 1.0,
                "value": "Deep",
                "source": SOURCE,
            }
            for d in days
        ]
        phone.send(metrics_body(("sleep_analysis", "hr", sleep)))
        heart = [
            {
                "date": f"2026-03-01 09:0{i}:00 +0100",
                "Min": 100,
                "Avg": 110 + i,
                "Max": 120,
                "units": UNIT,
                "source": SOURCE,
            }
            for i in range(3)
        ]
        workout = {
            "id": HOSTILE_WORKOUT,
            "name": PAYLOAD,
            "source": SOURCE,
            "start": "2026-03-01 09:00:00 +0100",
            "end": "2026-03-01 09:10:00 +0100",
            "heartRateData": heart,
        }
        phone.send({"data": {"workouts": [workout]}})
        volts = [
            {"date": 1773309600 + i / 512, "voltage": float(i % 7), "units": UNIT}
            for i in range(64)
        ]
        ecg = {
            "start": "2026-03-12 10:00:00 +0000",
            "end": "2026-03-12 10:00:30 +0000",
            "classification": PAYLOAD,
            "source": SOURCE,
            "voltageMeasurements": volts,
        }
        phone.send({"data": {"ecg": [ecg]}})
        FoldPass(journal, Player(journal, archive)).pass_once()
    finally:
        journal.close()


#: each chart page of the hostile data (one chart each), and what it must show as written
HOSTILE_PAGES = (
    ("/metrics/step_count", (UNIT,)),  # by day: a bar's hover, the axis title
    ("/metrics/step_count?resolution=raw", (UNIT, SOURCE)),
    ("/metrics/resting_heart_rate", (UNIT,)),  # by day: the average and its band
    ("/metrics/resting_heart_rate?resolution=raw", (UNIT, SOURCE)),
    ("/metrics/" + quote(METRIC, safe="") + "?resolution=raw", (UNIT, SOURCE)),
    ("/sleep", (SOURCE,)),
    (f"/workouts/{HOSTILE_WORKOUT}", (UNIT, SOURCE)),
    ("/records?section=ecg", (UNIT,)),
)

#: every plot's text and links, with each trace's first point hovered in turn
HOVER_EACH = """
const plots = [...document.querySelectorAll('.js-plotly-plot')];
return plots.map((plot) => {
  const hovers = [];
  plot.data.forEach((trace, i) => {
    if (trace.hoverinfo === 'skip') return;
    Plotly.Fx.hover(plot, [{curveNumber: i, pointNumber: 0}]);
    const layer = plot.querySelector('.hoverlayer');
    hovers.push({text: layer.textContent, links: layer.querySelectorAll('a').length});
    Plotly.Fx.unhover(plot);
  });
  return {text: plot.textContent, links: plot.querySelectorAll('a').length,
          ytitle: (plot.querySelector('.ytitle') || {}).textContent, hovers};
});
"""


def test_names_from_a_body_are_drawn_as_text_never_as_a_link(
    driver: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A unit, source, workout or metric name holding plotly's markup (an <a href> off the
    machine, a <b>) or a hovertemplate's %{y}: every chart draws it as written, in its
    axis title and its hover label, and no chart holds a link."""
    folder = tmp_path_factory.mktemp("dashboard-hostile")
    hostile_build(folder)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with browser.dashboard(folder, port, "--account", "alice"):
        for path, literals in HOSTILE_PAGES:
            assert visit(driver, url, path, None, "") == "yes", path
            browser.wait_until(  # the ECG's chart is drawn from a timer
                driver,
                lambda d: d.find_elements("css selector", ".js-plotly-plot"),
                30,
                f"{path}: its chart was not drawn",
            )
            found = driver.execute_script(HOVER_EACH)
            assert len(found) == 1, path
            for plot in found:
                assert plot["links"] == 0, (path, plot["text"])
                hovers = [h for h in plot["hovers"] if h["text"]]
                assert hovers, f"{path}: no hover label"
                assert all(h["links"] == 0 for h in hovers), (path, hovers)
                said = " ".join(h["text"] for h in hovers)
                for literal in literals:
                    assert literal in said, (path, literal, said)
                if UNIT in literals:
                    assert plot["ytitle"] == UNIT, (path, plot["ytitle"])
            links = driver.execute_script(
                "return [...document.querySelectorAll('a')].map(a => a.href)"
                ".filter(h => h.includes('example.invalid'))"
            )
            assert not links, (path, links)
        visit(driver, url, f"/workouts/{HOSTILE_WORKOUT}", None, "")
        assert driver.find_element("id", "title").text == PAYLOAD
        visit(driver, url, "/metrics/" + quote(METRIC, safe=""), None, "")
        # the stored name as written beside the title's name for people, never markup
        assert driver.find_element("id", "stored").text.startswith(METRIC + " · qty (")
        assert not driver.find_elements("css selector", "#title a, #stored a")
        # an empty source is named, never a leading comma
        visit(driver, url, "/metrics", None, "")
        rows = driver.execute_script(
            "return [...document.querySelectorAll('#content tbody tr')]"
            ".map(tr => [...tr.cells].map(td => td.textContent))"
        )
        flights = next(r for r in rows if r[1] == "flights_climbed")
        assert flights[0] == "Flights climbed" and flights[3] == "floors"
        assert flights[-1] == "(no source), Watch", flights


#: the y axis title of the page's chart
YTITLE = "return (document.querySelector('.js-plotly-plot .ytitle') || {}).textContent || null"


def test_pages_name_metrics_and_units_for_people_and_keep_the_stored_names(
    driver: Any, site: Site
) -> None:
    """A metric page's title and axis say "Steps" and "bpm" (healthlog.reads.display), the stored
    names beside them; the Metrics page lists both; the sleep table's columns are distinct
    and no source shows as a leading comma (docs/dashboard.md, "Names")."""
    visit(driver, site.url, "/metrics/step_count", None, "")
    assert driver.find_element("id", "title").text == "Steps (steps)"
    assert driver.title == "Steps · healthlog"
    assert driver.execute_script(YTITLE) == "steps"
    assert driver.find_element("id", "stored").text == "step_count · qty (count)"

    visit(driver, site.url, "/metrics/resting_heart_rate", None, "")
    assert driver.find_element("id", "title").text == "Resting heart rate (bpm)"
    assert driver.execute_script(YTITLE) == "bpm"
    assert "count/min" in driver.find_element("id", "stored").text

    visit(driver, site.url, f"/workouts/{WORKOUT_ID}", None, "")
    assert driver.execute_script(YTITLE) == "bpm"

    visit(driver, site.url, "/metrics", None, "")
    rows = driver.execute_script(
        "return [...document.querySelectorAll('#content tbody tr')]"
        ".map(tr => [...tr.cells].map(td => td.textContent))"
    )
    steps = next(r for r in rows if r[1] == "step_count")
    assert steps[:5] == ["Steps", "step_count", "qty", "steps", "count"]
    resting = next(r for r in rows if r[1] == "resting_heart_rate")
    assert resting[0] == "Resting heart rate" and resting[3:5] == ["bpm", "count/min"]
    assert not any(r[-1].startswith(",") for r in rows), rows

    visit(driver, site.url, "/sleep", None, "")
    headers = driver.execute_script(
        "return [...document.querySelectorAll('#content thead th')].map(th => th.textContent)"
    )
    assert len(headers) == len(set(headers)), headers
    assert "Asleep (h)" in headers and "In bed (h)" in headers  # the hours asleep, in all
