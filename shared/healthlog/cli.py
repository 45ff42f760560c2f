"""The ``healthlog`` command: the local stack and the operator's tools.

Every command a script would read takes ``--json``. Configuration comes from the
environment through ``Settings.from_env()`` (see docs/configuration.md).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import sys
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from healthlog import ids, log
from healthlog.config import Settings
from healthlog.errors import (
    AccountError,
    AccountIdTaken,
    AccountNameTaken,
    AccountNotFound,
    HealthlogError,
    TokenTaken,
)
from healthlog.fold.classify import CRASHED
from healthlog.journal.port import Journal, StoredPoint
from healthlog.model import Account, Delivery, ParseStatus
from healthlog.terminal import shown

STATUSES = [s.value for s in ParseStatus]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
        log.setup(settings.log_level if not getattr(args, "quiet", False) else "WARNING")
        result: int = args.run(args, settings)
        return result
    except HealthlogError as exc:
        print(f"healthlog: {exc}", file=sys.stderr)
        return 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="healthlog", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("serve", help="run the local stack (ingest + fold + tick)")
    p.add_argument("--host", default="127.0.0.1", help="ingest listens here (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="ingest port (default 8080)")
    p.add_argument("--fold-port", type=int, default=8081, help="fold port, on 127.0.0.1")
    p.add_argument("--tick", type=float, default=60.0, help="seconds between passes (60)")
    p.add_argument(
        "--dashboard-port", type=int, default=8082, help="the dashboard's port (default 8082)"
    )
    p.add_argument(
        "--dashboard-host",
        default="127.0.0.1",
        help="the dashboard listens here (default 127.0.0.1; elsewhere it asks for a sign-in)",
    )
    p.add_argument("--no-dashboard", action="store_true", help="do not start the dashboard")
    p.set_defaults(run=cmd_serve)

    p = sub.add_parser("dashboard", help="serve the read-only dashboard (pages and /api)")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="listen here (default 127.0.0.1; any other address requires a sign-in)",
    )
    p.add_argument("--port", type=int, default=8082, help="port (default 8082)")
    p.add_argument("--account", metavar="NAME", help="show only this account")
    p.add_argument(
        "--require-sign-in",
        action="store_true",
        help="ask for an account's token even on 127.0.0.1 (implied by any other --host)",
    )
    p.add_argument(
        "--secure-cookies",
        action="store_true",
        help="mark the session cookie Secure over plain HTTP too (behind a TLS proxy)",
    )
    p.set_defaults(run=cmd_dashboard)

    account = sub.add_parser("account", help="manage accounts").add_subparsers(
        dest="account_command", required=True
    )
    p = account.add_parser("add", help="create an account and print its token once")
    p.add_argument("name")
    _json_flag(p)
    p.set_defaults(run=cmd_account_add)
    p = account.add_parser("list", help="list accounts")
    _json_flag(p)
    p.set_defaults(run=cmd_account_list)
    p = account.add_parser("set-tz", help="time zone for times sent without an offset (CSV)")
    p.add_argument("name")
    p.add_argument("zone", help="IANA name, e.g. Europe/Berlin")
    p.set_defaults(run=cmd_account_set_tz)
    p = account.add_parser(
        "rotate", help="give the account a new token, printed once; the old one stops working"
    )
    p.add_argument("name")
    _json_flag(p)
    p.set_defaults(run=cmd_account_rotate)
    p = account.add_parser(
        "export",
        help="every account as JSON lines (id, name, created_at, token_hash, time_zone), "
        "for `account import` into another journal",
        description="Write every account as JSON lines, for `healthlog account import` into "
        "another journal. A token hash is the SHA-256 of a 256-bit random token and cannot "
        "be turned back into it, so the file lets no one send deliveries; keep it private "
        "all the same: whoever holds it can tell whether a token they come across belongs "
        "to one of these accounts.",
    )
    p.add_argument("--output", "-o", help="file to write, its owner's only (default: stdout)")
    p.set_defaults(run=cmd_account_export)
    p = account.add_parser(
        "import",
        help="add the accounts of an `account export` file with their ids and token hashes",
        description="Add the accounts of an `account export` file to this journal with the "
        "same ids, token hashes, creation times and time zones, so the archive's keys and "
        "the phones' tokens keep working. An account already here with the same id, name "
        "and token hash is skipped; any other clash imports nothing.",
    )
    p.add_argument("file", help="the export file (-: read it from stdin)")
    _json_flag(p)
    p.set_defaults(run=cmd_account_import)

    p = sub.add_parser("fold", help="run one fold pass now and print the outcome counts")
    _json_flag(p)
    p.set_defaults(run=cmd_fold)

    p = sub.add_parser("status", help="counts per status, backlog, uncovered keys")
    _account_flag(p)
    _json_flag(p)
    p.set_defaults(run=cmd_status)

    p = sub.add_parser("deliveries", help="list deliveries, newest first")
    p.add_argument("--status", choices=STATUSES)
    p.add_argument("--limit", type=int, default=50)
    _account_flag(p)
    _json_flag(p)
    p.set_defaults(run=cmd_deliveries)

    p = sub.add_parser("replay", help="re-fold deliveries through the same Player")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--all", action="store_true", help="every delivery")
    which.add_argument("--status", choices=STATUSES)
    which.add_argument("--uncovered", metavar="KEY", help="deliveries with this uncovered key")
    which.add_argument(
        "--failure", metavar="CLASS", help="failed deliveries of this class (crashed, deadline...)"
    )
    p.add_argument("--dry-run", action="store_true", help="parse and report, write nothing")
    _account_flag(p)
    _json_flag(p)
    p.set_defaults(run=cmd_replay)

    p = sub.add_parser("export", help="showcase points, or a section's records")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--metric", help="one metric (default: all)")
    what.add_argument(
        "--section", help="records of one section (workouts, ecg, symptoms...) instead of points"
    )
    p.add_argument("--from", dest="start_from", help="UTC start, inclusive (e.g. 2024-01-31)")
    p.add_argument("--to", dest="start_to", help="UTC start, exclusive")
    p.add_argument(
        "--format",
        choices=["csv", "jsonl", "geojson", "gpx"],
        default="csv",
        help="geojson and gpx: workouts with their routes (--section workouts)",
    )
    p.add_argument("--output", "-o", help="file to write (default: stdout)")
    _account_flag(p)
    p.set_defaults(run=cmd_export)

    p = sub.add_parser(
        "plot",
        help="draw a metric to a PNG or SVG picture (needs the extra: healthlog[plot])",
        description="Draw one metric over time: a discrete one as its average over a "
        "min-max band, a cumulative one as bars of its sums, sleep_analysis as stages per "
        "night. Times are the phone's local times; a gap in the data is a gap in the line.",
    )
    p.add_argument("metric", help="a metric name, as `export --metric` takes it")
    p.add_argument("--field", help="one field of the metric (default: the one that stands for it)")
    p.add_argument("--from", dest="start_from", help="UTC start, inclusive (as for export)")
    p.add_argument("--to", dest="start_to", help="UTC start, exclusive")
    p.add_argument(
        "--resolution", choices=PLOT_RESOLUTIONS, help="bucket size (default: from the range)"
    )
    p.add_argument("--source", help="only the points of this source")
    p.add_argument("--output", "-o", required=True, type=_plot_output, metavar="FILE.png|FILE.svg")
    _account_flag(p)
    p.set_defaults(run=cmd_plot)

    p = sub.add_parser(
        "coverage",
        help="per metric: days with data, gaps, and points that arrived late",
        description="Per metric: the first and last day with data (the phone's local days), "
        "the days with data, the gaps (days without data between two days with data, for a "
        "metric with data on at least half the days of its span), and per day the points that "
        "arrived late (older than what the deliveries before the one that first brought them had "
        'brought of the metric: an export "Since Last Sync" would have missed them). '
        'docs/dashboard.md, "Data coverage".',
    )
    p.add_argument("--metric", help="one metric (default: all)")
    p.add_argument("--from", dest="start_from", help="first day, on its clock (e.g. 2024-01-31)")
    p.add_argument("--to", dest="start_to", help="end, exclusive: a day it reaches into is in")
    _account_flag(p)
    _json_flag(p)
    p.set_defaults(run=cmd_coverage)

    p = sub.add_parser(
        "mcp",
        help="an MCP server over one account's data, for an assistant (needs healthlog[mcp])",
        description="Serve read-only tools over one account's showcase to an MCP client "
        "(a desktop assistant): over stdio, or streamable HTTP on 127.0.0.1 with --http. "
        "It never writes to the journal. docs/mcp.md.",
    )
    p.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="with --http: a loopback address only")
    p.add_argument("--port", type=int, default=8765, help="with --http: the port (8765)")
    _account_flag(p)
    p.set_defaults(run=cmd_mcp)

    p = sub.add_parser("reconcile", help="journal archived bodies that have no journal row")
    _json_flag(p)
    p.set_defaults(run=cmd_reconcile)
    return parser


def _json_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


class _Token(str):
    """An account chosen by its access token (``--token``), not by its name."""


def _account_flag(p: argparse.ArgumentParser) -> None:
    # both flags choose the account (one dest), so every command scoped by --account is
    # scoped by --token too: a user holding only their token sees only their data
    which = p.add_mutually_exclusive_group()
    which.add_argument("--account", metavar="NAME", help="only this account")
    which.add_argument(
        "--token",
        dest="account",
        type=_Token,
        metavar="TOKEN",
        help="only the account of this token (-: read it from stdin, out of the process list)",
    )


def _journal(settings: Settings) -> Journal:
    from healthlog import wiring

    journal = wiring.open_journal(settings)
    journal.migrate()
    return journal


def _account_id(journal: Journal, name: str | None) -> str | None:
    if name is None:
        return None
    if isinstance(name, _Token):
        from healthlog import tokens

        token = sys.stdin.readline().strip() if name == "-" else name.strip()
        found = journal.account_by_token_hash(tokens.hash_token(token))
        if found is None:
            # the token is not repeated: it may be a real one, mistyped
            raise AccountNotFound("no account has this token")
        return found.id
    for account in journal.accounts():
        if account.name == name:
            return account.id
    raise AccountNotFound(f"no account named {name!r}")


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, default=str))
    else:
        print(text)


def _age(at: datetime | None) -> float | None:
    return None if at is None else round((ids.now() - at).total_seconds(), 3)


# --- commands --------------------------------------------------------------------------


def prepare_stack(settings: Settings) -> str | None:
    """Before the local stack starts: the schema, a first account, and a reconcile.

    Returns the first account's token when this start created it (shown once). The
    reconcile journals any body a crash left archived without its row, so a restart
    after a crash needs no manual step; the first pass then folds them.
    """
    from healthlog import reconcile, tokens, wiring

    journal = _journal(settings)
    try:
        token = None
        if not journal.accounts():
            token = tokens.new_token()
            try:
                journal.add_account("default", tokens.hash_token(token))
            except AccountNameTaken:
                token = None  # a start beside this one made it first, and showed its token
        archive = wiring.open_archive(settings)
        try:
            reconcile.reconcile(journal, archive)
        finally:
            archive.close()
        return token
    finally:
        journal.close()


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    import os

    from healthlog import serve

    env = dict(os.environ)
    token = prepare_stack(settings)
    options = serve.StackOptions(
        args.host,
        args.port,
        args.fold_port,
        args.tick,
        dashboard_port=None if args.no_dashboard else args.dashboard_port,
        dashboard_host=args.dashboard_host,
    )
    dashboard = {"started": False}

    def on_dashboard(started: bool) -> None:
        dashboard["started"] = started

    def banner() -> None:
        print(f"healthlog is taking deliveries at  {_http_url(args.host, args.port)}")
        if options.dashboard_port is not None:
            if dashboard["started"]:
                url = _http_url(options.dashboard_host, options.dashboard_port)
                print(f"the dashboard (read-only) is at    {url}")
                if options.dashboard_host not in ("127.0.0.1", "::1", "localhost"):
                    print("  (it asks for an account's token and shows only that account)")
            else:
                print(
                    f"the dashboard did not start (port {options.dashboard_port} taken?); "
                    "--dashboard-port N picks another"
                )
        if token is not None and sys.stdout.isatty():
            print("Add this header to the Health Auto Export automation:")
            print(f"  Authorization: Bearer {token}")
            print("(the token is shown only now; `healthlog account add NAME` makes another)")
        elif token is not None:
            # not a terminal (a service manager's log, a file): the token stays out of it
            kept = _keep_first_token(settings, token)
            print(f"The first account's token is in {kept} (readable by you only).")
            print("Add it to the Health Auto Export automation as the header")
            print("  Authorization: Bearer <the token in that file>")
            print("then delete the file; `healthlog account rotate default` makes a new one.")
        else:
            print("Header for the HAE automation:")
            print("  Authorization: Bearer <the token shown at first start>")
        if args.host == "127.0.0.1":
            print("Listening on 127.0.0.1 only: to let the phone reach it, run with --host 0.0.0.0")
            print("and use this machine's address on your network in the HAE app.")
        sys.stdout.flush()

    return serve.run_stack(options, env, banner, on_dashboard)


def _keep_first_token(settings: Settings, token: str) -> Path:
    """Write the first token to ``first-token`` beside the SQLite journal (else ./var), 0600."""
    from healthlog import files, urls

    where = urls.journal_location(settings.journal_url)
    folder = Path(where.path).parent if isinstance(where, urls.SqliteLocation) else Path("var")
    files.private_dirs(folder)
    path = folder / "first-token"
    fd = files.private_file(path, os.O_WRONLY | os.O_TRUNC)
    with open(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return path


def _http_url(host: str, port: int) -> str:
    """The URL a banner shows for a server listening on ``host`` (a wildcard as 0.0.0.0)."""
    shown = "0.0.0.0" if host in ("0.0.0.0", "") else host  # noqa: S104
    return f"http://{shown}:{port}/"


def cmd_dashboard(args: argparse.Namespace, settings: Settings) -> int:
    from healthlog import wiring
    from healthlog.dashboard import DashboardOptions, create_app
    from healthlog.dashboard.server import is_loopback, serve

    journal = _journal(settings)
    archive = wiring.open_archive(settings)
    try:
        if args.account is not None:
            _account_id(journal, args.account)  # AccountNotFound: exit 2, saying which
        sign_in = args.require_sign_in or not is_loopback(args.host)
        app = create_app(
            journal,
            archive,
            DashboardOptions(
                account_name=args.account,
                require_sign_in=sign_in,
                secure_cookies=args.secure_cookies,
            ),
        )

        def banner(port: int) -> None:
            print(f"healthlog dashboard (read-only) at  {_http_url(args.host, port)}")
            if sign_in:
                print("sign in with an account's token; it shows only that account's data")
            if not is_loopback(args.host):
                print("plain HTTP: put it behind TLS (a reverse proxy) or a VPN")
            sys.stdout.flush()

        return serve(app, args.host, args.port, banner)
    finally:
        archive.close()
        journal.close()


# a fresh 256-bit token that another account holds: never seen, but never printed either
_FRESH_HASH_TAKEN = "the new token is another account's (nothing changed); run the command again"


def cmd_account_add(args: argparse.Namespace, settings: Settings) -> int:
    from healthlog import tokens

    journal = _journal(settings)
    token = tokens.new_token()
    try:
        account = journal.add_account(args.name, tokens.hash_token(token))
    except AccountNameTaken:
        raise AccountNameTaken(f"an account named {args.name!r} exists") from None
    except TokenTaken:
        raise TokenTaken(_FRESH_HASH_TAKEN) from None
    finally:
        journal.close()
    data = {"id": account.id, "name": account.name, "token": token}
    _emit(
        args,
        data,
        f"account {account.name} created\n"
        f"header for the HAE automation:\n  Authorization: Bearer {token}\n"
        "(shown only now: it is stored hashed)",
    )
    return 0


def cmd_account_list(args: argparse.Namespace, settings: Settings) -> int:
    journal = _journal(settings)
    accounts = journal.accounts()
    journal.close()
    data = [{"id": a.id, "name": a.name, "created_at": a.created_at.isoformat()} for a in accounts]
    _emit(args, data, "\n".join(f"{shown(a.name)}\t{a.id}" for a in accounts) or "no accounts")
    return 0


def cmd_account_set_tz(args: argparse.Namespace, settings: Settings) -> int:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(args.zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise HealthlogError(f"no time zone named {args.zone!r} (an IANA name)") from None
    journal = _journal(settings)
    try:
        account_id = _account_id(journal, args.name)
        assert account_id is not None
        journal.set_time_zone(account_id, args.zone)
    except AccountNotFound:  # removed since the lookup
        raise AccountNotFound(f"no account named {args.name!r}") from None
    finally:
        journal.close()
    print(f"{args.name}: times without an offset are read in {args.zone}")
    return 0


def cmd_account_rotate(args: argparse.Namespace, settings: Settings) -> int:
    from healthlog import tokens

    journal = _journal(settings)
    try:
        account_id = _account_id(journal, args.name)
        assert account_id is not None
        token = tokens.new_token()
        journal.set_token_hash(account_id, tokens.hash_token(token))
    except AccountNotFound:  # removed since the lookup
        raise AccountNotFound(f"no account named {args.name!r}") from None
    except TokenTaken:
        raise TokenTaken(_FRESH_HASH_TAKEN) from None
    finally:
        journal.close()
    data = {"id": account_id, "name": args.name, "token": token}
    _emit(
        args,
        data,
        f"account {args.name} has a new token; the old one no longer works\n"
        f"header for the HAE automation:\n  Authorization: Bearer {token}\n"
        "(shown only now: it is stored hashed)",
    )
    return 0


ACCOUNT_EXPORT_FIELDS = ("id", "name", "created_at", "token_hash", "time_zone")


def cmd_account_export(args: argparse.Namespace, settings: Settings) -> int:
    import os

    journal = _journal(settings)
    try:
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
            }
            lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        journal.close()
    if not args.output:
        sys.stdout.writelines(lines)
        return 0
    # the hashes stay private: a new file is its owner's only
    fd = os.open(args.output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as out:
        out.writelines(lines)
    return 0


def _read_account_lines(source: IO[str], where: str) -> list[tuple[Account, str]]:
    """The accounts of an export file with their token hashes; HealthlogError if malformed."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    found = []
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            values = [row[k] for k in ACCOUNT_EXPORT_FIELDS]
            if not all(isinstance(v, str) and v for v in values):
                raise ValueError("every field is a non-empty string")
            created_at = datetime.fromisoformat(row["created_at"])
            if created_at.tzinfo is None:
                raise ValueError("created_at has no UTC offset")
            ZoneInfo(row["time_zone"])
        except (ValueError, KeyError, TypeError, ZoneInfoNotFoundError) as exc:
            detail = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise HealthlogError(f"{where}, line {number}: not an account ({detail})") from None
        account = Account(row["id"], row["name"], created_at, row["time_zone"])
        found.append((account, row["token_hash"]))
    return found


