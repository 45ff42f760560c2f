"""The Lambda handlers, with real-shaped events, against moto's AWS server.

``functions/ingest/main.py`` and ``functions/fold/main.py`` are imported in-process, as
Lambda's cold start does, with the environment template.yaml gives them: its literal
values are read from the template, and what CloudFormation fills in is filled in here
(the bucket, the parameter's name, the fold function's name). As in AWS, the journal URL
is not in that environment: it is in an SSM SecureString parameter, read at cold start.

- S3 and SSM: moto's HTTP server (``tests/s3.py``), dummy credentials only;
- the wake-up: ingest's boto3 Lambda client sends ``Invoke`` to a local recorder, whose
  captured payload is then given to the fold handler, as Lambda would;
- the journal: SQLite, and PostgreSQL (a fresh database from ``tests/pg.py``);
- the context: a stand-in for Lambda's, with ``get_remaining_time_in_millis``.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import logging
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import boto3
import pytest
import yaml
from healthlog import ids, tokens
from healthlog.config import Settings
from healthlog.errors import ConfigError, JournalUnavailable
from healthlog.journal.port import Journal
from healthlog.model import ParseStatus
from healthlog.ops import secrets, wiring
from samtranslator.yaml_helper import intrinsics_multi_constructor

from tests import pg
from tests.conftest import SAMPLES
from tests.integration.servers import ROOT, local_http

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_ssm import SSMClient

EVENTS = ROOT / "tests" / "events"
SAMPLE = SAMPLES / "metrics_step-count_minute-agg_2021_ivailop7-sample.json"
TOKEN = "hl_sample-event-token-not-a-real-secret-000000"  # the one in function_url_v2.json
REGION = "us-east-1"
FOLD_NAME = "healthlog-FoldFunction-TEST"
WAIT_S = 10.0  # an upper bound for things that happen at once; never a sleep


# --- the environment template.yaml gives each function -----------------------------------


class _Loader(yaml.SafeLoader):
    """YAML with CloudFormation's short-form intrinsics (``!Ref``, ``!Sub``...)."""


_Loader.add_multi_constructor("!", intrinsics_multi_constructor)


def template_env(function: str) -> dict[str, Any]:
    """The function's variables as the template writes them (Globals, then its own)."""
    template = yaml.load((ROOT / "template.yaml").read_text(), Loader=_Loader)  # noqa: S506
    return {
        **template["Globals"]["Function"]["Environment"]["Variables"],
        **template["Resources"][function]["Properties"]["Environment"]["Variables"],
    }


def lambda_env(function: str, filled: dict[str, str]) -> dict[str, str]:
    """The template's literal values, plus what CloudFormation would fill in."""
    written = template_env(function)
    literal = {name: value for name, value in written.items() if isinstance(value, str)}
    unfilled = set(written) - set(literal) - set(filled)
    assert not unfilled, f"the test does not fill in {unfilled}"
    return {**literal, **{k: v for k, v in filled.items() if k in written}}


# --- a stand-in for Lambda: the Invoke API and the context ----------------------------------


@dataclass
class Invoke:
    function_name: str
    invocation_type: str
    payload: bytes


@dataclass
class LambdaRecorder:
    """Answers ``Invoke`` like the Lambda API does for an async invoke (202)."""

    url: str = ""
    invokes: list[Invoke] = field(default_factory=list)
    arrived: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))

    def next_invoke(self) -> Invoke:
        assert self.arrived.acquire(timeout=WAIT_S), "no Invoke reached the Lambda API"
        return self.invokes[-1]


@pytest.fixture
def lambda_api() -> Iterator[LambdaRecorder]:
    recorder = LambdaRecorder()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            # /2015-03-31/functions/<name>/invocations
            name = self.path.split("/functions/", 1)[1].split("/", 1)[0]
            payload = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            kind = self.headers.get("X-Amz-Invocation-Type", "RequestResponse")
            recorder.invokes.append(Invoke(name, kind, payload))
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            recorder.arrived.release()

        def log_message(self, format: str, *args: object) -> None:
            pass

    with local_http(Handler) as url:
        recorder.url = url
        yield recorder


