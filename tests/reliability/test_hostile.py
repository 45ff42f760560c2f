"""Hostile and broken input: a clear status, a readable message, nothing half-written.

The corpus goes over real HTTP to the ingest function (functions-framework, as the
local stack serves it). Ingest's check is deliberately shallow (UTF-8, first byte
``{``, last byte ``}``: it never parses health data), so each case says where it is
stopped:

* rejected by ingest (4xx): the reply's status and a phrase of its message, and
  nothing stored (no row, no archived key, no temporary file left);
* accepted (200) and judged by the fold: the outcome the real ``Player`` gives it,
  one of the four statuses, never a stuck or crashed process.

Then hypothesis drives ``ingest.accept`` + ``Player.play`` over arbitrary JSON, arbitrary
HAE-shaped metrics and arbitrary bytes between braces: every reply is 200 or 400, and
every accepted body ends in one of the four statuses, written as the outcome says.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from healthlog import ingest, tokens
from healthlog.archive.local import TMP_DIR, LocalArchive
from healthlog.config import Settings
from healthlog.fold.player import Player
from healthlog.ingest import IngestDeps, IngestRequest
from healthlog.ingest.wake import NullWaker
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import Account, OutcomeClass, ParseStatus
from healthlog.testing import FaultyArchive, MemoryArchive
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.servers import Server, ingest_rig

LIMIT = 100_000
WAIT_S = 15.0
DATE = '"2026-05-01 06:00:00 +0000"'


def metric(points: str) -> bytes:
    """A step_count body around the JSON text of its points."""
    return (
        '{"data": {"metrics": [{"name": "step_count", "units": "count", "data": ['
        + points
        + "]}]}}"
    ).encode()


def nested(depth: int, inner: str = "1") -> str:
    return '{"a": ' * depth + inner + "}" * depth


def bomb(expanded: int) -> bytes:
    """gzip of ``expanded`` zero bytes, made a chunk at a time (about 1000:1)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"\0" * (1 << 20)
    parts = [z.compress(b'{"a": "')]
    for _ in range(expanded >> 20):
        parts.append(z.compress(zeros))
    parts.append(z.compress(b'"}') + z.flush())
    return b"".join(parts)


def point(fields: str) -> bytes:
    """A step_count body with one point: its date, then ``fields`` as JSON text."""
    return metric("{" + f'"date": {DATE}, ' + fields + "}")


GOOD = point('"qty": 12, "source": "Watch"')


@dataclass(frozen=True)
class Case:
    """One request and what it must get."""

    name: str
    body: bytes
    status: int
    says: str  # a phrase of the readable reply
    headers: dict[str, str] = field(default_factory=dict)
    auth: str = "token"  # token | none | wrong | quoted
    chunked: bool = False
    method: str = "POST"
    # for a 200: the status and failure class the fold gives it
    folds_to: tuple[ParseStatus, str | None] | None = None
    # for a 200: the bytes the archive must hold (default: the body as sent)
    archived: bytes | None = None


def rejected(name: str, body: bytes, status: int, says: str, **kw: Any) -> Case:
    return Case(name, body, status, says, **kw)


def accepted(name: str, body: bytes, folds_to: tuple[ParseStatus, str | None], **kw: Any) -> Case:
    return Case(name, body, 200, '"status": "pending"', folds_to=folds_to, **kw)


NOT_OBJECT = "must be a JSON object"
TOO_LARGE = "too large"
BAD_GZIP = "not valid gzip"
GZIP = {"Content-Encoding": "gzip"}
UNREADABLE = (ParseStatus.FAILED, "unreadable")
PARSED = (ParseStatus.PARSED, None)
PARTIAL = (ParseStatus.PARTIAL, None)
AT_LIMIT = b"{" + b" " * (LIMIT - 2) + b"}"
OVER_LIMIT = b"{" + b" " * (LIMIT - 1) + b"}"