def _import_conflicts(journal: Journal, wanted: list[tuple[Account, str]]) -> list[str]:
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


def cmd_account_import(args: argparse.Namespace, settings: Settings) -> int:
    if args.file == "-":
        wanted = _read_account_lines(sys.stdin, "stdin")
    else:
        try:
            with open(args.file, encoding="utf-8") as source:
                wanted = _read_account_lines(source, args.file)
        except OSError as exc:
            raise HealthlogError(f"cannot read {args.file} ({exc.strerror})") from None
    journal = _journal(settings)
    try:
        problems = _import_conflicts(journal, wanted)
        if problems:
            raise HealthlogError(
                "nothing imported, the accounts clash with this journal's:\n  "
                + "\n  ".join(problems)
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
            except AccountError as exc:
                # the journal changed since the check above
                label = f"account {account.name!r} ({account.id})"
                raise type(exc)(
                    f"{label}: {_changed_here(exc)}; imported before it: {imported}"
                ) from None
            imported += 1
    finally:
        journal.close()
    data = {"imported": imported, "skipped": skipped}
    _emit(args, data, f"accounts imported: {imported}; already here: {skipped}")
    return 0


def cmd_fold(args: argparse.Namespace, settings: Settings) -> int:
    from healthlog import wiring
    from healthlog.fold.service import FoldService

    journal = _journal(settings)
    service = FoldService(journal, wiring.open_archive(settings), settings)
    report = service.run(wait_s=settings.pass_budget_s * 2)
    journal.close()
    if report is None:
        raise HealthlogError("another fold pass kept the journal's fold lock; try again")
    data = report.as_dict()
    counts = ", ".join(f"{k} {data.get(k, 0)}" for k in ("parsed", "partial", "failed", "deferred"))
    _emit(args, data, f"folded {data.get('selected', 0)} deliveries: {counts}")
    return 0


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    journal = _journal(settings)
    summary = journal.summary(_account_id(journal, args.account))
    journal.close()
    data = {
        "counts": summary.counts,
        "backlog": summary.backlog,
        "oldest_pending_age_s": _age(summary.oldest_pending),
        "last_delivery": summary.last_delivery.isoformat() if summary.last_delivery else None,
        "uncovered": summary.uncovered,
        "points": summary.points,
        "records": summary.records,
        "failures": summary.failures,
    }
    lines = [
        "deliveries: " + ", ".join(f"{k} {v}" for k, v in summary.counts.items()),
        f"backlog: {summary.backlog}"
        + (f" (oldest waiting {data['oldest_pending_age_s']} s)" if summary.oldest_pending else ""),
        f"last delivery: {data['last_delivery'] or 'none yet'}",
        f"points in the showcase: {summary.points}",
    ]
    if summary.records:
        lines.append(
            "records in the showcase: "
            + ", ".join(f"{shown(section)} {n}" for section, n in sorted(summary.records.items()))
        )
    if summary.failures:
        lines.append(
            "failed by class: "
            + ", ".join(f"{shown(k or '-')} {n}" for k, n in sorted(summary.failures.items()))
        )
    if summary.failures.get(CRASHED):
        lines.append(
            f"  {summary.failures[CRASHED]} crashed: their folds killed the process, their last"
            " try alone too; after a fix, re-fold them: healthlog replay --failure crashed"
        )
    if summary.uncovered:
        lines.append(
            "uncovered keys: "
            + ", ".join(f"{shown(k)} ({n})" for k, n in summary.uncovered.items())
        )
    _emit(args, data, "\n".join(lines))
    return 0


def _delivery_dict(d: Delivery) -> dict[str, Any]:
    return {
        "id": d.id,
        "account_id": d.account_id,
        "received_at": d.received_at.isoformat(),
        "status": d.status.value,
        "size": d.size,
        "points": d.points,
        "uncovered": list(d.uncovered),
        "failure": d.failure,
        "attempts": d.attempts,
    }


def cmd_deliveries(args: argparse.Namespace, settings: Settings) -> int:
    journal = _journal(settings)
    rows = journal.deliveries(
        status=ParseStatus(args.status) if args.status else None,
        account_id=_account_id(journal, args.account),
        limit=args.limit,
        newest_first=True,
    )
    journal.close()
    data = [_delivery_dict(d) for d in rows]
    text = "\n".join(
        f"{d.received_at.isoformat()}  {d.id}  {d.status.value:<8} {d.size:>10} B  "
        f"{d.points:>7} pts  {shown(','.join(d.uncovered))}"
        f"{'  ' + d.failure if d.failure else ''}"
        for d in rows
    )
    _emit(args, data, text or "no deliveries")
    return 0


def cmd_replay(args: argparse.Namespace, settings: Settings) -> int:
    from healthlog import wiring
    from healthlog.fold.replay import replay
    from healthlog.fold.service import make_player

    journal = _journal(settings)
    player = make_player(journal, wiring.open_archive(settings), settings)
    # replay holds the fold lock like a pass: no delivery is folded by two at once
    with journal.fold_lock(wait_s=settings.pass_budget_s * 2) as held:
        if not held:
            raise HealthlogError("a fold pass kept the journal's fold lock; try again")
        report = replay(
            journal,
            player,
            status=ParseStatus(args.status) if args.status else None,
            uncovered_key=args.uncovered,
            account_id=_account_id(journal, args.account),
            failure=args.failure,
            dry_run=args.dry_run,
        )
    journal.close()
    data = report.as_dict()
    counts = ", ".join(f"{k} {data[k]}" for k in ("parsed", "partial", "failed", "deferred"))
    verb = "would re-fold" if args.dry_run else "re-folded"
    changed = "" if args.dry_run else f"; showcase changed: {data['showcase_changed']}"
    _emit(
        args,
        data,
        f"{verb} {data['selected']} deliveries: {counts}; "
        f"status changes {data['status_changes']}{changed}",
    )
    return 0


EXPORT_COLUMNS = [
    "account_id", "metric", "field", "source", "start", "utc_offset", "end",
    "qty", "text", "unit", "extra", "delivery_id",
]  # fmt: skip


def _export_rows(points: Iterator[StoredPoint]) -> Iterator[dict[str, Any]]:
    for sp in points:
        p = sp.point
        yield {
            "account_id": sp.account_id,
            "metric": p.metric,
            "field": p.field,
            "source": p.source,
            "start": p.start,
            "utc_offset": p.utc_offset,
            "end": p.end,
            "qty": p.qty,
            "text": p.text,
            "unit": p.unit,
            "extra": p.extra,
            "delivery_id": sp.delivery_id,
        }


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from healthlog import records_export

    if args.format in records_export.ROUTE_FORMATS and args.section != "workouts":
        raise HealthlogError(f"--format {args.format} draws routes: use it with --section workouts")
    journal = _journal(settings)
    if args.section is not None:
        records = journal.export_records(
            account_id=_account_id(journal, args.account),
            section=args.section,
            start_from=args.start_from,
            start_to=args.start_to,
        )
        with contextlib.ExitStack() as stack:
            stack.callback(journal.close)
            out: IO[str] = sys.stdout
            if args.output:
                out = stack.enter_context(open(args.output, "w", newline="", encoding="utf-8"))
            records_export.write(records, out, args.format)
        return 0
    points = journal.export_points(
        account_id=_account_id(journal, args.account),
        metric=args.metric,
        start_from=args.start_from,
        start_to=args.start_to,
    )
    with contextlib.ExitStack() as stack:
        stack.callback(journal.close)
        out = sys.stdout
        if args.output:
            out = stack.enter_context(open(args.output, "w", newline="", encoding="utf-8"))
        rows = _export_rows(points)
        if args.format == "csv":
            writer = csv.DictWriter(out, fieldnames=EXPORT_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        else:
            for row in rows:
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return 0


#: healthlog.reads.Resolution's values (spelled here: the parser imports no read module)
PLOT_RESOLUTIONS = ["raw", "minute", "hour", "day", "week", "month"]


def _plot_output(text: str) -> Path:
    from healthlog import plot

    try:
        return plot.check_output(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cmd_plot(args: argparse.Namespace, settings: Settings) -> int:
    from healthlog import plot
    from healthlog.reads import Reads, Resolution, UnknownName

    try:
        plot.require_matplotlib()  # before anything is read
    except plot.MissingExtra as exc:
        print(f"healthlog: {exc}", file=sys.stderr)
        return 1
    journal = _journal(settings)
    try:
        drawn = plot.plot_metric(
            Reads.of(journal, _account_id(journal, args.account)),
            args.metric,
            args.output,
            field=args.field,
            start=args.start_from,
            end=args.start_to,
            resolution=Resolution(args.resolution) if args.resolution else None,
            source=args.source,
        )
    except (UnknownName, plot.NothingToPlot) as exc:
        print(f"healthlog: {exc}", file=sys.stderr)
        return 1
    finally:
        journal.close()
    print(f"wrote {drawn.path}")
    return 0


def cmd_coverage(args: argparse.Namespace, settings: Settings) -> int:
    from healthlog import coverage_report
    from healthlog.reads import Reads

    journal = _journal(settings)
    try:
        reads = Reads.of(journal, _account_id(journal, args.account))
        found = reads.coverage(metric=args.metric, start=args.start_from, end=args.start_to)
    finally:
        journal.close()
    _emit(args, [c.as_dict() for c in found], coverage_report.text(found))
    return 0


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    from healthlog import mcp_server
    from healthlog.reads import Reads

    if args.account == "-" and isinstance(args.account, _Token) and not args.http:
        raise HealthlogError("--token - reads stdin, which carries the MCP protocol: use --http")
    mcp_server.refuse_off_loopback(args.http, args.host)
    journal = mcp_server.open_readonly(settings)  # not _journal: migrating would write
    try:
        reads = Reads.of(journal, _account_id(journal, args.account))

        def banner(url: str) -> None:
            print(f"healthlog MCP server (read-only) at  {url}", file=sys.stderr, flush=True)

        return mcp_server.serve(
            reads, settings, http=args.http, host=args.host, port=args.port, on_ready=banner
        )
    finally:
        journal.close()


def cmd_reconcile(args: argparse.Namespace, settings: Settings) -> int:
    from healthlog import reconcile, wiring

    journal = _journal(settings)
    report = reconcile.reconcile(journal, wiring.open_archive(settings))
    journal.close()
    data = report.as_dict()
    _emit(
        args,
        data,
        f"archived bodies: {data['seen']}; journalled now: {data['journalled']}; "
        f"already journalled: {data['present']}; skipped: {data['skipped']}; "
        f"leftovers of interrupted writes removed: {data['swept']}",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
