"""The healthlog command: the local stack and the operator's tools.

Commands are thin: each reads its options (typed, so a bad value is a usage error
naming the option, exit status 2), opens the journal and archive with
``healthlog.ops.store.opened`` and hands the work to a module (``accounts``, ``names``,
``points_export``, ``records_export``, ``delivery_report``, ``coverage_report``,
``serve``...). Exit status: 0 done; 1 the command ran and could not do it (a port
taken, nothing to plot, an interrupted export); 2 a usage error or a refusal (a bad
option value, an unknown name or account, no journal where it points).

Adding a command (docs/operations.md, "Adding a command"): a function under
``@cli.command()`` (or ``@account.command()``), its options as click decorators, the
shared ones from here (``json_option``, ``account_options``, ``range_options``), and a
body that opens the journal with ``store.opened(obtain_settings(), MODE)``, calls a
module and prints with ``emit``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta, tzinfo
from importlib import metadata
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from healthlog import files
from healthlog.clock import UnknownZone
from healthlog.config import Settings
from healthlog.errors import HealthlogError, plotly_missing
from healthlog.journal.port import Journal
from healthlog.model import Account, ParseStatus
from healthlog.ops import accounts
from healthlog.reads import ranges, units

if TYPE_CHECKING:
    from healthlog.ops.store import Store

F = TypeVar("F", bound=Callable[..., Any])

STATUSES = [s.value for s in ParseStatus]
#: healthlog.reads.Resolution's values (spelled here: the parser imports no read module)
PLOT_RESOLUTIONS = ["raw", "minute", "hour", "day", "week", "month"]
EXPORT_FORMATS = ["csv", "jsonl", "geojson", "gpx"]
#: commands that run as servers: their logs are the service's, at HEALTHLOG_LOG_LEVEL
SERVERS = frozenset({"serve", "dashboard", "mcp"})

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# --- option types ------------------------------------------------------------------------


class BoundType(click.ParamType[Any]):
    """``--from``/``--to``: a date, an ISO date-time (with or without an offset), or a
    relative form (``today``, ``yesterday``, ``7d``, ``24h``); ``healthlog.reads.ranges``."""

    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, ranges.Bound):
            return value
        try:
            return ranges.parse(str(value))
        except ranges.BadBound as exc:
            self.fail(str(exc), param, ctx)


class OutputFile(click.ParamType[Any]):
    """A file to write: its folder must exist, and it must not be a folder itself."""

    name = "FILE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        path = Path(value)
        if path.is_dir():
            self.fail(f"{str(path)!r} is a folder, not a file", param, ctx)
        folder = path.parent
        if not folder.is_dir():
            self.fail(f"the folder {str(folder)!r} does not exist", param, ctx)
        if not os.access(folder, os.W_OK):
            self.fail(f"the folder {str(folder)!r} is not writable", param, ctx)
        return path


class PictureFile(OutputFile):
    name = "FILE.png|FILE.svg"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from healthlog.cli import pictures as plot

        try:
            return plot.check_output(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class AccountName(click.ParamType[Any]):
    name = "NAME"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return accounts.check_name(str(value))
        except accounts.BadName as exc:
            self.fail(f"{exc} (got {value!r})", param, ctx)


class ZoneName(click.ParamType[Any]):
    name = "ZONE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return accounts.check_zone(str(value))
        except HealthlogError as exc:
            self.fail(f"{exc}, such as Europe/Berlin", param, ctx)


class AgeType(click.ParamType[Any]):
    """``--older-than``: an amount of time ago, ``healthlog.reads.ranges``'s relative form
    (``90d``, ``12w``, ``36h``); more than nothing."""

    name = "AGE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, timedelta):
            return value
        try:
            bound = ranges.parse(str(value))
        except ranges.BadBound:
            bound = None
        if bound is None or bound.ago is None:
            self.fail(f"{str(value)!r} is not an age (forms: 90d, 12w, 36h, 30m)", param, ctx)
        if bound.ago <= timedelta(0):
            self.fail(
                f"{str(value)!r} is no age at all: give one above zero, such as 90d", param, ctx
            )
        return bound.ago


PORT = click.IntRange(1, 65535)


# --- shared options ------------------------------------------------------------------------


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")(f)


def account_options(f: F, *, stdin: str = "out of the process list") -> F:
    """``--account NAME`` or ``--token TOKEN``: which account the command sees."""
    f = click.option(
        "--token",
        metavar="TOKEN",
        help=f"Only the account this access token belongs to (-: read it from stdin, {stdin}).",
    )(f)
    return click.option("--account", metavar="NAME", help="Only this account.")(f)


def range_options(what: str) -> Callable[[F], F]:
    def decorate(f: F) -> F:
        f = click.option(
            "--to",
            "end",
            type=BoundType(),
            help=f"End of the range, left out: {what} before it. Same forms as --from.",
        )(f)
        return click.option(
            "--from",
            "start",
            type=BoundType(),
            help=f"Start of the range, included: {what} from it on. A date (2026-11-30), an "
            "ISO date-time with or without an offset (2026-11-30T08:00+01:00; without one, "
            "on the account's clock), today, yesterday, or an amount ago (90m, 24h, 7d, 2w).",
        )(f)

    return decorate


def chosen_account(account: str | None, token: str | None) -> str | None:
    """The ``--account``/``--token`` choice as ``accounts.find`` takes it."""
    if account is not None and token is not None:
        raise click.UsageError("choose the account with --account or --token, not both")
    return accounts.Token(token) if token is not None else account


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


def _log_level(settings: Settings, verbose: bool, server: bool) -> int:
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
                _log_level(obtain_settings(), True, ctx.info_name in SERVERS)
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


def _version() -> str:
    try:
        return metadata.version("healthlog")
    except metadata.PackageNotFoundError:  # pragma: no cover (run from a bare source tree)
        return "unknown"


@click.group("healthlog", cls=Group, context_settings=CONTEXT)
@click.version_option(_version(), "-V", "--version", prog_name="healthlog")
@click.option(
    "-C",
    "--home",
    type=click.Path(exists=True, file_okay=False),
    help="Run as if started in this folder: the default journal and archive are its "
    "var/healthlog.db and var/archive/.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log INFO lines too (on stderr).")
@click.pass_context
def cli(ctx: click.Context, home: str | None, verbose: bool) -> None:
    """Receive Apple Health data from Health Auto Export, and look after it.

    Configuration comes from HEALTHLOG_* environment variables (docs/configuration.md);
    by default the journal is var/healthlog.db and the archive var/archive/, in the
    folder the command runs in (or the one -C names).
    """
    if home is not None:
        os.chdir(home)
    from healthlog import log

    try:
        settings = Settings.from_env()
    except HealthlogError:
        log.setup("WARNING")
        return  # told by the command that needs them (obtain_settings), not by --help
    ctx.obj = settings
    server = ctx.invoked_subcommand in SERVERS
    log.setup(logging.getLevelName(_log_level(settings, verbose, server)))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status (0 done, 1 failed, 2 usage or refusal)."""
    try:
        result = cli.main(args=list(argv) if argv is not None else None, prog_name="healthlog",
                          standalone_mode=False)  # fmt: skip
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        click.echo("healthlog: stopped", err=True)
        return 1
    # a reader that closed the pipe (export | head): click stops quietly with exit 1
    return result if isinstance(result, int) else 0


