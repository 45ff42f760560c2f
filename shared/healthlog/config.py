"""Settings.from_env(): the one reader of the environment.

Precedence: an explicit argument to ``Settings(...)``, then the environment variable,
then the default. Nothing else in healthlog reads ``os.environ``, and nothing writes
it. ``ENV_VARS`` is the list of variables read here; a test checks that
``template.yaml`` sets exactly these.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields

from healthlog import urls
from healthlog.errors import ConfigError
from healthlog.priority import DEFAULT_SOURCE_PRIORITY, SourcePriority, priority_fragments

MB = 1024 * 1024
DEFAULT_JOURNAL_URL = "sqlite:///var/healthlog.db"


@dataclass(frozen=True)
class Settings:
    # where the journal lives: sqlite:///var/healthlog.db or postgresql://...
    journal_url: str = DEFAULT_JOURNAL_URL
    # AWS: the name of an SSM SecureString parameter holding the journal URL (it carries
    # the database password, so it is kept out of the function's environment); read once
    # at cold start by ``healthlog.ops.secrets.resolve`` when ``journal_url`` is not set
    journal_url_parameter: str = ""
    # where bodies are archived: file://var/archive or s3://bucket/prefix
    archive_url: str = "file://var/archive"
    # an S3-compatible endpoint (moto, MinIO); empty means AWS itself
    s3_endpoint_url: str = ""
    # bodies larger than this get 413
    max_body_bytes: int = 100 * MB
    # an import of the Health app's export (``healthlog.ops.importer``) larger than this is
    # refused: the file, and for a zip what its members expand to (a zip bomb is refused
    # by its expanded size, before anything is stored)
    max_import_bytes: int = 32 * 1024 * MB
    # a fold in steps (an import) commits a step about every this many points
    fold_step_points: int = 50_000
    # ...and reads an export.xml at least this large in a process of its own, beside its
    # writes (two cores at work); 0: always
    fold_reader_process_bytes: int = 16 * MB
    # local stack: where ingest sends the wake-up bit (empty: no wake-up, the tick heals)
    fold_url: str = ""
    # local stack: the shared secret a wake-up must carry (header X-Healthlog-Wake) for
    # the fold function to run a pass; `healthlog serve` makes one per start. Empty: the
    # fold function, bound to 127.0.0.1, takes any local POST (a test's lone server)
    fold_secret: str = ""
    # AWS: the fold function ingest invokes asynchronously as the wake-up bit
    fold_function_name: str = ""
    # one delivery's fold budget, seconds; running past it makes the delivery failed
    fold_deadline_s: float = 120.0
    # folds that started and never wrote an outcome (the process died) before the
    # delivery is failed with class ``crashed``
    max_fold_attempts: int = 3
    # a served pass (local fold function) stops claiming work after this many seconds,
    # inside the server's graceful-stop window; the next tick or wake-up goes on
    pass_budget_s: float = 25.0
    # pending rows selected per page
    page_size: int = 100
    # how long SQLite waits on a lock before a retry, milliseconds
    busy_timeout_ms: int = 5000
    # retries of a transaction on a busy journal (after the first try) before JournalBusy
    journal_retries: int = 5
    # Retry-After on a 503, seconds
    retry_after_s: int = 30
    # header values are truncated to this many characters before they are stored or logged
    header_max_chars: int = 128
    # local stack (``healthlog serve``): a connection that sends nothing for this many
    # seconds, in its headers, its body or between requests, is closed (waitress's
    # channel_timeout); a request the function is working on is never cut
    client_idle_timeout_s: int = 60
    # reads: where cumulative samples of several sources overlap in time, which source
    # counts first: name fragments, first first, matched case-insensitively
    # (healthlog.reads.overlap; docs/history.md, "One truth when sources overlap")
    source_priority: str = DEFAULT_SOURCE_PRIORITY
    log_level: str = "INFO"
    # the watch (healthlog.ops.watch; docs/operations.md, "The watch"): each rule's threshold,
    # 0 turns the rule off. No delivery of an account for this many hours (HAE's daily
    # schedule plus two hours of slack)
    watch_no_delivery_h: float = 26.0
    # a metric that arrived daily, silent for this many days
    watch_silent_days: int = 3
    # the oldest pending delivery waiting longer than this many minutes
    watch_backlog_min: float = 30.0
    # the journal's or the archive's disk with less than this share free, percent
    watch_disk_free_percent: float = 5.0
    # requests refused (within a day) for a token a rotation replaced: the phone kept it
    watch_stale_tokens: int = 3
    # where the watch's notices go: apprise URLs (ntfy://, mailto://, json://, ...),
    # separated by commas or spaces; their secrets are never logged or stored. Empty:
    # nowhere (``healthlog status --check`` still tells)
    notify_urls: str = ""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for f in fields(cls):
            name = ENV_PREFIX + f.name.upper()
            if f.name in overrides:
                values[f.name] = overrides[f.name]
            elif name in env:
                values[f.name] = _convert(name, env[name], type(getattr(cls, f.name)))
        settings = cls(**values)  # type: ignore[arg-type]
        settings.validate()
        return settings

    def validate(self) -> None:
        for name, read, url in (
            ("JOURNAL_URL", urls.journal_location, self.journal_url),
            ("ARCHIVE_URL", urls.archive_location, self.archive_url),
        ):
            try:
                read(url)
            except ConfigError as exc:
                raise ConfigError(f"{ENV_PREFIX}{name}: {exc}") from None
        if (
            min(self.max_body_bytes, self.max_import_bytes, self.fold_step_points) <= 0
            or self.page_size <= 0
            or self.fold_reader_process_bytes < 0
            or self.max_fold_attempts <= 0
        ):
            raise ConfigError("sizes and counts must be positive")
        if (
            min(
                self.watch_no_delivery_h,
                self.watch_backlog_min,
                self.watch_silent_days,
                self.watch_stale_tokens,
            )
            < 0
            or not 0 <= self.watch_disk_free_percent < 100
        ):
            raise ConfigError(
                f"{ENV_PREFIX}WATCH_*: thresholds are 0 (the rule off) or positive, and"
                " WATCH_DISK_FREE_PERCENT below 100"
            )
        if self.client_idle_timeout_s <= 0:
            raise ConfigError(f"{ENV_PREFIX}CLIENT_IDLE_TIMEOUT_S must be a positive number")
        # a ConfigError naming the variable now, not at the first read
        priority_fragments(self.source_priority)

    def priority(self) -> SourcePriority:
        """``source_priority`` read: which source counts first where samples overlap."""
        return SourcePriority.parse(self.source_priority)


ENV_PREFIX = "HEALTHLOG_"
#: the header that carries the local stack's wake-up secret (Settings.fold_secret)
WAKE_HEADER = "X-Healthlog-Wake"
ENV_VARS: tuple[str, ...] = tuple(ENV_PREFIX + f.name.upper() for f in fields(Settings))


def _convert(name: str, raw: str, kind: type) -> object:
    try:
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number") from None
    return raw
