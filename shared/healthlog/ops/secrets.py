"""The journal URL from an SSM SecureString parameter, read once at cold start.

The journal URL carries the database password, so the AWS template never puts it in a
function's environment (anyone allowed to read the function's configuration would see
it). It sets ``HEALTHLOG_JOURNAL_URL_PARAMETER``, the name of a SecureString parameter,
and each Lambda handler calls ``resolve`` once per process, before it opens the journal:

    SETTINGS = secrets.resolve(Settings.from_env())

An explicit journal URL (``HEALTHLOG_JOURNAL_URL``, or an argument) wins and the
parameter is not read, so an operator's machine with the URL exported never needs SSM.
Without a parameter name nothing happens and boto3 is not imported: the local stack
pays nothing for this module.

Errors: a missing, unreadable or plain-text parameter is a ``ConfigError`` (deploy.md
tells how to create it); SSM itself unreachable or throttling is ``JournalUnavailable``,
which the next cold start tries again. Messages name the parameter, never its value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from healthlog.config import DEFAULT_JOURNAL_URL, ENV_PREFIX, Settings
from healthlog.errors import ConfigError, JournalUnavailable

if TYPE_CHECKING:
    from mypy_boto3_ssm import SSMClient

# the parameter is read before the first request is answered: fail in seconds, not minutes
CONNECT_TIMEOUT_S = 3
READ_TIMEOUT_S = 5
ATTEMPTS = 3

# errors that another try will not mend: the parameter, or the permission to read it
_CONFIG_CODES = frozenset(
    {
        "ParameterNotFound",
        "ParameterVersionNotFound",
        "AccessDeniedException",
        "ValidationException",
        "InvalidKeyId",
    }
)

Fetch = Callable[[str], str]


def resolve(settings: Settings, fetch: Fetch | None = None) -> Settings:
    """``settings`` with ``journal_url`` read from its parameter, when that applies."""
    name = settings.journal_url_parameter
    if not name or settings.journal_url != DEFAULT_JOURNAL_URL:
        return settings
    url = (fetch or fetch_parameter)(name)
    resolved = dataclasses.replace(settings, journal_url=url)
    try:
        resolved.validate()
    except ConfigError:
        raise ConfigError(
            f"the SSM parameter {name} ({ENV_PREFIX}JOURNAL_URL_PARAMETER) must hold a "
            "postgresql:// (or sqlite:///) URL"
        ) from None
    return resolved


def fetch_parameter(name: str, client: SSMClient | None = None) -> str:
    """The decrypted value of the SecureString parameter ``name``.

    The client comes from boto3's usual chain: the function's role and region in
    Lambda (an endpoint may be given by ``AWS_ENDPOINT_URL_SSM``, as the tests do).
    """
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    if client is None:
        config = Config(
            connect_timeout=CONNECT_TIMEOUT_S,
            read_timeout=READ_TIMEOUT_S,
            retries={"mode": "standard", "total_max_attempts": ATTEMPTS},
        )
        client = boto3.client("ssm", config=config)
    try:
        parameter = client.get_parameter(Name=name, WithDecryption=True)["Parameter"]
    except ClientError as e:
        code = str(e.response.get("Error", {}).get("Code", "")) or "error"
        if code in _CONFIG_CODES:
            raise ConfigError(f"the SSM parameter {name} cannot be read ({code})") from e
        raise JournalUnavailable(f"SSM did not answer for the parameter {name} ({code})") from e
    except BotoCoreError as e:
        raise JournalUnavailable(
            f"SSM did not answer for the parameter {name} ({type(e).__name__})"
        ) from e
    if parameter.get("Type") != "SecureString":
        # a plain String would show the database password to anyone who may list parameters
        raise ConfigError(
            f"the SSM parameter {name} must be a SecureString (it holds a password); "
            "create it with: aws ssm put-parameter --type SecureString ..."
        )
    return parameter.get("Value", "")
