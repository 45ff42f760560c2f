"""A read knows its cost before it starts, and a few heavy reads run at a time.

A series of more buckets than one read gives is refused at once, from the catalog's
extent (``reads.TooHeavy``: the dashboard's 400, ``plot``'s usage error, the MCP tool's
error), naming a resolution that fits; a heavy read that finds every slot taken is told
so (``heavy.Busy``: the dashboard's 503 with ``Retry-After``). Issue "The read side as
hard as the write side", item 3.
"""

from __future__ import annotations

import logging
import socket
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from healthlog import cli
from healthlog.dashboard import DashboardOptions, create_app
from healthlog.dashboard.server import QuietHandler
from healthlog.reads import Reads, Resolution, TooHeavy, heavy
from healthlog.testing import MemoryArchive
from werkzeug.serving import make_server

from tests.conftest import metrics_body
from tests.unit.test_cli import env, phone_for  # noqa: F401 (env is a fixture)


@pytest.fixture
def a_year(env: Path) -> Reads:  # noqa: F811
    """Heart rate every minute of four days, a season apart: a year of extent, 5 760
    minutes of data, and two lone readings between them."""
    phone = phone_for(env)
    points = [
        {"date": f"{day} {m // 60:02d}:{m % 60:02d}:00 +0000", "Min": 60, "Avg": 61, "Max": 62,
         "source": "Watch"}
        for day in ("2025-03-01", "2025-06-01", "2025-09-01", "2026-03-01")
        for m in range(1440)
    ]  # fmt: skip
    points += [
        {"date": day, "Avg": 70, "source": "Watch"}
        for day in ("2025-04-01 12:00:00 +0000", "2025-05-01 12:00:00 +0000")
    ]
    phone.send(metrics_body(("heart_rate", "count/min", points)))
    assert CliRunner().invoke(cli.cli, ["fold"]).exit_code == 0
    return Reads.of(phone.journal)


def test_a_series_finer_than_its_data_allows_is_refused_naming_one_that_fits(
    a_year: Reads,
) -> None:
    with pytest.raises(TooHeavy) as refused:
        a_year.series("heart_rate", resolution=Resolution.MINUTE)
    said = str(refused.value)
    # six days hold data (four whole, two with one reading): at most a minute each
    assert "up to 8640" in said and "5000 buckets" in said and "use hour or coarser" in said
    # what fits is read: hours over the year, a minute over a day
    assert len(a_year.series("heart_rate", resolution=Resolution.HOUR).samples) == 4 * 24 + 2
    one_day = a_year.series(
        "heart_rate", resolution=Resolution.MINUTE, start="2025-03-01", end="2025-03-02"
    )
    assert len(one_day.samples) == 1440
    # sparse data over a long range: minutes are few, and read
    sparse = a_year.series(
        "heart_rate", resolution=Resolution.MINUTE, start="2025-03-10", end="2025-05-20"
    )
    assert len(sparse.samples) == 2
    # raw points are bounded by the limit as they stream: never refused for the range
    assert len(a_year.series("heart_rate", resolution=Resolution.RAW, limit=1).samples) == 1


def test_the_dashboard_and_plot_say_it_as_their_own_errors(a_year: Reads, env: Path) -> None:  # noqa: F811
    app = create_app(a_year.journal, MemoryArchive(), DashboardOptions())
    reply = app.test_client().get("/api/series?metric=heart_rate&resolution=minute")
    assert reply.status_code == 400
    assert "use hour or coarser" in reply.get_json()["error"]
    done = CliRunner().invoke(
        cli.cli, ["plot", "heart_rate", "--resolution", "minute", "-o", str(env / "hr.png")]
    )
    assert done.exit_code == 2 and "'--resolution'" in done.stderr
    assert "use hour or coarser" in done.stderr and not (env / "hr.png").exists()


def test_a_gate_holds_its_slots_and_tells_the_next_it_is_busy() -> None:
    gate = heavy.Gate(2, wait_s=0.05)
    inside, leave = threading.Barrier(3), threading.Event()

    def hold() -> None:
        with gate.slot():
            inside.wait()
            leave.wait()

    holders = [threading.Thread(target=hold) for _ in range(2)]
    for holder in holders:
        holder.start()
    inside.wait()  # both slots taken
    with pytest.raises(heavy.Busy, match="2 heavy reads are at work"), gate.slot():
        pass
    leave.set()
    for holder in holders:
        holder.join()
    with gate.slot():  # free again
        pass


def test_the_dashboard_answers_503_with_retry_after_when_every_slot_is_taken(
    a_year: Reads,
) -> None:
    app = create_app(a_year.journal, MemoryArchive(), DashboardOptions(heavy_reads=1))
    gate = app.extensions["healthlog"]["heavy"]
    gate.wait_s = 0.01
    client = app.test_client()
    with gate.slot():  # the one slot, taken by a read at work
        for url in (
            "/api/series?metric=heart_rate",
            "/api/daily?metric=heart_rate",
            "/api/coverage",
        ):
            reply = client.get(url)
            assert reply.status_code == 503, url
            assert reply.headers["Retry-After"] == str(heavy.RETRY_AFTER_S)
            assert "busy" in reply.get_json()["error"]
        assert client.get("/api/catalog").status_code == 200  # a light read is not gated
    assert client.get("/api/series?metric=heart_rate").status_code == 200


class _Heard(logging.Handler):
    """Sets ``seen`` when the dashboard logs ``name``."""

    def __init__(self, name: str) -> None:
        super().__init__(logging.INFO)
        self.name_ = name
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == self.name_:
            self.seen.set()


def test_a_read_whose_client_went_away_is_not_begun(a_year: Reads) -> None:
    """Over the dashboard's own server: a heavy read waits for the one slot, its client
    closes the connection, and the read is given up, not begun once the slot frees."""
    app = create_app(a_year.journal, MemoryArchive(), DashboardOptions(heavy_reads=1))
    gate = app.extensions["healthlog"]["heavy"]
    gate.wait_s = 30.0  # it waits, it is not told "busy"
    heard = _Heard("dashboard.client_gone")
    dashboard_log = logging.getLogger("healthlog.dashboard")
    level = dashboard_log.level
    dashboard_log.setLevel(logging.INFO)
    dashboard_log.addHandler(heard)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler)
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        with gate.slot():  # a read at work holds the one slot
            with socket.create_connection(("127.0.0.1", server.port)) as client:
                client.sendall(
                    b"GET /api/series?metric=heart_rate&resolution=hour HTTP/1.1\r\n"
                    b"Host: 127.0.0.1\r\n\r\n"
                )
            assert heard.seen.wait(timeout=20), "the waiting read never noticed"
        # the slot is free again at once: the given-up read took nothing
        with socket.create_connection(("127.0.0.1", server.port)) as client:
            client.sendall(b"GET /api/catalog HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert client.recv(12) == b"HTTP/1.1 200"
        gate.wait_s = 0.01
        with gate.slot():
            pass
    finally:
        dashboard_log.removeHandler(heard)
        dashboard_log.setLevel(level)
        server.shutdown()
        serving.join()
