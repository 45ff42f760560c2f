"""The watch function (functions/watch/main.py) against moto's SNS, SQS and SSM.

As in ``test_lambda_handlers``, the handler is imported in-process the way Lambda's
cold start does, with the environment template.yaml gives ``WatchFunction`` (what
CloudFormation fills in is filled in here: the topic's ARN, the journal URL parameter).
The topic is moto's, over its HTTP server (``tests/s3.py``), with an SQS queue subscribed
to it, as a user's e-mail or SMS subscription would be: what the queue receives is what
the topic published. SNS delivers to SQS within ``Publish``, so once the handler returns
the queue holds every notice; it is read without waiting. The journal is a real SQLite
file; its one account has had no delivery for three days.
"""

from __future__ import annotations

import json
import logging
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import boto3
import pytest
from healthlog import ids, tokens
from healthlog.journal.sqlite import SqliteJournal
from healthlog.model import NewDelivery, ParseStatus, Point
from healthlog.ops import watch_aws
from healthlog.ops.watch import Target
from werkzeug.test import EnvironBuilder

from tests.integration.servers import ROOT
from tests.integration.test_lambda_handlers import (
    REGION,
    FakeContext,
    cold_start,
    lambda_env,
    load_event,
    ssm,
)
from tests.integration.test_watch_notify import drain, webhook

__all__ = ["ssm"]  # a fixture, used by name

SOURCE = "Alice's Apple Watch"
VALUE = 61.5
URL_SECRET = "hooksecretXYZ"


def client(service: str, endpoint: str) -> Any:
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name=REGION
    )
    return session.client(service, endpoint_url=endpoint)


@dataclass
class Topic:
    """An SNS topic in moto with an SQS queue subscribed: what the topic publishes."""

    arn: str
    sns: Any
    sqs: Any
    queue_url: str

    @classmethod
    def made(cls, endpoint: str, name: str) -> Topic:
        sns, sqs = client("sns", endpoint), client("sqs", endpoint)
        arn = sns.create_topic(Name=name)["TopicArn"]
        queue_url = sqs.create_queue(QueueName=f"{name}-inbox")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
        sns.subscribe(TopicArn=arn, Protocol="sqs",
                      Endpoint=queue_arn["Attributes"]["QueueArn"])  # fmt: skip
        return cls(arn, sns, sqs, queue_url)

    @property
    def url(self) -> str:
        return f"sns-topic://{self.arn}"

    def published(self) -> list[dict[str, Any]]:
        """Every notification the queue has (SNS's envelope: Subject, Message), taken."""
        found = []
        while True:
            got = self.sqs.receive_message(QueueUrl=self.queue_url, MaxNumberOfMessages=10)
            messages = got.get("Messages", [])
            if not messages:
                return found
            for m in messages:
                found.append(json.loads(m["Body"]))
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=m["ReceiptHandle"])