CORPUS = [
    # --- rejected by ingest's shape check
    rejected("empty body", b"", 400, "no body"),
    rejected("blank body", b" \r\n\t ", 400, "no body"),
    rejected("null", b"null", 400, NOT_OBJECT),
    rejected("json array", b'[{"data": {}}]', 400, NOT_OBJECT),
    rejected("json string", b'"{\\"data\\": {}}"', 400, NOT_OBJECT),
    rejected("json number", b"42", 400, NOT_OBJECT),
    rejected("csv text", b"Date,Step Count (count)\n2026-05-01,12\n", 400, NOT_OBJECT),
    rejected("truncated json", GOOD[: len(GOOD) // 2], 400, NOT_OBJECT),
    rejected("truncated json, chunked", GOOD[:-2], 400, NOT_OBJECT, chunked=True),
    rejected("trailing garbage", GOOD + b" x", 400, NOT_OBJECT),
    rejected("byte order mark", b"\xef\xbb\xbf" + GOOD, 400, NOT_OBJECT),
    rejected("invalid utf-8", b'{"a": "\xff\xfe"}', 400, "UTF-8"),
    rejected("utf-8 surrogate", b'{"a": "\xed\xa0\x80"}', 400, "UTF-8"),
    rejected("overlong utf-8", b'{"a": "\xc0\xaf"}', 400, "UTF-8"),
    rejected("utf-16 text", '{"a": 1}'.encode("utf-16"), 400, "UTF-8"),
    # --- accepted by ingest, judged by the fold
    accepted("truncated, ending in a brace", b'{"data": {"metrics": [}', UNREADABLE),
    accepted("not json between braces", b"{ nope }", UNREADABLE),
    accepted("NaN", point('"qty": NaN'), UNREADABLE),
    accepted("Infinity", point('"qty": -Infinity'), UNREADABLE),
    accepted("10 000-digit integer", point('"qty": 1' + "0" * 9999), UNREADABLE),
    accepted("10 000-digit fraction", point('"qty": 1.' + "1" * 9999), PARSED),
    accepted("exponent overflow", point('"qty": 1e999999'), UNREADABLE),
    accepted("escaped lone surrogate", point('"qty": 1, "source": "\\ud800"'), UNREADABLE),
    accepted("raw control character", point('"qty": 1, "source": "a\tb"'), UNREADABLE),
    accepted("200-deep nesting at the top", nested(200).encode(), PARTIAL),
    accepted("200-deep nesting in a point", point(f'"qty": 1, "deep": {nested(200)}'), PARSED),
    # deeper than orjson writes: the point is kept in the archive, its metric uncovered
    accepted("300-deep nesting in a point", point(f'"qty": 1, "deep": {nested(300)}'), PARTIAL),
    accepted("200-deep arrays as metrics", b'{"data": {"metrics": %s}}' % (b"[" * 200 + b"]" * 200),
             PARTIAL),
    # deeper than orjson reads (1024)
    accepted("2 000-deep nesting", nested(2000).encode(), UNREADABLE),
    accepted("duplicate keys", point('"qty": 1, "qty": 2'), PARSED),
    accepted("data is a list", b'{"data": [1, 2]}', UNREADABLE),
    # --- size
    rejected("one byte over the limit", OVER_LIMIT, 413, TOO_LARGE),
    rejected("one byte over, chunked", OVER_LIMIT, 413, TOO_LARGE, chunked=True),
    accepted("exactly at the limit", AT_LIMIT, PARSED),
    # --- headers and tokens
    accepted("600 KB header value", GOOD, PARSED, headers={"automation-name": "n" * 600_000}),
    rejected("no token", GOOD, 401, "has no access token", auth="none"),
    rejected("wrong token", GOOD, 401, "does not know this access token", auth="wrong"),
    rejected("token in quotes", GOOD, 401, "does not know this access token", auth="quoted"),
    rejected("empty bearer", GOOD, 401, "has no access token", auth="none",
             headers={"Authorization": "Bearer "}),
    rejected("token without Bearer", GOOD, 401, "the word Bearer, a space, then your token",
             auth="none", headers={"Authorization": "hl_pasted_alone"}),
    rejected("GET", b"", 405, "POST requests only", method="GET"),
    # --- compression: the archive keeps the JSON the phone meant
    accepted("gzip body", gzip.compress(GOOD), PARSED, headers=GZIP, archived=GOOD),
    accepted("gzip, chunked", gzip.compress(GOOD), PARSED, headers=GZIP, archived=GOOD,
             chunked=True),
    rejected("gzip bomb (64 MB from 64 KB)", bomb(64 << 20), 413, TOO_LARGE, headers=GZIP),
    rejected("gzip one byte over", gzip.compress(OVER_LIMIT), 413, TOO_LARGE, headers=GZIP),
    rejected("gzip cut short", gzip.compress(GOOD)[:-12], 400, BAD_GZIP, headers=GZIP),
    rejected("gzip that is not gzip", GOOD, 400, BAD_GZIP, headers=GZIP),
    rejected("gzip of an array", gzip.compress(b"[1, 2]"), 400, NOT_OBJECT, headers=GZIP),
    rejected("gzip, bytes after its end", gzip.compress(GOOD) + b"{}", 400, BAD_GZIP,
             headers=GZIP),
    rejected("brotli", GOOD, 415, "Content-Encoding", headers={"Content-Encoding": "br"}),
    rejected("gzip twice", gzip.compress(gzip.compress(GOOD)), 415, "Content-Encoding",
             headers={"Content-Encoding": "gzip, gzip"}),
]  # fmt: skip


@dataclass
class Stack:
    server: Server
    journal: SqliteJournal
    archive: LocalArchive
    account: Account
    token: str

    def state(self) -> tuple[set[str], set[str], int]:
        """Delivery ids, archived keys and temporary files, now."""
        tmp = self.archive.root / TMP_DIR
        left = len(list(tmp.iterdir())) if tmp.exists() else 0
        return {d.id for d in self.journal.deliveries()}, set(self.archive.keys()), left

    def send(self, case: Case) -> requests.Response:
        headers = {"Content-Type": "application/json", **case.headers}
        if case.auth == "token":
            headers["Authorization"] = f"Bearer {self.token}"
        elif case.auth == "wrong":
            headers["Authorization"] = f"Bearer {tokens.new_token()}"
        elif case.auth == "quoted":
            headers["Authorization"] = f'Bearer "{self.token}"'
        body: bytes | Iterator[bytes] = case.body
        if case.chunked:
            body = iter([case.body[i : i + 7_000] for i in range(0, len(case.body), 7_000)])
        return requests.request(
            case.method, self.server.url, data=body, headers=headers, timeout=WAIT_S
        )


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("hostile")
    with ingest_rig(folder, HEALTHLOG_MAX_BODY_BYTES=str(LIMIT)) as rig:
        yield Stack(rig.server, rig.journal, rig.archive, rig.account, rig.token)


@pytest.mark.parametrize("case", CORPUS, ids=lambda c: c.name)
def test_hostile_request_gets_a_clear_status_and_nothing_half_written(
    stack: Stack, case: Case
) -> None:
    before = stack.state()
    reply = stack.send(case)
    assert reply.status_code == case.status, reply.text
    assert case.says in reply.text
    assert "Traceback" not in reply.text
    if case.status != 200:
        assert len(reply.text) > 40  # a sentence for HAE's activity log, not a code
        assert stack.state() == before, "a rejected request left something behind"
        return

    delivery = stack.journal.get_delivery(reply.json()["id"])
    assert delivery is not None and delivery.account_id == stack.account.id
    archived = case.archived if case.archived is not None else case.body
    assert stack.archive.read(delivery.archive_key) == archived
    outcome = Player(stack.journal, stack.archive).play(delivery.id)
    folded = stack.journal.get_delivery(delivery.id)
    assert folded is not None
    assert (folded.status, folded.failure) == case.folds_to, outcome
    assert folded.attempts == 0


def test_duplicate_keys_keep_the_last_value(stack: Stack) -> None:
    """orjson keeps the last of duplicate keys; so does every JSON parser in the chain."""
    body = metric('{"date": "2026-05-02 06:00:00 +0000", "qty": 1, "qty": 777}')
    reply = stack.send(Case("dup", body, 200, "pending"))
    delivery_id = reply.json()["id"]
    Player(stack.journal, stack.archive).play(delivery_id)
    values = [
        sp.point.qty
        for sp in stack.journal.export_points(metric="step_count")
        if sp.delivery_id == delivery_id
    ]
    assert values == [777.0]


def test_a_header_over_the_http_servers_limit_is_refused_before_ingest(stack: Stack) -> None:
    """Beyond 1 MB a header line is refused by the HTTP server itself (waitress's 431,
    not ingest's words); nothing is stored."""
    before = stack.state()
    case = Case("huge", GOOD, 400, "", headers={"automation-name": "n" * (1 << 21)})
    try:
        reply = stack.send(case)
    except requests.ConnectionError:
        pass  # the server may drop the connection instead of answering
    else:
        assert reply.status_code == 431
    assert stack.state() == before


def test_the_stored_header_of_a_600_kb_value_is_truncated(stack: Stack) -> None:
    reply = stack.send(Case("h", GOOD, 200, "", headers={"automation-name": "q" * 600_000}))
    delivery = stack.journal.get_delivery(reply.json()["id"])
    assert delivery is not None
    limit = Settings().header_max_chars
    assert delivery.headers == (("automation-name", "q" * limit + "…"),)


# --- hypothesis: ingest + fold over anything ----------------------------------------------


@dataclass
class Rig:
    journal: SqliteJournal
    archive: MemoryArchive
    account: Account
    token: str
    settings: Settings

    def accept(self, body: bytes) -> tuple[int, str | None]:
        stream = iter([body[i : i + 1000] for i in range(0, len(body), 1000)])
        request = IngestRequest(
            headers={"X-API-Key": self.token},
            content_length=len(body),
            read=lambda n: next(stream, b""),
        )
        deps = IngestDeps(self.journal, self.archive, NullWaker(), self.settings)
        reply = ingest.accept(deps, request)
        delivery_id = json.loads(reply.body)["id"] if reply.status == 200 else None
        return reply.status, delivery_id


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    journal = SqliteJournal(str(folder / "j.db"))
    journal.migrate()
    token = tokens.new_token()
    account = journal.add_account("fuzz", tokens.hash_token(token))
    yield Rig(journal, MemoryArchive(), account, token, Settings(max_body_bytes=LIMIT))
    journal.close()


def fold_anything(rig: Rig, body: bytes) -> None:
    """The property: ingest answers 200 or 400; a 200 folds to one of the four statuses,
    written exactly as the outcome says, with its attempt let go."""
    status, delivery_id = rig.accept(body)
    assert status in (200, 400, 413)
    if delivery_id is None:
        return
    outcome = Player(rig.journal, rig.archive).play(delivery_id)
    assert outcome.klass in (OutcomeClass.PARSED, OutcomeClass.PARTIAL, OutcomeClass.FAILED)
    stored = rig.journal.get_delivery(delivery_id)
    assert stored is not None
    assert stored.status is outcome.klass.status
    assert stored.status in set(ParseStatus) - {ParseStatus.PENDING}
    assert stored.points == outcome.points
    assert stored.attempts == 0
    if stored.status is ParseStatus.FAILED:
        assert stored.points == 0 and stored.failure


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=40,
)
KEYS = st.sampled_from(
    ["date", "start", "end", "qty", "source", "Min", "Avg", "Max", "value", "startDate",
     "endDate", "totalSleep", "core", "systolic", "mealTime", "heartbeatSeries"]
)  # fmt: skip
DATES = st.sampled_from(
    ["2026-05-01 06:00:00 +0000", "2026-05-01", "2026-05-01 6:00:00 PM +0200",
     "not a date", "", "2026-13-45 99:99:99 +9999"]
)  # fmt: skip
NAMES = ["step_count", "heart_rate", "sleep_analysis", "blood_pressure", "blood_glucose", "x"]
POINT = st.dictionaries(KEYS, st.one_of(DATES, JSON), max_size=6)
METRICS_BODY = st.lists(
    st.fixed_dictionaries(
        {
            "name": st.sampled_from(NAMES),
            "units": st.one_of(st.just("count"), JSON),
            "data": st.lists(POINT, max_size=6),
        }
    ),
    max_size=4,
).map(lambda metrics: {"data": {"metrics": metrics, "workouts": []}})


def dumps(value: Any) -> bytes:
    # json, not orjson: it writes NaN and Infinity, which a broken client could send
    return json.dumps(value, allow_nan=True).encode()


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(value=JSON)
def test_any_json_value_gets_200_or_400_and_folds_to_one_of_four_statuses(
    rig: Rig, value: Any
) -> None:
    fold_anything(rig, dumps(value))


@FUZZ
@given(value=st.dictionaries(st.text(max_size=10), JSON, max_size=6))
def test_any_json_object_folds_to_one_of_four_statuses(rig: Rig, value: Any) -> None:
    fold_anything(rig, dumps(value))


@FUZZ
@given(body=METRICS_BODY)
def test_any_hae_shaped_metrics_fold_to_one_of_four_statuses(
    rig: Rig, body: dict[str, Any]
) -> None:
    fold_anything(rig, dumps(body))


@FUZZ
@given(inner=st.binary(max_size=200))
def test_any_bytes_between_braces_fold_to_one_of_four_statuses(rig: Rig, inner: bytes) -> None:
    fold_anything(rig, b"{" + inner + b"}")


# --- gzip, in process: what the corpus cannot see from outside ------------------------------


def accept_gzip(rig: Rig, compressed: bytes, piece: int, archive: Any = None) -> tuple[int, int]:
    """Post ``compressed`` as gzip in reads of ``piece`` bytes; (status, bytes read)."""
    read = 0

    def reader(n: int) -> bytes:
        nonlocal read
        chunk = compressed[read : read + min(n, piece)]
        read += len(chunk)
        return chunk

    request = IngestRequest(
        headers={"X-API-Key": rig.token, "Content-Encoding": "gzip"},
        content_length=None,
        read=reader,
    )
    deps = IngestDeps(rig.journal, archive or rig.archive, NullWaker(), rig.settings)
    return ingest.accept(deps, request).status, read


def test_a_gzip_bomb_is_cut_one_chunk_past_the_limit(rig: Rig) -> None:
    """The limit counts decompressed bytes as they come: a 1 GB bomb costs one chunk
    past the limit in memory and in writes, and most of its compressed bytes are
    never even read."""
    compressed = bomb(1 << 30)
    counting = FaultyArchive(MemoryArchive())
    status, read = accept_gzip(rig, compressed, 4096, counting)
    assert status == 413
    assert counting.calls["write"] * ingest.CHUNK_BYTES <= LIMIT + ingest.CHUNK_BYTES
    assert read < len(compressed) // 10
    assert list(counting.inner.keys()) == []


@settings(max_examples=60, deadline=None)
@given(
    fill=st.integers(min_value=0, max_value=LIMIT - 40),
    noise=st.binary(max_size=3000),
    piece=st.integers(min_value=1, max_value=100_000),
)
def test_any_gzip_body_under_the_limit_is_archived_as_its_json(
    rig: Rig, fill: int, noise: bytes, piece: int
) -> None:
    """Decompression in bounded steps loses no byte, whatever the read sizes, including
    output that ends exactly on a chunk boundary."""
    text = noise.hex().encode()[: LIMIT - fill - 20]
    body = b'{"pad": "' + b"a" * fill + text + b'"}'  # at most LIMIT - 9 bytes
    status, _ = accept_gzip(rig, gzip.compress(body), piece)
    assert status == 200
    delivery = rig.journal.deliveries(newest_first=True, limit=1)[0]
    assert rig.archive.read(delivery.archive_key) == body
    Player(rig.journal, rig.archive).play(delivery.id)  # nothing left pending


def test_gzip_output_ending_exactly_on_a_chunk_boundary_is_whole(rig: Rig) -> None:
    body = b'{"pad": "' + b"b" * (ingest.CHUNK_BYTES - 11) + b'"}'
    assert len(body) == ingest.CHUNK_BYTES
    status, _ = accept_gzip(rig, gzip.compress(body), 1 << 20)
    assert status == 200
    delivery = rig.journal.deliveries(newest_first=True, limit=1)[0]
    assert rig.archive.read(delivery.archive_key) == body
    Player(rig.journal, rig.archive).play(delivery.id)


@settings(max_examples=30, deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=1, max_value=200), min_size=1, max_size=4),
    piece=st.integers(min_value=1, max_value=5000),
)
def test_a_body_of_several_gzip_members_is_archived_as_their_joined_output(
    rig: Rig, cuts: list[int], piece: int
) -> None:
    """RFC 1952 allows members one after another (``cat a.gz b.gz``): all are inflated."""
    body = b'{"pad": "' + b"c" * 300 + b'"}'
    edges = sorted({min(c, len(body) - 1) for c in cuts})
    parts = [body[a:b] for a, b in zip([0, *edges], [*edges, len(body)], strict=True)]
    status, _ = accept_gzip(rig, b"".join(gzip.compress(p) for p in parts), piece)
    assert status == 200
    delivery = rig.journal.deliveries(newest_first=True, limit=1)[0]
    assert rig.archive.read(delivery.archive_key) == body
    Player(rig.journal, rig.archive).play(delivery.id)


@pytest.mark.parametrize(
    "tail", [b"garbage", b"\x1f\x8b\x08", gzip.compress(b"x")[:-4]], ids=["junk", "cut", "short"]
)
def test_what_follows_a_gzip_member_must_be_a_whole_member(rig: Rig, tail: bytes) -> None:
    status, _ = accept_gzip(rig, gzip.compress(b'{"a": 1}') + tail, 1 << 16)
    assert status == 400


def test_no_fuzzed_delivery_was_left_pending(rig: Rig) -> None:
    assert rig.journal.count_pending() == 0
    assert all(d.account_id == rig.account.id for d in rig.journal.deliveries())
