"""Text from a body, made safe to print on a terminal.

A section name, an uncovered key or a metric name comes from what the phone sent, and
``ESC ] 0 ; title BEL`` or ``ESC [ 2 J`` in one would retitle the window or clear the
screen when ``status`` printed it. ``shown`` escapes every control character (C0, DEL,
C1) and the bidirectional overrides that could make a line read otherwise than it is,
as ``\\xNN`` / ``\\uNNNN``; everything else is printed as it is. JSON output needs none of
this: the encoder escapes control characters itself.
"""

from __future__ import annotations

import io
import re
from typing import TextIO

_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown(text: str) -> str:
    """``text`` with every character that could drive a terminal escaped."""
    return _UNSAFE.sub(_escape, text)


_UNSAFE_IN_TEXT = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
)


def shown_text(text: str) -> str:
    """``shown`` for text of several lines: tabs and line ends are kept."""
    return _UNSAFE_IN_TEXT.sub(_escape, text)


class Shown(io.TextIOBase):
    """A text stream that writes ``shown_text`` of what it is given to a terminal."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._out.write(shown_text(text))
        return len(text)

    def flush(self) -> None:
        self._out.flush()