# --- helpers of several commands --------------------------------------------------------------


def _zone_for(journal: Journal, account: Account | None, *bounds: ranges.Bound | None) -> tzinfo:
    """The zone that gives ``today``'s and ``yesterday``'s date: the account's (or the
    accounts' one). Every other bound needs none (docs/time.md)."""
    if not any(b is not None and b.needs_zone for b in bounds):
        return UTC  # unused
    if account is not None:
        names = {account.time_zone}
    else:
        names = {a.time_zone for a in journal.accounts()}
    if len(names) > 1:
        raise click.UsageError(
            "today and yesterday take their date on the account's time zone, and the "
            "accounts' time zones differ: choose one with --account NAME, or give a date "
            "(2026-11-30)"
        )
    try:
        return ranges.zone_named(names.pop() if len(names) == 1 else "UTC")
    except UnknownZone as exc:
        raise click.UsageError(
            f"{exc}: the account's time zone; set it with healthlog account set-tz"
        ) from None


def _range(
    journal: Journal,
    account: Account | None,
    start: ranges.Bound | None,
    end: ranges.Bound | None,
) -> ranges.Range:
    zone = _zone_for(journal, account, start, end)
    try:
        return ranges.Range.of(start, end, zone)
    except ranges.BadBound as exc:
        raise click.BadParameter(str(exc), param_hint="'--from'/'--to'") from None


def _bad_name(option: str, exc: HealthlogError) -> click.BadParameter:
    """A usage error naming ``option``: its list of known names comes from what phones
    posted, so a control character in one is escaped, never sent to the terminal."""
    from healthlog import terminal

    return click.BadParameter(terminal.shown(str(exc)), param_hint=f"'{option}'")


@contextlib.contextmanager
def _creating() -> Iterator[Store]:
    """The journal, made if there is none yet: saying where on stderr, when it does."""
    from healthlog.ops import store

    settings = obtain_settings()
    if not store.exists(settings):
        click.echo(f"healthlog: creating a new journal at {store.where(settings)}", err=True)
    with store.opened(settings, "create") as opened:
        yield opened


def _token_text(first_line: str, token: str) -> str:
    """A new token, shown once with the header the automation sends it in."""
    return (
        f"{first_line}\nheader for the HAE automation:\n  Authorization: Bearer {token}\n"
        "(shown only now: it is stored hashed)"
    )


@contextlib.contextmanager
def _output(path: Path | None) -> Iterator[IO[str]]:
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


# --- the local stack and the servers ----------------------------------------------------------


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Ingest listens here; 0.0.0.0 lets the phone reach it.")  # fmt: skip
@click.option("--port", type=PORT, default=8080, show_default=True, help="Ingest's port.")
@click.option("--fold-port", type=PORT, default=8081, show_default=True,
              help="The fold function's port, on 127.0.0.1.")  # fmt: skip
@click.option("--tick", type=click.FloatRange(min=0, min_open=True), default=60.0,
              show_default=True, help="Seconds between fold passes.")  # fmt: skip
@click.option("--dashboard-port", type=PORT, default=8082, show_default=True,
              help="The dashboard's port.")  # fmt: skip
