"""Accounts: their names, tokens, time zones and units, and moving them between journals.

The ``healthlog account`` commands are thin over this module:

* ``check_name``: what an account name may be (non-empty, at most ``NAME_MAX`` printable
  characters, no space at either end), checked at ``add`` and at ``import``;
* ``add``, ``rotate``, ``set_time_zone``, ``set_unit_system``: a new token is returned
  once, only its hash is stored; the journal's refusals come back as errors that say what
  happened and never carry a token;
* ``export_lines`` and ``read_lines``/``import_accounts``: every account as a JSON line
  (id, name, creation time, token hash, time zone, unit system), and back into another
  journal with the same ids, all or nothing (a line without a unit system, written before
  there were any, is metric);
* ``find``: an account chosen by name, or by its token (``Token``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import IO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from healthlog import tokens
from healthlog.errors import (
    AccountError,
    AccountIdTaken,
    AccountNameTaken,
    AccountNotFound,
    HealthlogError,
    TokenTaken,
)
from healthlog.journal.port import Journal
from healthlog.model import Account
from healthlog.reads import units

#: the longest account name
NAME_MAX = 64
EXPORT_FIELDS = ("id", "name", "created_at", "token_hash", "time_zone", "unit_system")
#: the fields a line must have to be imported (exports before unit systems had no
#: ``unit_system``: such an account is metric)
REQUIRED_FIELDS = EXPORT_FIELDS[:5]

# a fresh 256-bit token that another account holds: never seen, but never printed either
FRESH_HASH_TAKEN = "the new token is another account's (nothing changed); run the command again"


class BadName(HealthlogError):
    """The account name is not one an account may have."""


class Token(str):
    """An account chosen by its access token (``--token``), not by its name."""


def check_name(name: str) -> str:
    """``name`` if an account may be called so; BadName saying why not."""
    if not name:
        raise BadName("an account name cannot be empty")
    if len(name) > NAME_MAX:
        raise BadName(f"an account name is at most {NAME_MAX} characters")
    if not name.isprintable():
        raise BadName("an account name has printable characters only (no control characters)")
    if name != name.strip():
        raise BadName("an account name cannot begin or end with a space")
    return name


def find(journal: Journal, chosen: str | None) -> Account | None:
    """The account named ``chosen``, or whose token it is (``Token``; ``-``: read stdin).

    None when nothing was chosen; AccountNotFound (never repeating a token) otherwise.
    """
    if chosen is None:
        return None
    if isinstance(chosen, Token):
        token = sys.stdin.readline().strip() if chosen == "-" else chosen.strip()
        found = journal.account_by_token_hash(tokens.hash_token(token))
        if found is None:
            # the token is not repeated: it may be a real one, mistyped
            raise AccountNotFound("no account has this token")
        return found
    for account in journal.accounts():
        if account.name == chosen:
            return account
    raise AccountNotFound(f"no account named {chosen!r}")


def find_id(journal: Journal, chosen: str | None) -> str | None:
    """``find``'s account id (None when nothing was chosen)."""
    found = find(journal, chosen)
    return None if found is None else found.id


@dataclass(frozen=True, slots=True)
class WithToken:
    """An account and its new token, shown once."""

    account: Account
    token: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.account.id, "name": self.account.name, "token": self.token}


def add(journal: Journal, name: str) -> WithToken:
    """A new account with a new token; BadName, AccountNameTaken or TokenTaken."""
    check_name(name)
    token = tokens.new_token()
    try:
        account = journal.add_account(name, tokens.hash_token(token))
    except AccountNameTaken:
        raise AccountNameTaken(f"an account named {name!r} exists") from None
    except TokenTaken:
        raise TokenTaken(FRESH_HASH_TAKEN) from None
    return WithToken(account, token)


def rotate(journal: Journal, name: str) -> WithToken:
    """A new token for the account named ``name``; the old one stops working."""
    account = find(journal, name)
    assert account is not None
    token = tokens.new_token()
    try:
        journal.set_token_hash(account.id, tokens.hash_token(token))
    except AccountNotFound:  # removed since the lookup
        raise AccountNotFound(f"no account named {name!r}") from None
    except TokenTaken:
        raise TokenTaken(FRESH_HASH_TAKEN) from None
    return WithToken(account, token)


def check_zone(zone: str) -> str:
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise HealthlogError(f"no time zone named {zone!r} (an IANA name)") from None
    return zone


def set_time_zone(journal: Journal, name: str, zone: str) -> Account:
    """Read the account's times sent without an offset in ``zone`` from now on."""
    check_zone(zone)
    account = find(journal, name)
    assert account is not None
    try:
        journal.set_time_zone(account.id, zone)
    except AccountNotFound:  # removed since the lookup
        raise AccountNotFound(f"no account named {name!r}") from None
    return Account(account.id, account.name, account.created_at, zone, account.unit_system)


def set_unit_system(journal: Journal, name: str, system: str) -> Account:
    """Show the account's figures in ``system`` (metric, imperial) from now on."""
    checked = units.check_system(system)
    account = find(journal, name)
    assert account is not None
    try:
        journal.set_unit_system(account.id, checked)
    except AccountNotFound:  # removed since the lookup
        raise AccountNotFound(f"no account named {name!r}") from None
    return Account(account.id, account.name, account.created_at, account.time_zone, checked)


