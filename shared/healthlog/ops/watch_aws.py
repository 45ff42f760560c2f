"""The watch's notices in AWS: an SNS topic as a target, apprise for every other URL.

A target ``sns-topic://<topic ARN>`` (``sns-topic://arn:aws:sns:eu-west-1:123456789012:
healthlog-alerts``) is published to through boto3, with the function's role, in the
topic's own region: the title as the SNS Subject, the body as the Message, nothing else
(the watch's texts carry only the rule, the account's name, times and counts). The topic
fans the notice out to whatever the user subscribed (e-mail, SMS, HTTPS, a queue).
Another scheme than ``sns-topic`` is apprise's (``watch.apprise_send``): apprise's own
``sns://`` needs access keys in its URL, which a Lambda role makes needless. The Lambda
layer carries no apprise, so there such a URL is logged (``watch.target_unsupported``)
and not told.

The ARN is not a secret, but a log line names a target only by ``Target.shown``
(``#1 sns-topic (3fa2c1d0)``) like any other, and an SNS error only by its code
(``watch.sns_failed``, before the watch's own ``watch.notify_failed``).
``send`` never raises for a target that is down or refuses: it logs and answers False,
and the watch tries again at its next evaluation.
"""

from __future__ import annotations

import importlib.util
import logging
import re
from typing import Any

from healthlog import log
from healthlog.ops import watch
from healthlog.ops.watch import Target

logger = logging.getLogger("healthlog.watch")

SCHEME = "sns-topic"
PREFIX = f"{SCHEME}://"
#: SNS takes a Subject of less than 100 characters, with no line breaks or control codes
SUBJECT_MAX_CHARS = 99
# a standard topic's ARN (partition, region, account, name); FIFO topics need a group id
_ARN = re.compile(r"^arn:aws[a-z-]*:sns:([a-z0-9-]+):\d{12}:[A-Za-z0-9_-]{1,256}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
# SNS answers within seconds; a watch run is never held up by a slow endpoint for long
CONNECT_TIMEOUT_S = 3
READ_TIMEOUT_S = 10
ATTEMPTS = 3


def topic_arn(target: Target) -> str | None:
    """The topic's ARN of an ``sns-topic://`` target; None for any other scheme."""
    if not target.url.startswith(PREFIX):
        return None
    return target.url.removeprefix(PREFIX)


def subject(title: str) -> str:
    """``title`` as SNS takes it: one line, under 100 characters (cut with ``...``)."""
    line = _CONTROL.sub(" ", title).strip() or "healthlog"
    if len(line) <= SUBJECT_MAX_CHARS:
        return line
    return line[: SUBJECT_MAX_CHARS - 3].rstrip() + "..."


def send(target: Target, title: str, body: str) -> bool:
    """A ``watch.Send``: SNS for ``sns-topic://`` targets, apprise for the others."""
    arn = topic_arn(target)
    if arn is None:
        if importlib.util.find_spec("apprise") is None:
            # the Lambda layer carries no apprise: in AWS the topic is the target
            log.event(logger, logging.WARNING, "watch.target_unsupported", target=target.shown,
                      error="apprise_missing")  # fmt: skip
            return False
        return watch.apprise_send(target, title, body)
    return publish(target, arn, title, body)


def publish(target: Target, arn: str, title: str, body: str, client: Any = None) -> bool:
    """Publish one notice to the topic ``arn``; False (logged) if SNS did not take it."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    found = _ARN.match(arn)
    if found is None:
        log.event(logger, logging.WARNING, "watch.target_invalid", target=target.shown)
        return False
    if client is None:
        config = Config(
            connect_timeout=CONNECT_TIMEOUT_S,
            read_timeout=READ_TIMEOUT_S,
            retries={"mode": "standard", "total_max_attempts": ATTEMPTS},
        )
        # the topic's region, whatever the function's; AWS_ENDPOINT_URL_SNS if set
        client = boto3.client("sns", region_name=found.group(1), config=config)
    try:
        answer = client.publish(TopicArn=arn, Subject=subject(title), Message=body)
    except ClientError as e:
        code = str(e.response.get("Error", {}).get("Code", "")) or "error"
        log.event(logger, logging.WARNING, "watch.sns_failed", target=target.shown,
                  error=code)  # fmt: skip
        return False
    except BotoCoreError as e:
        log.event(logger, logging.WARNING, "watch.sns_failed", target=target.shown,
                  error=type(e).__name__)  # fmt: skip
        return False
    return bool(answer.get("MessageId"))