@click.option("--dashboard-host", default="127.0.0.1", show_default=True,
              help="The dashboard listens here; anywhere else it asks for a sign-in.")  # fmt: skip
@click.option("--no-dashboard", is_flag=True, help="Do not start the dashboard.")
def serve(
    host: str,
    port: int,
    fold_port: int,
    tick: float,
    dashboard_port: int,
    dashboard_host: str,
    no_dashboard: bool,
) -> int:
    """Run the local stack: ingest, the fold and its tick, the dashboard.

    Makes the journal and a first account if there are none (its token is shown once),
    journals any body a crash left archived without its row, then takes deliveries until
    Ctrl-C or SIGTERM.
    """
    from healthlog.local import stack
    from healthlog.ops import store

    settings = obtain_settings()
    env = dict(os.environ)
    if not store.exists(settings):
        click.echo(f"creating a new journal at {store.where(settings)}")
    token = stack.prepare_stack(settings)
    if token is not None:  # shown (or kept) now: a start that fails below must not lose it
        _first_token(settings, token)
    options = stack.StackOptions(
        host,
        port,
        fold_port,
        tick,
        dashboard_port=None if no_dashboard else dashboard_port,
        dashboard_host=dashboard_host,
    )
    dashboard = {"started": False}

    def on_dashboard(started: bool) -> None:
        dashboard["started"] = started

    def banner() -> None:
        click.echo(f"healthlog is taking deliveries at  {stack.http_url(host, port)}")
        if options.dashboard_port is not None:
            if dashboard["started"]:
                url = stack.http_url(options.dashboard_host, options.dashboard_port)
                click.echo(f"the dashboard (read-only) is at    {url}")
                if options.dashboard_host not in ("127.0.0.1", "::1", "localhost"):
                    click.echo("  (it asks for an account's token and shows only that account)")
                if (missing := plotly_missing()) is not None:
                    click.echo(f"  ({missing})")
            else:
                click.echo(
                    f"the dashboard did not start (port {options.dashboard_port} taken?); "
                    "--dashboard-port N picks another"
                )
        if token is None:
            click.echo("Header for the HAE automation:")
            click.echo("  Authorization: Bearer <the token shown at first start>")
            click.echo("(lost it? `healthlog account rotate NAME` gives the account a new one)")
        if host == "127.0.0.1":
            click.echo(
                "Listening on 127.0.0.1 only: to let the phone reach it, run with --host 0.0.0.0"
            )
            click.echo("and use this machine's address on your network in the HAE app.")
        sys.stdout.flush()

    return stack.run_stack(options, env, banner, on_dashboard)


def _first_token(settings: Settings, token: str) -> None:
    """The first account's new token: on a terminal, shown; elsewhere (a service manager's
    log, a file) kept in a file of the user's only, and the log says where."""
    from healthlog.local import stack

    if sys.stdout.isatty():
        click.echo("A first account, default, was made. Add this header to the Health Auto")
        click.echo("Export automation:")
        click.echo(f"  Authorization: Bearer {token}")
        click.echo("(shown only now; `healthlog account rotate default` makes a new one)")
    else:
        kept = stack.keep_first_token(settings, token)
        click.echo(f"The first account's token is in {kept} (readable by you only).")
        click.echo("Add it to the Health Auto Export automation as the header")
        click.echo("  Authorization: Bearer <the token in that file>")
        click.echo("then delete the file; `healthlog account rotate default` makes a new one.")
    sys.stdout.flush()


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Listen here; any other address asks for a sign-in.")  # fmt: skip
@click.option("--port", type=PORT, default=8082, show_default=True, help="The port.")
@click.option("--account", metavar="NAME", help="Show only this account.")
@click.option(
    "--require-sign-in",
    is_flag=True,
    help="Ask for an account's token even on 127.0.0.1 (implied by any other --host).",
)
@click.option(
    "--secure-cookies",
    is_flag=True,
    help="Mark the session cookie Secure over plain HTTP too (behind a TLS proxy).",
)
@click.option("--ready-fd", type=int, hidden=True)  # healthlog serve: "I listen", on a pipe
def dashboard(
    host: str,
    port: int,
    account: str | None,
    require_sign_in: bool,
    secure_cookies: bool,
    ready_fd: int | None,
) -> int:
    """Serve the read-only dashboard: its pages and its JSON API."""
    from healthlog.dashboard import DashboardOptions, create_app
    from healthlog.dashboard import server as dashboard_server
    from healthlog.local import launcher, stack
    from healthlog.ops import store

    settings = obtain_settings()
    with store.opened(settings, "read", archive=True) as opened:
        if account is not None:
            accounts.find(opened.journal, account)  # AccountNotFound: exit 2, saying which
        sign_in = require_sign_in or not launcher.is_loopback(host)
        app = create_app(
            opened.journal,
            opened.archive,
            DashboardOptions(
                account_name=account,
                require_sign_in=sign_in,
                secure_cookies=secure_cookies,
                priority=settings.priority(),
                settings=settings,
            ),
        )

        def banner(bound: int) -> None:
            if ready_fd is not None:
                os.write(ready_fd, b"listening\n")
                os.close(ready_fd)
            click.echo(f"healthlog dashboard (read-only) at  {stack.http_url(host, bound)}")
            if sign_in:
                click.echo("sign in with an account's token; it shows only that account's data")
            if not launcher.is_loopback(host):
                click.echo("plain HTTP: put it behind TLS (a reverse proxy) or a VPN")
            if (missing := plotly_missing()) is not None:
                click.echo(missing)
            sys.stdout.flush()

        try:
            return dashboard_server.serve(app, host, port, banner)
        except launcher.PortTaken:
            raise stack.port_taken_at(host, port, "--port") from None