# --- export and import --------------------------------------------------------------------


def export_lines(journal: Journal) -> list[str]:
    """Every account as a JSON line with its token hash, for ``import_accounts``."""
    lines = []
    for account in journal.accounts():
        token_hash = journal.token_hash(account.id)
        if token_hash is None:  # removed since the listing
            continue
        row = {
            "id": account.id,
            "name": account.name,
            "created_at": account.created_at.isoformat(),
            "token_hash": token_hash,
            "time_zone": account.time_zone,
            "unit_system": account.unit_system,
        }
        lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    return lines


def read_lines(source: Iterable[str], where: str) -> list[tuple[Account, str]]:
    """The accounts of an export file with their token hashes; HealthlogError if malformed."""
    found = []
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            values = [row[k] for k in REQUIRED_FIELDS]
            if not all(isinstance(v, str) and v for v in values):
                raise ValueError("every field is a non-empty string")
            check_name(row["name"])
            created_at = datetime.fromisoformat(row["created_at"])
            if created_at.tzinfo is None:
                raise ValueError("created_at has no UTC offset")
            ZoneInfo(row["time_zone"])
            system = units.check_system(row.get("unit_system", units.DEFAULT))
        except (ValueError, KeyError, TypeError, ZoneInfoNotFoundError, HealthlogError) as exc:
            detail = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise HealthlogError(f"{where}, line {number}: not an account ({detail})") from None
        account = Account(row["id"], row["name"], created_at, row["time_zone"], system)
        found.append((account, row["token_hash"]))
    return found


def read_file(path: str, stdin: IO[str]) -> list[tuple[Account, str]]:
    """``read_lines`` of a file (``-``: ``stdin``); HealthlogError if it cannot be read."""
    if path == "-":
        return read_lines(stdin, "stdin")
    try:
        with open(path, encoding="utf-8") as source:
            return read_lines(source, path)
    except OSError as exc:
        raise HealthlogError(f"cannot read {path} ({exc.strerror})") from None


def conflicts(journal: Journal, wanted: list[tuple[Account, str]]) -> list[str]:
    """Why each account of ``wanted`` cannot be imported as it is (empty: all can)."""
    problems = []
    by_name = {a.name: a for a in journal.accounts()}
    ids_seen: set[str] = set()
    names_seen: set[str] = set()
    hashes_seen: set[str] = set()
    for account, token_hash in wanted:
        label = f"account {account.name!r} ({account.id})"
        if account.id in ids_seen or account.name in names_seen or token_hash in hashes_seen:
            problems.append(f"{label}: its id, name or token hash is in the file twice")
        ids_seen.add(account.id)
        names_seen.add(account.name)
        hashes_seen.add(token_hash)
        here = journal.get_account(account.id)
        if here is not None:
            if here.name != account.name:
                problems.append(f"{label}: this id is the account {here.name!r} here")
            elif journal.token_hash(account.id) != token_hash:
                problems.append(f"{label}: the account here has another token")
            continue
        named = by_name.get(account.name)
        if named is not None:
            problems.append(f"{label}: the name is taken here by the account {named.id}")
        holder = journal.account_by_token_hash(token_hash)
        if holder is not None:
            problems.append(f"{label}: the account {holder.name!r} here has this token")
    return problems


def _changed_here(exc: AccountError) -> str:
    """What an import met that the check before it had not seen."""
    if isinstance(exc, AccountNameTaken):
        return "the name is taken here now"
    if isinstance(exc, TokenTaken):
        return "another account here has this token now"
    if isinstance(exc, AccountIdTaken):
        return "this id is taken here now"
    return "the account is gone from here"


@dataclass(frozen=True, slots=True)
class Imported:
    imported: int
    skipped: int

    def as_dict(self) -> dict[str, int]:
        return {"imported": self.imported, "skipped": self.skipped}


def import_accounts(journal: Journal, wanted: list[tuple[Account, str]]) -> Imported:
    """Add ``wanted`` with their ids and hashes; those already here are skipped.

    Any clash imports nothing (HealthlogError listing them all).
    """
    problems = conflicts(journal, wanted)
    if problems:
        raise HealthlogError(
            "nothing imported, the accounts clash with this journal's:\n  " + "\n  ".join(problems)
        )
    imported = skipped = 0
    for account, token_hash in wanted:
        if journal.get_account(account.id) is not None:
            skipped += 1
            continue
        try:
            journal.add_account(
                account.name, token_hash, account_id=account.id, created_at=account.created_at
            )
            if account.time_zone != "UTC":
                journal.set_time_zone(account.id, account.time_zone)
            if account.unit_system != units.DEFAULT:
                journal.set_unit_system(account.id, account.unit_system)
        except AccountError as exc:
            # the journal changed since the check above
            label = f"account {account.name!r} ({account.id})"
            raise type(exc)(
                f"{label}: {_changed_here(exc)}; imported before it: {imported}"
            ) from None
        imported += 1
    return Imported(imported, skipped)
