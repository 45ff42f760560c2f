"""The ``healthlog account`` group: add, list, set-tz, set-units, rotate, export, import.

A new token is printed once, with the header the automation sends it in; the journal
keeps only its hash.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from healthlog.cli.common import Group, creating, emit, obtain_settings, writing_to
from healthlog.cli.options import AccountName, OutputFile, ZoneName, json_option
from healthlog.ops import accounts
from healthlog.reads import units


@click.group(cls=Group)
def account() -> None:
    """Manage accounts: one per phone or person, each with its own token."""


def _token_text(first_line: str, token: str) -> str:
    """A new token, shown once with the header the automation sends it in."""
    return (
        f"{first_line}\nheader for the HAE automation:\n  Authorization: Bearer {token}\n"
        "(shown only now: it is stored hashed)"
    )


@account.command("add")
@click.argument("name", type=AccountName())
@json_option
def account_add(name: str, as_json: bool) -> None:
    """Create an account and print its token, once.

    NAME: at most 64 printable characters, no space at either end.
    """
    with creating() as opened:
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
    with writing_to(output) as out:
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
    with creating() as opened:
        done = accounts.import_accounts(opened.journal, wanted)
    emit(
        as_json,
        done.as_dict(),
        f"accounts imported: {done.imported}; already here: {done.skipped}",
    )


COMMANDS: tuple[click.Command, ...] = (account,)