@dataclass
class FakeContext:
    """The parts of Lambda's context object the handlers use."""

    remaining_ms: int = 300_000
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_name: str = FOLD_NAME

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


# --- one deployment: a bucket, a parameter, a journal, both functions --------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def journal_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/journal.db"
        return
    with pg.fresh_database() as url:
        yield url


@pytest.fixture
def aws_env(
    dummy_aws_env: None,
    monkeypatch: pytest.MonkeyPatch,
    s3_endpoint: str,
    lambda_api: LambdaRecorder,
) -> None:
    """What Lambda's environment gives boto3 (a region), with the endpoints pointed here."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", s3_endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", lambda_api.url)


@pytest.fixture
def ssm(s3_endpoint: str) -> Iterator[SSMClient]:
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    client = session.client("ssm", endpoint_url=s3_endpoint)
    yield client
    client.close()


@dataclass
class Deployment:
    ingest: ModuleType
    fold: ModuleType
    journal: Journal
    bucket: str
    s3: S3Client
    lambda_api: LambdaRecorder

    def post(self, event: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.ingest.handler(event, FakeContext(30_000))
        return result

    def tick(self, context: FakeContext | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.fold.handler(
            load_event("scheduled_event"), context or FakeContext()
        )
        return result

    def objects(self) -> dict[str, bytes]:
        listed = self.s3.list_objects_v2(Bucket=self.bucket).get("Contents", [])
        return {
            o["Key"]: self.s3.get_object(Bucket=self.bucket, Key=o["Key"])["Body"].read()
            for o in listed
        }

    def stored(self) -> tuple[set[str], set[str]]:
        return {d.id for d in self.journal.deliveries()}, set(self.objects())


def cold_start(name: str, path: Path) -> ModuleType:
    """Import a function's main.py under a name of its own, as a fresh Lambda would."""
    spec = importlib.util.spec_from_file_location(f"{name}_{uuid.uuid4().hex[:8]}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def deployment(
    aws_env: None,
    journal_url: str,
    monkeypatch: pytest.MonkeyPatch,
    s3_endpoint: str,
    s3_client: S3Client,
    s3_bucket: str,
    ssm: SSMClient,
    lambda_api: LambdaRecorder,
) -> Iterator[Deployment]:
    journal = wiring.open_journal(Settings(journal_url=journal_url))
    journal.migrate()
    journal.add_account("alice", tokens.hash_token(TOKEN))
    parameter = f"/healthlog-test/{uuid.uuid4().hex[:8]}/journal-url"
    ssm.put_parameter(Name=parameter, Value=journal_url, Type="SecureString")
    filled = {
        "HEALTHLOG_ARCHIVE_URL": f"s3://{s3_bucket}",
        "HEALTHLOG_JOURNAL_URL_PARAMETER": parameter,
        "HEALTHLOG_FOLD_FUNCTION_NAME": FOLD_NAME,
        "HEALTHLOG_LOG_LEVEL": "INFO",
    }
    healthlog_logger = logging.getLogger("healthlog")
    saved = (list(healthlog_logger.handlers), healthlog_logger.level)
    modules = []
    for function, folder in (("IngestFunction", "ingest"), ("FoldFunction", "fold")):
        with monkeypatch.context() as env:
            variables = lambda_env(function, filled)
            # moto's endpoint: the one variable that is not the template's
            variables["HEALTHLOG_S3_ENDPOINT_URL"] = s3_endpoint
            for name, value in variables.items():
                env.setenv(name, value)
            module = cold_start(f"{folder}_main", ROOT / "functions" / folder / "main.py")
            if folder == "fold":
                module._settings()  # the fold reads its settings at its first invocation
            modules.append(module)
    ingest, fold = modules
    yield Deployment(ingest, fold, journal, s3_bucket, s3_client, lambda_api)
    if ingest._deps is not None:
        ingest._deps.journal.close()
    if fold._service.cache_info().currsize:
        fold._service().journal.close()
    journal.close()
    healthlog_logger.handlers[:], healthlog_logger.level = saved


def load_event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    return event


