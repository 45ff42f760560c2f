"""The commands that run servers: ``serve`` (the local stack), ``dashboard`` and ``mcp``.

Their logs are the service's, at HEALTHLOG_LOG_LEVEL (``common.SERVERS``); each prints
where it listens once it does, and exits 1 when its port is taken.
"""

from __future__ import annotations

import functools
import os
import sys

import click

from healthlog.cli.common import obtain_settings
from healthlog.cli.options import PORT, account_options, chosen_account
from healthlog.config import Settings
from healthlog.errors import plotly_missing
from healthlog.ops import accounts


@click.command()
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


@click.command()
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


@click.command()
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


COMMANDS: tuple[click.Command, ...] = (serve, dashboard, mcp)
