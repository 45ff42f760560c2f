"""The parser's one error of its own: ``NotUnderstood``.

Not a ``healthlog.errors`` class: it never leaves the parser. A section loop catches it
and marks what it could not read uncovered (``metrics.<name>``, or the section's key),
keeping the rest.
"""

from __future__ import annotations


class NotUnderstood(ValueError):
    """A point or object of a shape this parser does not read.

    A point of ``metrics`` the parser has no reading for, or an object of another
    section that gives no stable key (no id and no readable start). A ValueError, like
    what ``dates.instant`` raises for a time it cannot read: the section loops treat
    both the same way.
    """


__all__ = ["NotUnderstood"]