def function_url_event(body: bytes, *, token: str | None = TOKEN) -> dict[str, Any]:
    """``function_url_v2.json`` carrying ``body``, base64-encoded, with its headers."""
    event = load_event("function_url_v2")
    event["body"] = base64.b64encode(body).decode()
    event["isBase64Encoded"] = True
    event["headers"]["content-length"] = str(len(body))
    if token is None:
        del event["headers"]["authorization"]
    else:
        event["headers"]["authorization"] = f"Bearer {token}"
    return event


# --- ingest ---------------------------------------------------------------------------------


def test_a_delivery_is_archived_in_s3_journalled_pending_and_wakes_the_fold(
    deployment: Deployment,
) -> None:
    body = SAMPLE.read_bytes()
    result = deployment.post(function_url_event(body))
    assert result["statusCode"] == 200, result["body"]
    assert result["headers"]["Content-Type"] == "application/json"
    answer = json.loads(result["body"])
    delivery = deployment.journal.get_delivery(answer["id"])
    assert delivery is not None and delivery.status is ParseStatus.PENDING
    assert ("automation-name", "Steps to healthlog") in delivery.headers
    assert deployment.objects() == {delivery.archive_key: body}
    head = deployment.s3.head_object(Bucket=deployment.bucket, Key=delivery.archive_key)
    assert head["ServerSideEncryption"] == "AES256"
    # the wake-up: an async invoke of the fold, whose payload is async_invoke.json
    wake = deployment.lambda_api.next_invoke()
    assert (wake.function_name, wake.invocation_type) == (FOLD_NAME, "Event")
    assert json.loads(wake.payload) == load_event("async_invoke")


@pytest.mark.parametrize(
    ("token", "text"),
    [(None, "has no access token"), ("hl_not-a-known-token", "does not know this access token")],
    ids=["missing", "wrong"],
)
def test_no_or_wrong_token_is_401_and_nothing_is_stored(
    deployment: Deployment, token: str | None, text: str
) -> None:
    result = deployment.post(function_url_event(b'{"data": {}}', token=token))
    assert result["statusCode"] == 401
    assert text in result["body"]
    assert deployment.stored() == (set(), set())


def test_a_body_over_the_templates_limit_is_413_with_the_batch_requests_text(
    deployment: Deployment,
) -> None:
    """Under Lambda's own 6 MB, over HEALTHLOG_MAX_BODY_BYTES: our 413 tells what to do."""
    limit = int(template_env("IngestFunction")["HEALTHLOG_MAX_BODY_BYTES"])
    body = b'{"pad": "' + b"x" * (limit - 10) + b'"}'
    assert len(body) == limit + 1
    event = function_url_event(body)
    assert len(json.dumps(event)) < 6 * 1024 * 1024  # Lambda would have let it through
    result = deployment.post(event)
    assert result["statusCode"] == 413
    assert '"Batch Requests"' in result["body"]
    assert deployment.stored() == (set(), set())


# --- fold -------------------------------------------------------------------------------------


def test_the_scheduled_tick_folds_a_pending_delivery(deployment: Deployment) -> None:
    answer = json.loads(deployment.post(function_url_event(SAMPLE.read_bytes()))["body"])
    report = deployment.tick()
    assert (report["selected"], report["parsed"], report["stopped"]) == (1, 1, None)
    delivery = deployment.journal.get_delivery(answer["id"])
    assert delivery is not None and delivery.status is ParseStatus.PARSED
    assert delivery.points > 0


def test_the_wake_up_invoke_folds_a_pending_delivery(deployment: Deployment) -> None:
    answer = json.loads(deployment.post(function_url_event(SAMPLE.read_bytes()))["body"])
    wake = deployment.lambda_api.next_invoke()
    report = deployment.fold.handler(json.loads(wake.payload), FakeContext())
    assert (report["selected"], report["parsed"]) == (1, 1)
    delivery = deployment.journal.get_delivery(answer["id"])
    assert delivery is not None and delivery.status is ParseStatus.PARSED


