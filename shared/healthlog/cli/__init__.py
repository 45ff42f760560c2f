"""The healthlog command: the ``cli`` group, ``main``, and the commands it is made of.

Commands are thin: each reads its options (typed, so a bad value is a usage error
naming the option, exit status 2), opens the journal and archive with
``healthlog.ops.store.opened`` and hands the work to a module (``accounts``, ``names``,
``points_export``, ``records_export``, ``delivery_report``, ``coverage_report``,
``stack``...). Exit status: 0 done; 1 the command ran and could not do it (a port
taken, nothing to plot, an interrupted export); 2 a usage error or a refusal (a bad
option value, an unknown name or account, no journal where it points).

One module per group of commands, each listing its commands in ``COMMANDS``:
``stack_commands`` (serve, dashboard, mcp), ``account_commands`` (the ``account``
group), ``queue_commands`` (status, deliveries, fold, replay, reconcile, retention,
watch, migrate), ``import_command`` and ``read_commands`` (summary, metrics, export,
plot, coverage); what they share is ``options`` (the typed options) and ``common``
(settings, ``emit``, the journal, the errors, ``Group``).

Adding a command (docs/operations.md, "Adding a command"): a function under
``@click.command()`` in its group's module, listed in that module's ``COMMANDS`` (or
under ``@account.command()``), its options as click decorators, the shared ones from
``options`` (``json_option``, ``account_options``, ``range_options``), and a body that
opens the journal with ``store.opened(obtain_settings(), MODE)``, calls a module and
prints with ``emit``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from importlib import metadata

import click

from healthlog.cli import (
    account_commands,
    import_command,
    queue_commands,
    read_commands,
    stack_commands,
)
from healthlog.cli.common import CONTEXT, SERVERS, Group, log_level
from healthlog.cli.options import PLOT_RESOLUTIONS
from healthlog.cli.stack_commands import serve
from healthlog.config import Settings
from healthlog.errors import HealthlogError

#: what the entry point and the tests take from here
__all__ = ["PLOT_RESOLUTIONS", "cli", "main", "serve"]


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
    log.setup(logging.getLevelName(log_level(settings, verbose, server)))


for _group in (stack_commands, account_commands, queue_commands, import_command, read_commands):
    for _command in _group.COMMANDS:
        cli.add_command(_command)
del _group, _command


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
