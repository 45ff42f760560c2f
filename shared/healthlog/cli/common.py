"""What running any command takes: its settings, its journal, its output and its errors.

``obtain_settings`` reads the settings once per invocation; ``creating`` opens the
journal, making it if there is none; ``emit`` prints text or JSON; ``writing_to`` is the
file ``-o`` names or stdout; ``Refused``/``CouldNot`` and ``bad_name`` are the one-line
refusals and usage errors; ``Group`` gives every command ``--verbose`` and turns a
HealthlogError into its message and exit status.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from healthlog import files
from healthlog.cli.options import F
from healthlog.config import Settings
from healthlog.errors import HealthlogError

if TYPE_CHECKING:
    from healthlog.ops.store import Store

#: commands that run as servers: their logs are the service's, at HEALTHLOG_LOG_LEVEL
SERVERS = frozenset({"serve", "dashboard", "mcp"})

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# --- running a command -----------------------------------------------------------------------


def obtain_settings() -> Settings:
    """This invocation's settings (read once, after ``-C`` moved to its folder)."""
    ctx = click.get_current_context()
    found = ctx.find_object(Settings)
    if found is None:
        found = Settings.from_env()
        ctx.find_root().obj = found
    return found


def emit(as_json: bool, data: Any, text: str) -> None:
    if as_json:
        import json

        click.echo(json.dumps(data, indent=2, default=str, ensure_ascii=False))
    else:
        click.echo(text)


def log_level(settings: Settings, verbose: bool, server: bool) -> int:
    """Servers log at HEALTHLOG_LOG_LEVEL; other commands WARNING and up (-v: INFO)."""
    configured = logging.getLevelName(settings.log_level.upper())
    configured = configured if isinstance(configured, int) else logging.INFO
    if server:
        return configured
    return min(configured, logging.INFO) if verbose else max(configured, logging.WARNING)


def _verbose_option(f: F) -> F:
    def turn_on(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        if value:
            logging.getLogger("healthlog").setLevel(
                log_level(obtain_settings(), True, ctx.info_name in SERVERS)
            )
        return value

    return click.option(
        "-v",
        "--verbose",
        is_flag=True,
        expose_value=False,
        callback=turn_on,
        help="Log INFO lines too (on stderr).",
    )(f)


class Refused(click.ClickException):
    """A refusal of healthlog's own, shown as one line: ``healthlog: ...``; exit 2."""

    exit_code = 2

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"healthlog: {self.message}", err=True)


class CouldNot(Refused):
    """The command ran and could not do it (a port taken...); exit 1."""

    exit_code = 1


class Group(click.Group):
    """Every command gets ``--verbose`` too, so it may follow the command's name; a
    HealthlogError from any command is its one-line message and exit status (2 unless
    the error says otherwise), never a traceback."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        if not isinstance(cmd, click.Group):
            _verbose_option(cmd)
        super().add_command(cmd, name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except HealthlogError as exc:
            failed = CouldNot if getattr(exc, "exit_status", 2) == 1 else Refused
            raise failed(str(exc)) from None


# --- helpers of several commands --------------------------------------------------------------


def bad_name(option: str, exc: HealthlogError) -> click.BadParameter:
    """A usage error naming ``option``: its list of known names comes from what phones
    posted, so a control character in one is escaped, never sent to the terminal."""
    from healthlog import terminal

    return click.BadParameter(terminal.shown(str(exc)), param_hint=f"'{option}'")


@contextlib.contextmanager
def creating() -> Iterator[Store]:
    """The journal, made if there is none yet: saying where on stderr, when it does."""
    from healthlog.ops import store

    settings = obtain_settings()
    if not store.exists(settings):
        click.echo(f"healthlog: creating a new journal at {store.where(settings)}", err=True)
    with store.opened(settings, "create") as opened:
        yield opened


@contextlib.contextmanager
def writing_to(path: Path | None) -> Iterator[IO[str]]:
    """The file ``-o`` names (its owner's only: exports hold health data), else stdout;
    on a terminal, what a phone posted (a source, a name) cannot drive it."""
    if path is None:
        if sys.stdout.isatty():
            from healthlog import terminal

            yield terminal.Shown(sys.stdout)  # type: ignore[misc]
        else:
            yield sys.stdout
        return
    try:
        fd = files.private_file(path, os.O_WRONLY | os.O_TRUNC)
    except OSError as exc:
        raise click.BadParameter(
            f"cannot write {str(path)!r} ({exc.strerror})", param_hint="'--output' / '-o'"
        ) from None
    with open(fd, "w", newline="", encoding="utf-8") as out:
        yield out
