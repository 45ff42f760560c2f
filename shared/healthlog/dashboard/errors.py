"""The dashboard's one error: a request answered with a status and a readable message."""

from __future__ import annotations


class DashboardError(Exception):
    """A request the dashboard answers with ``status`` and a readable message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
