"""The journal's accounts, their retired tokens and the watch's notices: a part of
``SqlJournal`` (``journal/core.py``), the ``Accounts`` and ``Watch`` protocols."""

from __future__ import annotations

import uuid
from datetime import datetime

from healthlog import errors, ids
from healthlog.clock import to_text
from healthlog.journal import rows
from healthlog.journal.base import SqlBase
from healthlog.journal.driver import Connection, Params
from healthlog.journal.port import (
    StaleToken,
    WatchNotice,
)
from healthlog.model import (
    Account,
)


class AccountsSql(SqlBase):
    """Accounts, tokens (current and retired), time zones, the watch's notices."""

    def add_account(
        self,
        name: str,
        token_hash: str,
        *,
        account_id: str | None = None,
        created_at: datetime | None = None,
    ) -> Account:
        account = Account(
            id=str(uuid.uuid4()) if account_id is None else account_id,
            name=name,
            created_at=ids.now() if created_at is None else created_at,
        )
        params = {
            "id": account.id,
            "name": name,
            "token_hash": token_hash,
            "created_at": to_text(account.created_at),
        }
        sql = self._sql["add_account"]
        # the driver turns the unique columns' violations into the typed account errors
        self._write(lambda conn: conn.execute(sql, params))
        return account

    def _change_account(self, name: str, params: Params) -> None:
        sql = self._sql[name]

        def work(conn: Connection) -> None:
            if conn.execute(sql, params).rowcount != 1:
                raise errors.AccountNotFound()

        self._write(work)

    def set_token_hash(self, account_id: str, token_hash: str) -> None:
        sql = self._sql
        at = to_text(ids.now())

        def work(conn: Connection) -> None:
            old = conn.execute(sql["token_hash"], {"id": account_id}).fetchone()
            changed = conn.execute(
                sql["set_token_hash"], {"id": account_id, "token_hash": token_hash}
            )
            if changed.rowcount != 1:
                raise errors.AccountNotFound()
            if old is not None and old[0] != token_hash:
                conn.execute(
                    sql["retire_token"],
                    {"token_hash": old[0], "account_id": account_id, "retired_at": at},
                )

        self._write(work)

    def note_refused_token(self, token_hash: str, at: datetime) -> bool:
        # a read first: a stranger's token (any number of them) takes no write lock
        if self._one("is_retired_token", {"token_hash": token_hash}) is None:
            return False
        sql = self._sql["note_refused_token"]
        params = {"token_hash": token_hash, "at": to_text(at)}
        return self._write(lambda conn: conn.execute(sql, params).rowcount == 1)

    def stale_tokens(self, account_id: str) -> list[StaleToken]:
        return [
            StaleToken(
                rows.from_text(retired),
                int(refused),
                rows.from_text(first),
                rows.from_text(last),
            )
            for retired, refused, first, last in self._all(
                "stale_tokens", {"account_id": account_id}
            )
        ]

    def set_time_zone(self, account_id: str, time_zone: str) -> None:
        self._change_account("set_time_zone", {"id": account_id, "time_zone": time_zone})

    def set_unit_system(self, account_id: str, unit_system: str) -> None:
        self._change_account("set_unit_system", {"id": account_id, "unit_system": unit_system})

    def token_hash(self, account_id: str) -> str | None:
        row = self._one("token_hash", {"id": account_id})
        return None if row is None else str(row[0])

    def account_by_token_hash(self, token_hash: str) -> Account | None:
        row = self._one("account_by_token_hash", {"token_hash": token_hash})
        return None if row is None else rows.account(row)

    def get_account(self, account_id: str) -> Account | None:
        row = self._one("account_by_id", {"id": account_id})
        return None if row is None else rows.account(row)

    def accounts(self) -> list[Account]:
        return [rows.account(row) for row in self._all("accounts", {})]

    # --- the watch's notices (healthlog.ops.watch) ------------------------------------------

    def watch_notices(self) -> list[WatchNotice]:
        return [
            WatchNotice(target, key, subject, rows.from_text(at), state)
            for target, key, subject, at, state in self._all("watch_notices", {})
        ]

    def add_watch_notice(self, notice: WatchNotice) -> bool:
        sql = self._sql["add_watch_notice"]
        params = {
            "target": notice.target,
            "rule_key": notice.rule_key,
            "subject": notice.subject,
            "told_at": to_text(notice.told_at),
            "state": notice.state,
        }
        return self._write(lambda conn: conn.execute(sql, params).rowcount == 1)

    def move_watch_notice(self, notice: WatchNotice, *, state: str, at: datetime) -> bool:
        sql = self._sql["move_watch_notice"]
        params = {
            "target": notice.target,
            "rule_key": notice.rule_key,
            "was_state": notice.state,
            "was_at": to_text(notice.told_at),
            "state": state,
            "at": to_text(at),
        }
        return self._write(lambda conn: conn.execute(sql, params).rowcount == 1)

    def delete_watch_notice(self, target: str, rule_key: str) -> bool:
        sql = self._sql["delete_watch_notice"]
        params = {"target": target, "rule_key": rule_key}
        return self._write(lambda conn: conn.execute(sql, params).rowcount == 1)
