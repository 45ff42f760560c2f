"""Source priority: which source counts first where samples of several overlap.

The rule that uses it is ``healthlog.reads.overlap``'s rule 2; the setting is
``HEALTHLOG_SOURCE_PRIORITY`` (``healthlog.config``). It is kernel, not read side,
because the settings read and check it, and they import nothing of the read model.
"""

from __future__ import annotations

from dataclasses import dataclass

from healthlog.errors import ConfigError

#: where cumulative samples of several sources overlap, which counts first (rule 2 of
#: healthlog.reads.overlap): the Watch, then the iPhone, then the others
DEFAULT_SOURCE_PRIORITY = "watch,iphone"


def priority_fragments(text: str) -> tuple[str, ...]:
    """``"watch,iphone"`` as its name fragments, first first, folded; ConfigError if none."""
    fragments = tuple(part.strip().casefold() for part in text.split(",") if part.strip())
    if not fragments:
        raise ConfigError(
            "HEALTHLOG_SOURCE_PRIORITY: give name fragments separated by commas,"
            " for example watch,iphone"
        )
    return fragments


@dataclass(frozen=True, slots=True)
class SourcePriority:
    """Which source counts first where samples overlap (rule 2)."""

    fragments: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> SourcePriority:
        """``"watch,iphone"``: name fragments, first first; ConfigError if none."""
        return cls(priority_fragments(text))

    @property
    def key(self) -> str:
        """The priority as one text, what a day counted by it is kept under
        (``Journal.counted_days``): the same fragments, the same key."""
        return ",".join(self.fragments)

    def rank(self, source: str) -> tuple[int, str]:
        """Smaller first: the first fragment any part of the source's name holds."""
        folded = source.casefold()
        best = len(self.fragments)
        for part in folded.split("|"):  # HAE's merged sources: their best part
            for i, fragment in enumerate(self.fragments[:best]):
                if fragment in part:
                    best = i
                    break
        return best, source


DEFAULT = SourcePriority.parse(DEFAULT_SOURCE_PRIORITY)
