"""The local server's waitress settings follow healthlog's (the server itself runs in
tests/reliability/test_slow_clients.py and every test that starts a function)."""

from __future__ import annotations

import pytest
from healthlog.config import Settings
from healthlog.errors import ConfigError
from healthlog.local.server import BODY_MARGIN_BYTES, CONNECTION_LIMIT, adjustments
from waitress.adjustments import Adjustments


def test_the_idle_timeout_and_body_limit_come_from_the_settings() -> None:
    settings = Settings.from_env(
        {"HEALTHLOG_CLIENT_IDLE_TIMEOUT_S": "7", "HEALTHLOG_MAX_BODY_BYTES": "1000"}
    )
    adj = Adjustments(host="127.0.0.1", port=0, **adjustments(settings))
    assert adj.channel_timeout == 7
    assert adj.cleanup_interval == 3  # often enough to close within about 1.5x the timeout
    assert adj.max_request_body_size == 1000 + BODY_MARGIN_BYTES
    assert adj.connection_limit == CONNECTION_LIMIT > 200
    assert adj.asyncore_use_poll  # select(2) would fail past 1 024 descriptors


def test_the_default_timeout_looks_for_idle_clients_every_30_s() -> None:
    adj = Adjustments(host="127.0.0.1", port=0, **adjustments(Settings()))
    assert (adj.channel_timeout, adj.cleanup_interval) == (60, 30)


@pytest.mark.parametrize("raw", ["0", "-1", "1.5", "soon"])
def test_an_idle_timeout_that_is_not_a_positive_whole_number_stops_the_server(raw: str) -> None:
    with pytest.raises(ConfigError, match="HEALTHLOG_CLIENT_IDLE_TIMEOUT_S"):
        Settings.from_env({"HEALTHLOG_CLIENT_IDLE_TIMEOUT_S": raw})