class Deployment:
    """The watch function over a journal with one silent account, and its topic."""

    def __init__(self, folder: Path, endpoint: str, ssm_client: Any) -> None:
        self.endpoint = endpoint
        self.path = folder / "journal.db"
        self.journal = SqliteJournal(str(self.path))
        self.journal.migrate()
        self.token = tokens.new_token()
        three_days_ago = ids.now() - timedelta(days=3)
        self.account = self.journal.add_account(
            "alice", tokens.hash_token(self.token), created_at=three_days_ago
        )
        self.parameter = f"/healthlog-test/{uuid.uuid4().hex[:8]}/journal-url"
        ssm_client.put_parameter(Name=self.parameter, Value=f"sqlite:///{self.path}",
                                 Type="SecureString")  # fmt: skip
        self.topic = Topic.made(endpoint, f"healthlog-alerts-{uuid.uuid4().hex[:8]}")
        self.functions: list[ModuleType] = []

    def function(self, monkeypatch: pytest.MonkeyPatch, notify_urls: str) -> ModuleType:
        """A cold start of the watch function with the template's environment."""
        filled = {
            "HEALTHLOG_ARCHIVE_URL": "s3://healthlog-archive-not-read-by-the-watch",
            "HEALTHLOG_JOURNAL_URL_PARAMETER": self.parameter,
            "HEALTHLOG_LOG_LEVEL": "INFO",
            "HEALTHLOG_NOTIFY_URLS": notify_urls,
            "HEALTHLOG_WATCH_NO_DELIVERY_H": "26",
        }
        with monkeypatch.context() as env:
            for name, value in lambda_env("WatchFunction", filled).items():
                env.setenv(name, value)
            module = cold_start("watch_main", ROOT / "functions" / "watch" / "main.py")
            module._settings()  # read at the first invocation, as Lambda's environment is
        self.functions.append(module)
        return module

    def invoke(self, function: ModuleType) -> dict[str, int]:
        result: dict[str, int] = function.handler(load_event("scheduled_event"), FakeContext())
        return result

    def deliver(self) -> None:
        """A delivery, folded, with a point whose value and source no notice may carry."""
        at = ids.now()
        delivery_id = ids.new_delivery_id(at)
        new = NewDelivery(delivery_id, self.account.id, at, f"x/{delivery_id}.json", 10,
                          "application/json", ())  # fmt: skip
        assert self.journal.insert_delivery(new)
        start = (at - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.000000Z")
        point = Point("heart_rate", "avg", SOURCE, start, qty=VALUE, utc_offset=60, end=None,
                      text=None, unit="count/min", extra=None)  # fmt: skip
        self.journal.write_outcome(delivery_id, expected=ParseStatus.PENDING,
                                   status=ParseStatus.PARSED, uncovered=(), failure=None,
                                   points=[point])  # fmt: skip

    def close(self) -> None:
        for module in self.functions:
            if module._journal.cache_info().currsize:
                module._journal().close()
        self.journal.close()


@pytest.fixture
def deployment(
    dummy_aws_env: None,
    monkeypatch: pytest.MonkeyPatch,
    s3_endpoint: str,
    ssm: Any,
    tmp_path: Path,
) -> Iterator[Deployment]:
    """What Lambda's environment gives boto3 (a region), with SSM and SNS pointed here."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SSM", s3_endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_SNS", s3_endpoint)
    healthlog_logger = logging.getLogger("healthlog")
    saved = (list(healthlog_logger.handlers), healthlog_logger.level)
    made = Deployment(tmp_path, s3_endpoint, ssm)
    yield made
    made.close()
    healthlog_logger.handlers[:], healthlog_logger.level = saved


def assert_clean(deployment: Deployment, *notices: tuple[str, str]) -> None:
    """No health value, no source name, no token or URL secret in a notice."""
    for subject, message in notices:
        for secret in (str(VALUE), SOURCE, "Watch", deployment.token, URL_SECRET):
            assert secret not in subject and secret not in message, (secret, subject)


def texts(published: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(p["Subject"], p["Message"]) for p in published]


def healthlog_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() + repr(r.__dict__)
        for r in caplog.records
        if r.name.split(".")[0] == "healthlog"
    ]


def test_the_topic_is_told_once_when_deliveries_stop_and_once_when_they_resume(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    topic = deployment.topic
    function = deployment.function(monkeypatch, topic.url)

    with caplog.at_level(logging.INFO, logger="healthlog"):
        assert deployment.invoke(function) == {"holds": 1, "sent": 1, "failed": 0, "targets": 1}
    started = texts(topic.published())
    assert [s for s, _ in started] == ["healthlog no_delivery alice"]
    assert "no delivery for 72 h (none since the account was made)" in started[0][1]
    assert "Manual Export" in started[0][1]
    (run,) = [r for r in caplog.records if r.getMessage() == "watch.run"]
    assert (run.__dict__["sent"], run.__dict__["holds"]) == (1, 1)
    # the log names the target by its scheme and hash, never by its ARN
    assert not [line for line in healthlog_lines(caplog) if topic.arn.split(":")[-1] in line]

    # the rule still holds: every run after the first sends nothing
    for _ in range(2):
        assert deployment.invoke(function)["sent"] == 0
    assert topic.published() == []

    deployment.deliver()
    assert deployment.invoke(function) == {"holds": 0, "sent": 1, "failed": 0, "targets": 1}
    recovered = texts(topic.published())
    assert [s for s, _ in recovered] == ["healthlog no_delivery alice: recovered"]
    assert recovered[0][1].startswith("It no longer holds")
    assert deployment.invoke(function)["sent"] == 0
    assert topic.published() == []
    assert_clean(deployment, *started, *recovered)


def test_a_restart_of_the_function_tells_nothing_twice(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What was told is in the journal, not in the process: a new cold start knows it."""
    first = deployment.function(monkeypatch, deployment.topic.url)
    assert deployment.invoke(first)["sent"] == 1
    second = deployment.function(monkeypatch, deployment.topic.url)
    assert deployment.invoke(second) == {"holds": 1, "sent": 0, "failed": 0, "targets": 1}
    assert len(deployment.topic.published()) == 1


def test_a_url_that_is_not_a_topic_goes_to_apprise(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The composite send: the topic through SNS, a json:// webhook through apprise."""
    with webhook() as (port, hooks):
        urls = f"{deployment.topic.url}, json://127.0.0.1:{port}/hooks/{URL_SECRET}"
        function = deployment.function(monkeypatch, urls)
        assert deployment.invoke(function) == {"holds": 1, "sent": 2, "failed": 0, "targets": 2}
        (hook,) = drain(hooks, 1)
    assert hook["path"] == f"/hooks/{URL_SECRET}"
    (published,) = texts(deployment.topic.published())
    assert (hook["title"], hook["message"]) == published
    assert_clean(deployment, published)


def test_a_topic_that_is_gone_is_logged_not_raised_and_told_at_the_next_run(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"healthlog-later-{uuid.uuid4().hex[:8]}"
    arn = deployment.topic.arn.rsplit(":", 1)[0] + f":{name}"
    function = deployment.function(monkeypatch, f"sns-topic://{arn}")

    with caplog.at_level(logging.INFO, logger="healthlog"):
        assert deployment.invoke(function) == {"holds": 1, "sent": 0, "failed": 1, "targets": 1}
    (refused,) = [r for r in caplog.records if r.getMessage() == "watch.sns_failed"]
    assert refused.__dict__["error"] == "NotFound"
    (failed,) = [r for r in caplog.records if r.getMessage() == "watch.notify_failed"]
    assert failed.__dict__["target"] == refused.__dict__["target"]
    assert failed.__dict__["target"].startswith("#1 sns-topic (")
    (run,) = [r for r in caplog.records if r.getMessage() == "watch.run"]
    assert run.levelno == logging.WARNING
    assert not [line for line in healthlog_lines(caplog) if name in line]

    later = Topic.made(deployment.endpoint, name)  # the same ARN, now there
    assert later.arn == arn
    assert deployment.invoke(function)["sent"] == 1
    assert [s for s, _ in texts(later.published())] == ["healthlog no_delivery alice"]


def test_a_title_too_long_for_sns_is_cut_and_still_published(deployment: Deployment) -> None:
    """SNS refuses a Subject of 100 characters or more, and one with a line break."""
    topic = deployment.topic
    target = Target(topic.url, 1)
    title = "healthlog no_delivery " + "a" * 120 + "\nsecond line"
    assert watch_aws.send(target, title, "the body")
    ((subject, message),) = texts(topic.published())
    assert len(subject) == watch_aws.SUBJECT_MAX_CHARS and subject.endswith("...")
    assert subject.startswith("healthlog no_delivery aaa") and "\n" not in subject
    assert message == "the body"
    # a short one goes as it is
    assert watch_aws.send(target, "healthlog backlog", "b")
    assert texts(topic.published()) == [("healthlog backlog", "b")]


def test_an_sns_target_that_is_no_topic_arn_is_refused_without_a_request(
    deployment: Deployment, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="healthlog"):
        assert not watch_aws.send(Target("sns-topic://healthlog-alerts", 1), "t", "b")
    (invalid,) = [r for r in caplog.records if r.getMessage() == "watch.target_invalid"]
    assert invalid.__dict__["target"].startswith("#1 sns-topic (")
    assert deployment.topic.published() == []


def test_the_functions_framework_target_runs_one_evaluation(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    function = deployment.function(monkeypatch, deployment.topic.url)
    get = EnvironBuilder(method="GET", path="/").get_request()
    assert function.watch(get)[1] == 405
    assert deployment.topic.published() == []
    body, status, headers = function.watch(EnvironBuilder(method="POST", path="/").get_request())
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"holds": 1, "sent": 1, "failed": 0, "targets": 1}
    assert len(deployment.topic.published()) == 1


def test_without_apprise_as_in_the_layer_another_url_is_logged_and_the_topic_told(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The Lambda layer carries no apprise: a json:// URL there is not told, and says so."""
    monkeypatch.setitem(sys.modules, "apprise", None)  # what an import finds in the layer
    urls = f"json://127.0.0.1:9/hooks/{URL_SECRET} {deployment.topic.url}"
    function = deployment.function(monkeypatch, urls)
    with caplog.at_level(logging.INFO, logger="healthlog"):
        assert deployment.invoke(function) == {"holds": 1, "sent": 1, "failed": 1, "targets": 2}
    (unsupported,) = [r for r in caplog.records if r.getMessage() == "watch.target_unsupported"]
    assert unsupported.__dict__["target"].startswith("#1 json (")
    assert not [line for line in healthlog_lines(caplog) if URL_SECRET in line]
    assert len(deployment.topic.published()) == 1
