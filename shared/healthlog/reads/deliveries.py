"""The deliveries: the account's status, its deliveries newest first, and one delivery."""

from __future__ import annotations

from healthlog.journal.port import Summary
from healthlog.model import Delivery, ParseStatus
from healthlog.reads.base import Base
from healthlog.reads.values import NotFound


class DeliveryReads(Base):
    """The reads of deliveries."""

    def status(self) -> Summary:
        return self.journal.summary(self.account.id)

    def deliveries(self, *, limit: int = 100, status: ParseStatus | None = None) -> list[Delivery]:
        """The account's deliveries, newest first; ``status``: only those of it."""
        return self.journal.deliveries(
            status=status, account_id=self.account.id, limit=limit, newest_first=True
        )

    def delivery(self, delivery_id: str) -> Delivery:
        found = self.journal.get_delivery(delivery_id)
        if found is None or found.account_id != self.account.id:
            raise NotFound("no such delivery")
        return found
