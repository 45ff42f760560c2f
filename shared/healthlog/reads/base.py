"""The base of ``Reads``: one account of one journal, with its source priority.

Each question's reads are a mixin over ``Base`` (``counting``, ``catalog``, ``days``,
``series``, ``sleep``, ``workouts``, ``records``, ``coverage``, ``deliveries``);
``healthlog.reads.Reads`` is all of them.
"""

from __future__ import annotations

from typing import Self

from healthlog import priority
from healthlog.errors import AccountNotFound, HealthlogError
from healthlog.journal.port import ShowcaseReads
from healthlog.model import Account


class Base:
    """What every read of one account stands on: the journal, the account, the source
    priority, and the account's imports (read once)."""

    def __init__(
        self,
        journal: ShowcaseReads,
        account: Account,
        priority: priority.SourcePriority = priority.DEFAULT,
    ) -> None:
        self.journal = journal
        self.account = account
        #: which source counts first where cumulative samples overlap (healthlog.reads.overlap)
        self.priority = priority
        self._imported: frozenset[str] | None = None

    @classmethod
    def of(
        cls,
        journal: ShowcaseReads,
        account_id: str | None = None,
        priority: priority.SourcePriority = priority.DEFAULT,
        *,
        choose: str = "--account NAME or --token -",
    ) -> Self:
        """The reads of an account by id, or of the journal's only account (None).

        Raises AccountNotFound for an unknown id or a journal without accounts, and
        HealthlogError when there are several and none is named (saying to ``choose``
        one with the options given).
        """
        if account_id is not None:
            found = journal.get_account(account_id)
            if found is None:
                raise AccountNotFound("no such account")
            return cls(journal, found, priority)
        accounts = journal.accounts()
        if not accounts:
            raise AccountNotFound("no accounts yet: `healthlog account add NAME` makes one")
        if len(accounts) > 1:
            raise HealthlogError(f"this journal has several accounts: choose one with {choose}")
        return cls(journal, accounts[0], priority)

    def imported(self) -> frozenset[str]:
        """The ids of the account's imports of the Health app's export (read once)."""
        if self._imported is None:
            self._imported = self.journal.imported_deliveries(self.account.id)
        return self._imported