@cli.command()
@click.option("--http", is_flag=True, help="Streamable HTTP on 127.0.0.1 instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="With --http: a loopback address only.")  # fmt: skip
@click.option("--port", type=PORT, default=8765, show_default=True, help="With --http: the port.")
@functools.partial(account_options, stdin="with --http only: stdio carries the protocol")
def mcp(http: bool, host: str, port: int, account: str | None, token: str | None) -> int:
    """Serve read-only tools over one account's data to an assistant (MCP).

    Over stdio, or streamable HTTP with --http. It never writes to the journal. Needs
    the extra healthlog[mcp]; docs/mcp.md.
    """
    from healthlog.mcp import server as mcp_server
    from healthlog.ops import store
    from healthlog.reads import Reads

    chosen = chosen_account(account, token)
    if token == "-" and not http:  # noqa: S105 (stdin, not a password)
        raise click.UsageError("--token - reads stdin, which carries the MCP protocol: use --http")
    mcp_server.refuse_off_loopback(http, host)
    settings = obtain_settings()
    with store.opened(settings, "read") as opened:
        reads = Reads.of(
            opened.journal,
            accounts.find_id(opened.journal, chosen),
            opened.settings.priority(),
            # over stdio, --token - is refused (stdin carries the protocol), and a token
            # on the command line is in the process list: the name is what works there
            choose="--account NAME or --token -" if http else "--account NAME",
        )

        def banner(url: str) -> None:
            click.echo(f"healthlog MCP server (read-only) at  {url}", err=True)

        return mcp_server.serve(reads, http=http, host=host, port=port, on_ready=banner)


# --- accounts ------------------------------------------------------------------------------------


@cli.group(cls=Group)
def account() -> None:
    """Manage accounts: one per phone or person, each with its own token."""


@account.command("add")
@click.argument("name", type=AccountName())
@json_option
def account_add(name: str, as_json: bool) -> None:
    """Create an account and print its token, once.

    NAME: at most 64 printable characters, no space at either end.
    """
    with _creating() as opened:
        made = accounts.add(opened.journal, name)
    emit(as_json, made.as_dict(), _token_text(f"account {made.account.name} created", made.token))


@account.command("list")
@json_option
def account_list(as_json: bool) -> None:
    """List the accounts."""
    from healthlog.ops import store
    from healthlog.terminal import shown

    with store.opened(obtain_settings(), "read") as opened:
        found = opened.journal.accounts()
    data = [
        {"id": a.id, "name": a.name, "created_at": a.created_at.isoformat(),
         "time_zone": a.time_zone, "unit_system": a.unit_system}
        for a in found
    ]  # fmt: skip
    text = "\n".join(f"{shown(a.name)}\t{a.id}\t{a.time_zone}\t{a.unit_system}" for a in found)
    emit(as_json, data, text or "no accounts")


@account.command("set-tz")
@click.argument("name")
@click.argument("zone", type=ZoneName())
@json_option
def account_set_tz(name: str, zone: str, as_json: bool) -> None:
    """Read the account's times sent without an offset (CSV) in ZONE.

    ZONE is an IANA name, such as Europe/Berlin. It is also the clock --from/--to are
    read on when they have no offset.
    """
    from healthlog.ops import store

    with store.opened(obtain_settings(), "write") as opened:
        changed = accounts.set_time_zone(opened.journal, name, zone)
    data = {"id": changed.id, "name": changed.name, "time_zone": changed.time_zone}
    emit(as_json, data, f"{name}: times without an offset are read in {zone}")


@account.command("set-units")
@click.argument("name")
@click.argument("system", type=click.Choice(units.SYSTEMS), metavar="metric|imperial")
@json_option
def account_set_units(name: str, system: str, as_json: bool) -> None:
    """Show the account's figures (a workout's distance, pace, energy...) in SYSTEM.

    metric (the default): km, m, km/h, min/km, kcal, °C; imperial: mi, ft, mph, min/mi,
    kcal, °F. What the phone sent is kept as it was; this is how the dashboard and the
    MCP tools show it.
    """
    from healthlog.ops import store

    with store.opened(obtain_settings(), "write") as opened:
        changed = accounts.set_unit_system(opened.journal, name, system)
    data = {"id": changed.id, "name": changed.name, "unit_system": changed.unit_system}
    emit(as_json, data, f"{name}: figures are shown in {system} units")


@account.command("rotate")
@click.argument("name")
@json_option
def account_rotate(name: str, as_json: bool) -> None:
    """Give the account a new token, printed once; the old one stops working."""
    from healthlog.local import stack
    from healthlog.ops import store

    settings = obtain_settings()
    with store.opened(settings, "write") as opened:
        kept = stack.first_token_of(opened.journal, settings)
        made = accounts.rotate(opened.journal, name)
    first = f"account {name} has a new token; the old one no longer works"
    data: dict[str, str] = dict(made.as_dict())
    if kept is not None and kept[1] == made.account.id:
        # the file serve left for this account holds the token that just stopped working;
        # the new token is shown whatever becomes of it
        try:
            kept[0].unlink(missing_ok=True)
        except OSError as exc:
            why = exc.strerror or type(exc).__name__
            first += f"\n(could not remove {kept[0]}, which holds the old one: {why})"
            data["first_token_file_kept"] = str(kept[0])
        else:
            first += f"\n(removed {kept[0]}, which held the old one)"
            data["first_token_file_removed"] = str(kept[0])
    emit(as_json, data, _token_text(first, made.token))


@account.command("export")
@click.option("-o", "--output", type=OutputFile(),
              help="File to write, its owner's only (default: stdout).")  # fmt: skip
def account_export(output: Path | None) -> None:
    """Write every account as JSON lines, for `healthlog account import` elsewhere.

    Each line: id, name, created_at, token_hash, time_zone, unit_system. A token hash is
    the SHA-256 of a 256-bit random token and cannot be turned back into it, so the file
    lets no one send deliveries; keep it private all the same: whoever holds it can tell
    whether a token they come across belongs to one of these accounts.
    """
    from healthlog.ops import store

    with store.opened(obtain_settings(), "read") as opened:
        lines = accounts.export_lines(opened.journal)
    with _output(output) as out:
        out.writelines(lines)


@account.command("import")
@click.argument("file", metavar="FILE")
@json_option
def account_import(file: str, as_json: bool) -> None:
    """Add the accounts of an `account export` FILE (-: stdin), ids and token hashes kept.

    The archive's keys and the phones' tokens keep working. An account already here
    with the same id, name and token hash is skipped; any other clash imports nothing.
    Makes the journal if there is none yet (restoring a backup).
    """
    wanted = accounts.read_file(file, sys.stdin)
    with _creating() as opened:
        done = accounts.import_accounts(opened.journal, wanted)
    emit(
        as_json,
        done.as_dict(),
        f"accounts imported: {done.imported}; already here: {done.skipped}",
    )


# --- the state of the deliveries ------------------------------------------------------


@cli.command()
@click.option("--check", is_flag=True,
              help="Instead: the watch's rules that hold, one a line, and exit status 1; "
              "else OK and 0 (for Nagios, Uptime Kuma, healthchecks).")  # fmt: skip
@account_options
@json_option
def status(check: bool, account: str | None, token: str | None, as_json: bool) -> int:
    """Counts per status, the backlog, the uncovered keys, what the showcase holds."""
    from healthlog.cli import delivery_report
    from healthlog.ops import store

    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        account_id = accounts.find_id(opened.journal, chosen)
        if check:
            from healthlog.ops import watch

            found = watch.evaluate(opened.journal, opened.settings, account_id=account_id)
            emit(as_json, [f.as_dict() for f in found], watch.check_text(found))
            return 1 if found else 0
        summary = opened.journal.summary(account_id)
        removed = opened.journal.count_removed_bodies(account_id)
    emit(
        as_json,
        delivery_report.status_dict(summary, removed),
        delivery_report.status_text(summary, removed),
    )
    return 0


@cli.command()
@click.option("--until", type=click.DateTime(formats=["%Y-%m-%d"]),
              help="The day that stands for today (YYYY-MM-DD; default: today on the "
              "account's zone).")  # fmt: skip
@account_options
@json_option
def summary(until: datetime | None, account: str | None, token: str | None, as_json: bool) -> None:
    """Today and the last 7 days of each metric, and its trend, as the dashboard's home
    page says them: a cumulative metric's total, a discrete one's average; the trend is
    the last 90 days against the last 365 (docs/dashboard.md, "Summary")."""
    from healthlog.cli import summary_report
    from healthlog.ops import store
    from healthlog.reads import Reads, shapes, today

    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        journal = opened.journal
        reads = Reads.of(journal, accounts.find_id(journal, chosen), opened.settings.priority())
        day = until.date() if until is not None else today(reads.account.time_zone)
        cards = reads.summary(day)
    emit(
        as_json,
        {"today": day.isoformat(), "cards": [shapes.card_dict(c) for c in cards]},
        summary_report.text(cards, day),
    )


@cli.command()
@click.option("--dry-run", is_flag=True,
              help="Show what would be sent to each target; send and record nothing.")  # fmt: skip
@json_option
def watch(dry_run: bool, as_json: bool) -> None:
    """Evaluate the watch's rules once and tell the targets what changed.

    Each target of HEALTHLOG_NOTIFY_URLS (apprise URLs) gets one message when a rule
    starts to hold and one when it stops (recovered), never one per run: what each was
    told is kept in the journal. For cron or a systemd timer; `healthlog serve` does the
    same every tick. A target that cannot be reached is logged and tried at the next run.
    """
    from healthlog.ops import store
    from healthlog.ops import watch as watching

    with store.opened(obtain_settings(), "read" if dry_run else "write") as opened:
        report = watching.Watcher(opened.journal, opened.settings).run(dry_run=dry_run)
    emit(as_json, report.as_dict(), report.text(dry_run))


@cli.command()
@click.option("--status", "status_", type=click.Choice(STATUSES), help="Only this status.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True,
              help="At most this many, newest first.")  # fmt: skip
@account_options
@json_option
def deliveries(
    status_: str | None, limit: int, account: str | None, token: str | None, as_json: bool
) -> None:
    """List the deliveries, newest first."""
    from healthlog.cli import delivery_report
    from healthlog.ops import store

    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        account_id = accounts.find_id(opened.journal, chosen)
        rows = opened.journal.deliveries(
            status=ParseStatus(status_) if status_ else None,
            account_id=account_id,
            limit=limit,
            newest_first=True,
        )
    emit(
        as_json,
        [delivery_report.delivery_dict(d) for d in rows],
        delivery_report.deliveries_text(rows),
    )


@cli.command()
@json_option
def fold(as_json: bool) -> None:
    """Run one fold pass now and print the outcome counts."""
    from healthlog.cli import delivery_report
    from healthlog.fold.service import FoldService
    from healthlog.ops import store

    settings = obtain_settings()
    with store.opened(settings, "write", archive=True) as opened:
        service = FoldService(opened.journal, opened.archive, settings)
        report = service.run(wait_s=settings.pass_budget_s * 2)
    if report is None:
        raise HealthlogError("another fold pass kept the journal's fold lock; try again")
    data = report.as_dict()
    emit(as_json, data, delivery_report.fold_text(data))


@cli.command()
@click.option("--all", "every", is_flag=True, help="Every delivery.")
@click.option("--status", "status_", type=click.Choice(STATUSES),
              help="The deliveries of this status.")  # fmt: skip
@click.option("--uncovered", metavar="KEY", help="The deliveries with this uncovered key.")
@click.option(
    "--failure",
    metavar="CLASS",
    help="The failed deliveries of this class (crashed, deadline, unreadable...).",
)
@click.option("--dry-run", is_flag=True, help="Parse and report what would change; write nothing.")
@account_options
@json_option
def replay(
    every: bool,
    status_: str | None,
    uncovered: str | None,
    failure: str | None,
    dry_run: bool,
    account: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    """Re-fold deliveries through the same player as a pass.

    Choose them with exactly one of --all, --status, --uncovered or --failure. The
    showcase comes out the same whatever the order, so a replay is always safe.
    """
    from healthlog.cli import delivery_report, progress
    from healthlog.fold.replay import replay as replay_deliveries
    from healthlog.fold.service import make_player
    from healthlog.ops import store

    picked = [every, status_ is not None, uncovered is not None, failure is not None]
    if sum(picked) != 1:
        raise click.UsageError("choose the deliveries with one of --all, --status, "
                               "--uncovered KEY or --failure CLASS")  # fmt: skip
    chosen = chosen_account(account, token)
    settings = obtain_settings()
    bar = progress.Progress("replay", "deliveries", enabled=progress.shown_to_person(as_json))
    with store.opened(settings, "write", archive=True) as opened, bar:
        journal = opened.journal
        account_id = accounts.find_id(journal, chosen)
        player = make_player(journal, opened.archive, settings)
        # replay holds the fold lock like a pass: no delivery is folded by two at once
        with journal.fold_lock(wait_s=settings.pass_budget_s * 2) as held:
            if not held:
                raise HealthlogError("a fold pass kept the journal's fold lock; try again")
            report = replay_deliveries(
                journal,
                player,
                status=ParseStatus(status_) if status_ else None,
                uncovered_key=uncovered,
                account_id=account_id,
                failure=failure,
                dry_run=dry_run,
                progress=bar.update,
            )
    data = report.as_dict()
    emit(as_json, data, delivery_report.replay_text(data))


@cli.command()
@json_option
def reconcile(as_json: bool) -> None:
    """Journal the archived bodies that have no journal row (safe to run any time)."""
    from healthlog.cli import delivery_report, progress
    from healthlog.ops import reconcile as reconciling
    from healthlog.ops import store

    bar = progress.Progress(
        "reconcile", "archived bodies", enabled=progress.shown_to_person(as_json)
    )
    with store.opened(obtain_settings(), "write", archive=True) as opened, bar:
        report = reconciling.reconcile(opened.journal, opened.archive, progress=bar.update)
    data = report.as_dict()
    emit(as_json, data, delivery_report.reconcile_text(data))


@cli.command()
@click.option("--older-than", "older_than", type=AgeType(), required=True,
              help="Remove parsed deliveries' bodies received longer ago: 90d, 12w.")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Count what would be removed; remove nothing.")
@json_option
def retention(older_than: timedelta, dry_run: bool, as_json: bool) -> None:
    """Delete the archived bodies of parsed deliveries older than an age.

    Never a partial, failed or pending delivery's body (a later parser or a retry needs
    it). The journal keeps the row and marks the body removed before it is deleted, and
    the showcase keeps what it brought; replay and a rebuild from the archive skip it.
    docs/operations.md, "Retention".
    """
    from healthlog.cli import delivery_report, progress
    from healthlog.ops import store
    from healthlog.ops.retention import retain

    settings = obtain_settings()
    unit = "bodies found" if dry_run else "bodies removed"
    bar = progress.Progress("retention", unit, enabled=progress.shown_to_person(as_json))
    with (
        store.opened(settings, "write", archive=True) as opened,
        bar,
        # the fold lock, like replay: no replay reads a body while it is deleted
        opened.journal.fold_lock(wait_s=settings.pass_budget_s * 2) as held,
    ):
        if not held:
            raise HealthlogError("a fold pass kept the journal's fold lock; try again")
        report = retain(
            opened.journal, opened.archive, older_than, dry_run=dry_run, progress=bar.update
        )
    data = report.as_dict()
    emit(as_json, data, delivery_report.retention_text(data))


@cli.command("import")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@account_options
@click.option(
    "--no-fold",
    is_flag=True,
    help="Store and journal it only; the next fold pass (or `healthlog fold`) folds it.",
)
@json_option
def import_(
    path: Path, account: str | None, token: str | None, no_fold: bool, as_json: bool
) -> None:
    """Import the Health app's own export: years of history into the same store.

    PATH is the export.zip from "Export All Health Data", the folder it unzips to, or a
    bare export.xml. It becomes one delivery of the account (the only one, or
    --account): archived byte for byte, journalled, and folded in steps by the same fold
    as every delivery, so status, replay and a rebuild from the archive include it. An
    interrupted import goes on where it stopped at the next fold. Its size limit is
    HEALTHLOG_MAX_IMPORT_BYTES. Exit status 1 when the import failed, folded nothing,
    or its export.xml is cut or not well-formed (what was read before is folded).
    docs/history.md.
    """
    from healthlog.cli import delivery_report, progress
    from healthlog.ops import accounts, importer, store
    from healthlog.reads import Reads

    chosen = chosen_account(account, token)
    settings = obtain_settings()
    bar = progress.Progress("import: stored", "bytes", enabled=progress.shown_to_person(as_json))

    def heard(step: importer.ImportProgress) -> None:
        if step.phase == "fold" and bar.label != "import: folded":
            bar.label, bar.unit = "import: folded", "bytes of export.xml"
        bar.update(step.bytes_done, step.bytes_total)

    with store.opened(settings, "write", archive=True) as opened, bar:
        journal = opened.journal
        account_id = Reads.of(journal, accounts.find_id(journal, chosen)).account.id
        report = importer.import_export(
            path,
            journal=journal,
            archive=opened.archive,
            settings=settings,
            account_id=account_id,
            progress=heard,
            fold=not no_fold,
        )
    data = report.as_dict()
    emit(as_json, data, delivery_report.import_text(data))
    fault = delivery_report.import_fault(data)
    if fault is not None:
        raise CouldNot(fault)


@cli.command()
@json_option
def migrate(as_json: bool) -> None:
    """Bring the journal's schema up to this healthlog's (other writing commands do too)."""
    from healthlog.ops import store

    settings = obtain_settings()
    before = store.schema_version(settings)
    with store.opened(settings, "write"):
        pass
    after = store.schema_version(settings)
    data = {"from": before, "to": after}
    text = (
        f"the journal's schema was at version {after} already"
        if before == after
        else f"the journal's schema went from version {before} to {after}"
    )
    emit(as_json, data, text)


# --- the showcase --------------------------------------------------------------------


@cli.command()
@account_options
@json_option
def metrics(account: str | None, token: str | None, as_json: bool) -> None:
    """List the metrics (with their fields, units, points, first and last times) and the
    other sections (with their records), per account: the names --metric and --section
    take."""
    from healthlog.ops import store
    from healthlog.reads import names

    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        found = names.listing(opened.journal, accounts.find_id(opened.journal, chosen))
    emit(as_json, found, names.text(found))


@cli.command()
@click.option("--metric", help="One metric (default: every one); `healthlog metrics` lists them.")
@click.option(
    "--section", help="The records of one section (workouts, ecg, symptoms...) instead of points."
)
@range_options("points (or records) that start")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(EXPORT_FORMATS),
    default="csv",
    show_default=True,
    help="geojson and gpx: workouts with their routes (--section workouts).",
)
@click.option("-o", "--output", type=OutputFile(), help="File to write (default: stdout).")
@click.option(
    "--every-point",
    is_flag=True,
    help="Also the points that count nothing where sources overlap (with counted 0).",
)
@account_options
def export(
    metric: str | None,
    section: str | None,
    start: ranges.Bound | None,
    end: ranges.Bound | None,
    fmt: str,
    output: Path | None,
    every_point: bool,
    account: str | None,
    token: str | None,
) -> None:
    """Write the showcase's points, or a section's records, as CSV, JSON lines, GeoJSON
    or GPX.

    Times in the output are UTC, with the phone's offset beside them. The range is
    [--from, --to): a point is in when it starts at or after --from and before --to;
    a bound without an offset (2026-11-30) is on the phone's clock of each point, one
    with an offset that instant (docs/time.md).

    Where sources overlap (an import and HAE on the same day, an iPhone and a Watch
    counting the same steps), each point's `counted` column says what the dashboard,
    plots and summaries count of it, and points that count nothing are left out
    (docs/history.md, "One truth when sources overlap").
    """
    from healthlog import reads
    from healthlog.cli import progress
    from healthlog.ops import store
    from healthlog.reads import UnknownName, names, points_export, records_export

    if metric is not None and section is not None:
        raise click.UsageError("--metric and --section cannot go together")
    if fmt in records_export.ROUTE_FORMATS and section != "workouts":
        raise click.BadParameter(
            f"{fmt} draws routes: use it with --section workouts", param_hint="'--format'"
        )
    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        journal = opened.journal
        found = accounts.find(journal, chosen)
        account_id = None if found is None else found.id
        start_from, start_to = _range(journal, found, start, end).bounds()
        try:
            if section is not None and not names.check_section(journal, account_id, section):
                click.echo(f"healthlog: no {section} records yet: the export is empty", err=True)
            if metric is not None:
                names.check_metric(journal, account_id, metric)
        except UnknownName as exc:
            raise _bad_name("--section" if section is not None else "--metric", exc) from None
        bar = progress.Progress(
            "export",
            "records" if section is not None else "points",
            enabled=output is not None and progress.shown_to_person(),
        )
        with _output(output) as out, bar:
            if section is not None:
                records = journal.export_records(
                    account_id=account_id, section=section, start_from=start_from,
                    start_to=start_to,
                )  # fmt: skip
                records_export.write(bar.wrap(records), out, fmt)
            else:
                low, high = reads.widened(start_from, start_to)
                stored = journal.export_points(
                    account_id=account_id, metric=metric, start_from=low, start_to=high
                )
                points = reads.counted_stream(
                    journal, stored, opened.settings.priority(), keep_all=every_point,
                    within=(start_from, start_to),
                )  # fmt: skip
                points_export.write(bar.wrap(points), out, fmt)


@cli.command()
@click.argument("metric")
@click.option("--field", help="One field of the metric (default: the one that stands for it).")
@range_options("points that start")
@click.option("--resolution", type=click.Choice(PLOT_RESOLUTIONS),
              help="Bucket size (default: from the range).")  # fmt: skip
@click.option("--source", help="Only the points of this source.")
@click.option("-o", "--output", type=PictureFile(), required=True, help="The picture to write.")
@account_options
@json_option
def plot(
    metric: str,
    field: str | None,
    start: ranges.Bound | None,
    end: ranges.Bound | None,
    resolution: str | None,
    source: str | None,
    output: Path,
    account: str | None,
    token: str | None,
    as_json: bool,
) -> int:
    """Draw METRIC over time to a PNG or SVG picture (needs the extra healthlog[plot]).

    A discrete metric is its average over a min-max band, a cumulative one bars of its
    sums, sleep_analysis stages per night. Times are the phone's local times; a gap in
    the data is a gap in the line.
    """
    from healthlog.cli import pictures as plotting
    from healthlog.ops import store
    from healthlog.reads import Reads, Resolution, TooHeavy, UnknownName, names

    try:
        plotting.require_matplotlib()  # before anything is read
    except plotting.MissingExtra as exc:
        click.echo(f"healthlog: {exc}", err=True)
        return 1
    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        journal = opened.journal
        reads = Reads.of(journal, accounts.find_id(journal, chosen), opened.settings.priority())
        try:  # an unknown name is a usage error, as in export and coverage
            names.check_metric(journal, reads.account.id, metric)
        except UnknownName as exc:
            raise _bad_name("METRIC", exc) from None
        bounds = _range(journal, reads.account, start, end)
        try:
            drawn = plotting.plot_metric(
                reads,
                metric,
                output,
                field=field,
                start=bounds.start,
                end=bounds.end,
                resolution=Resolution(resolution) if resolution else None,
                source=source,
            )
        except UnknownName as exc:  # the metric is known: its field is not
            raise _bad_name("--field", exc) from None
        except TooHeavy as exc:
            raise click.BadParameter(str(exc), param_hint="'--resolution'") from None
        except plotting.NothingToPlot as exc:
            click.echo(f"healthlog: {exc}", err=True)
            return 1
    emit(as_json, {"wrote": str(drawn.path)}, f"wrote {drawn.path}")
    return 0


@cli.command()
@click.option("--metric", help="One metric (default: every one).")
@range_options("days")
@click.option(
    "--days",
    "per_day",
    is_flag=True,
    help="List every gap on a line of its own, and the late points of each day.",
)
@account_options
@json_option
def coverage(
    metric: str | None,
    start: ranges.Bound | None,
    end: ranges.Bound | None,
    per_day: bool,
    account: str | None,
    token: str | None,
    as_json: bool,
) -> None:
    """Per metric: days with data, gaps, and points that arrived late.

    Days are the phone's. A line per metric: the first and last day with data, the days
    with data, the gaps (days without data inside a stretch of data, no silence in it
    over 30 days, that has data on at least half its days) and the points HAE brought
    late (an export "Since Last Sync" would have missed them); then each metric's gaps
    in one line. --days lists every gap and the late points of each day; --json gives
    every day. Whole days: --from's day is in, and so is every day --to reaches into.
    docs/dashboard.md, "Data coverage".
    """
    from healthlog.cli import coverage_report
    from healthlog.ops import store
    from healthlog.reads import Reads, UnknownName

    chosen = chosen_account(account, token)
    with store.opened(obtain_settings(), "read") as opened:
        journal = opened.journal
        reads = Reads.of(journal, accounts.find_id(journal, chosen), opened.settings.priority())
        bounds = _range(journal, reads.account, start, end)
        try:
            found = reads.coverage(metric=metric, start=bounds.start, end=bounds.end)
        except UnknownName as exc:
            raise _bad_name("--metric", exc) from None
    emit(as_json, [c.as_dict() for c in found], coverage_report.text(found, per_day=per_day))