def test_the_daily_reconcile_journals_a_recent_body_a_crash_left_without_its_row(
    deployment: Deployment,
) -> None:
    """Archived, then the process died before the insert: the schedule heals it."""
    answer = json.loads(deployment.post(function_url_event(SAMPLE.read_bytes()))["body"])
    (key,) = deployment.objects()
    orphan = ids.new_delivery_id(ids.now())
    orphan_key = key.replace(answer["id"], orphan)
    deployment.s3.put_object(Bucket=deployment.bucket, Key=orphan_key, Body=b'{"data": {}}')

    result = deployment.fold.handler({"healthlog": "reconcile"}, FakeContext())

    assert result == {
        "reconciled": {"seen": 2, "journalled": 1, "present": 1, "skipped": 0, "swept": 0}
    }
    delivery = deployment.journal.get_delivery(orphan)
    assert delivery is not None and delivery.status is ParseStatus.PENDING
    assert deployment.tick()["selected"] == 2  # the tick folds it like any other


def test_a_pass_short_of_time_stops_claiming_and_leaves_deliveries_pending(
    deployment: Deployment, caplog: pytest.LogCaptureFixture
) -> None:
    """Less time left than one delivery's deadline plus the margin: nothing is claimed,
    nothing fails, the stop is a WARN, and the next tick folds everything."""
    for _ in range(2):
        assert deployment.post(function_url_event(SAMPLE.read_bytes()))["statusCode"] == 200
    margin_ms = deployment.fold.lambda_margin_s(deployment.fold._settings()) * 1000
    with caplog.at_level(logging.INFO, logger="healthlog"):
        report = deployment.tick(FakeContext(remaining_ms=int(margin_ms) - 1000))
    assert report["stopped"] == "budget"
    assert report["parsed"] == report["failed"] == 0
    pending = deployment.journal.deliveries(status=ParseStatus.PENDING)
    assert len(pending) == 2 and {d.attempts for d in pending} == {0}
    (stop,) = [r for r in caplog.records if r.getMessage() == "fold.pass"]
    assert stop.levelno == logging.WARNING
    assert stop.__dict__["stopped"] == "budget"
    report = deployment.tick()
    assert (report["parsed"], report["stopped"]) == (2, None)


def test_a_tick_while_another_pass_holds_the_fold_lock_returns_at_once(
    deployment: Deployment,
) -> None:
    deployment.post(function_url_event(SAMPLE.read_bytes()))
    with deployment.journal.fold_lock() as held:
        assert held
        assert deployment.tick() == {"running": True}
    assert len(deployment.journal.deliveries(status=ParseStatus.PENDING)) == 1


# --- the journal URL parameter ------------------------------------------------------------------


@pytest.mark.usefixtures("aws_env")
def test_a_plain_string_parameter_is_refused(ssm: SSMClient) -> None:
    name = f"/healthlog-test/{uuid.uuid4().hex[:8]}/plain"
    ssm.put_parameter(Name=name, Value="postgresql://u:secret@db/h", Type="String")
    with pytest.raises(ConfigError, match="must be a SecureString") as raised:
        secrets.resolve(Settings(journal_url_parameter=name))
    assert "secret" not in str(raised.value)


@pytest.mark.usefixtures("aws_env")
def test_a_missing_parameter_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="ParameterNotFound"):
        secrets.resolve(Settings(journal_url_parameter="/healthlog-test/no-such-parameter"))


@pytest.mark.usefixtures("aws_env")
def test_a_parameter_that_is_not_a_journal_url_is_refused_without_quoting_it(
    ssm: SSMClient,
) -> None:
    name = f"/healthlog-test/{uuid.uuid4().hex[:8]}/wrong"
    ssm.put_parameter(Name=name, Value="mysql://u:secret@db/h", Type="SecureString")
    with pytest.raises(ConfigError, match="must hold a postgresql://") as raised:
        secrets.resolve(Settings(journal_url_parameter=name))
    assert "secret" not in str(raised.value)


def test_an_unreachable_ssm_is_unavailable_not_a_configuration_error(
    dummy_aws_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", "http://127.0.0.1:9")  # discard: refused
    with pytest.raises(JournalUnavailable):
        secrets.fetch_parameter("/healthlog/journal-url")


def test_an_explicit_journal_url_wins_and_ssm_is_not_asked() -> None:
    def fetch(name: str) -> str:
        raise AssertionError("SSM was asked")

    explicit = Settings(journal_url="sqlite:///elsewhere.db", journal_url_parameter="/x")
    assert secrets.resolve(explicit, fetch) is explicit
    assert secrets.resolve(Settings(), fetch) == Settings()
