"""Where an export's files are: an ``export.zip``, its unzipped folder, or a bare ``export.xml``.

``open_export(path)`` gives an ``Export``: the ``export.xml`` stream (with the XML's own
DTD set aside, see ``WithoutDoctype``), and the export's other files by their path inside
the export (``workout-routes/route_2024-03-30_8.02am.gpx``,
``electrocardiograms/ecg_2024-03-30.csv``). A path that would leave the export (``..``,
an absolute path outside it) is refused: nothing outside the export is ever opened.

The zip the Health app writes holds one folder, ``apple_health_export/`` (localized on
some phones), with ``export.xml`` in it; a zip that someone re-packed may hold
``export.xml`` at its top. Both are read: the export's root is the folder that holds
``export.xml``.
"""

from __future__ import annotations

import codecs
import io
import posixpath
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from healthlog.errors import HealthlogError

EXPORT_XML = "export.xml"
# how much of the file's head is searched for the end of its DOCTYPE
_HEAD_LIMIT = 4 * 1024 * 1024


class ExportUnreadable(HealthlogError):
    """The Health export cannot be read."""


class WithoutDoctype(io.RawIOBase):
    """A byte stream with its ``<!DOCTYPE ...>`` declaration (and internal subset) set aside.

    The Health app writes a DTD into ``export.xml`` that some iOS versions got wrong
    (a validating parser, and libxml2's parser of the internal subset, stop on it). The
    reader needs nothing from it: no defaults, no entities. The DOCTYPE of the prolog
    (found as XML defines the prolog: ``_doctype_span``) is blanked, every byte but its
    newlines a space, so the parser's line and column of an error are the file's. The
    XML policy itself (no DTD is read, no entity expanded, wherever a DOCTYPE sits) is
    the parser's (``series.RefusesDoctype``); this only lets a real export through it.
    Counts the bytes read from the underlying stream (``bytes_read``), for progress.
    """

    def __init__(self, raw: IO[bytes]) -> None:
        super().__init__()
        self._raw = raw
        self._pending = b""
        self._head_done = False
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def _read_raw(self, size: int) -> bytes:
        chunk = self._raw.read(size)
        self.bytes_read += len(chunk)
        return chunk

    def _cut_head(self) -> None:
        head = b""
        while True:
            chunk = self._read_raw(64 * 1024)
            head += chunk
            span = _doctype_span(head)
            if span is None:
                break  # the prolog holds no DOCTYPE: nothing to cut
            start, end = span
            if end >= 0:
                # blanked, not cut: the parser's lines and columns are the file's
                head = head[:start] + _NOT_NEWLINE.sub(b" ", head[start:end]) + head[end:]
                break
            if not chunk:
                break  # the file ends inside its prolog: the parser will say it is cut
            if len(head) > _HEAD_LIMIT:
                raise ExportUnreadable("export.xml: its DOCTYPE does not end")
        self._pending = head
        self._head_done = True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if not self._head_done:
            self._cut_head()
        if not self._pending:
            self._pending = self._read_raw(len(buffer))
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


_NOT_NEWLINE = re.compile(rb"[^\n]")
_PROLOG_OPENINGS = (b"<!DOCTYPE", b"<!--", b"<?")


def _doctype_span(head: bytes) -> tuple[int, int] | None:
    """Where the DOCTYPE of the document's prolog is in ``head``: (start, end).

    The prolog is read as XML defines it: an XML declaration, comments, processing
    instructions and blanks, in any order, then perhaps the DOCTYPE, then the first
    element. So a ``<!DOCTYPE`` written inside a comment or a processing instruction is
    not taken for the real one. ``end`` is -1 while ``head`` ends before the DOCTYPE
    (or the prolog) does; None when the prolog has no DOCTYPE.
    """
    i, n = (3 if head.startswith(codecs.BOM_UTF8) else 0), len(head)
    while True:
        while i < n and head[i] in b" \t\r\n":
            i += 1
        rest = head[i : i + len(b"<!DOCTYPE")]
        if head.startswith(b"<!DOCTYPE", i):
            return i, _doctype_end(head, i)
        if head.startswith(b"<!--", i):
            close = head.find(b"-->", i + 4)
            if close < 0:
                return i, -1
            i = close + 3
        elif head.startswith(b"<?", i):
            close = head.find(b"?>", i + 2)
            if close < 0:
                return i, -1
            i = close + 2
        elif len(rest) < len(b"<!DOCTYPE") and any(o.startswith(rest) for o in _PROLOG_OPENINGS):
            return i, -1  # head ends where the prolog may go on
        else:
            return None


def _doctype_end(head: bytes, start: int) -> int:
    """Offset just past the DOCTYPE that begins at ``start``, or -1 if not in ``head`` yet.

    ``<!DOCTYPE HealthData [ ... ]>``: the internal subset ends at the first ``]`` that is
    followed (blanks aside) by ``>``; quoted text is skipped, so a ``]>`` inside an
    attribute default or a comment does not end it.
    """
    i, n = start + len(b"<!DOCTYPE"), len(head)
    quote: int | None = None
    subset = False
    while i < n:
        c = head[i]
        if quote is not None:
            if c == quote:
                quote = None
        elif c == 0x3C and head.startswith(b"<!--", i):  # a comment: skip to its end
            close = head.find(b"-->", i + 4)
            if close < 0:
                return -1
            i = close + 3
            continue
        elif c in (0x22, 0x27):  # " '
            quote = c
        elif c == 0x5B:  # [
            subset = True
        elif c == 0x5D and subset:  # ]
            j = i + 1
            while j < n and head[j] in b" \t\r\n":
                j += 1
            if j < n and head[j] == 0x3E:
                return j + 1
            if j >= n:
                return -1
        elif c == 0x3E and not subset:  # > of a DOCTYPE without internal subset
            return i + 1
        i += 1
    return -1


_READABLE = frozenset(
    {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
)


def checked_members(archive: zipfile.ZipFile) -> int:
    """The checks every member of an export's zip passes, wherever the zip is read (by
    ``healthlog import`` before it stores it, and by every reading, a fold's included);
    what its members expand to, in bytes. Raises ``ExportUnreadable`` naming the member
    by its number (never its name: it is the sender's text) for a path that would leave
    the export, an encrypted member, or a compression zip cannot read, and for a zip
    with no ``export.xml``.
    """
    members = archive.infolist()
    for n, info in enumerate(members, 1):
        if _unsafe(info.filename):
            raise ExportUnreadable(
                f"member {n} has a path that leaves the export (absolute, or with '..');"
                " an export the Health app wrote never has one: refused"
            )
        if info.flag_bits & 0x1:
            raise ExportUnreadable(f"member {n} is encrypted")
        if info.compress_type not in _READABLE:
            raise ExportUnreadable(f"member {n} uses a compression zip cannot read")
    names = [info.filename for info in members]
    if not any(posixpath.basename(n) == EXPORT_XML and n.count("/") <= 1 for n in names):
        raise ExportUnreadable("the zip holds no export.xml")
    return sum(info.file_size for info in members)


def _unsafe(name: str) -> bool:
    """A zip member's path that would leave the export: absolute, a drive, or ``..``."""
    text = name.replace("\\", "/")
    if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        return True
    return any(part == ".." for part in text.split("/"))


def safe_member(root: str, path: str) -> str | None:
    """``path`` (as written in the export, e.g. ``/workout-routes/x.gpx``) inside ``root``.

    None when it would leave the export.
    """
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return posixpath.join(root, *parts) if root else posixpath.join(*parts)


class Export:
    """An opened export: its ``export.xml`` stream and its other files."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        self._folder: Path | None = None
        self._root = ""  # the folder inside the zip that holds export.xml
        #: what a zip's members expand to, in bytes (0 for a folder or a bare file)
        self.expanded = 0
        if path.is_dir():
            self._folder = (
                path / "apple_health_export" if not (path / EXPORT_XML).exists() else path
            )
            if not (self._folder / EXPORT_XML).is_file():
                raise ExportUnreadable("the folder holds no export.xml")
        elif not path.is_file():
            raise ExportUnreadable("no such file or folder")
        elif zipfile.is_zipfile(path):
            try:
                self._zip = zipfile.ZipFile(path)
            except (zipfile.BadZipFile, OSError) as exc:
                raise ExportUnreadable("the file is not a readable zip") from exc
            try:
                self.expanded = checked_members(self._zip)
                self._root = self._find_root(self._zip)
            except ExportUnreadable:
                self._zip.close()
                raise
        elif looks_like_export_xml(path):
            self._folder = path.parent
            self._xml_name = path.name
        else:
            raise ExportUnreadable("the file is neither a zip nor an XML export")

    @staticmethod
    def _find_root(archive: zipfile.ZipFile) -> str:
        candidates = [
            name
            for name in archive.namelist()
            if posixpath.basename(name) == EXPORT_XML and name.count("/") <= 1
        ]
        if not candidates:
            raise ExportUnreadable("the zip holds no export.xml")
        name = min(candidates, key=lambda n: n.count("/"))  # a top-level one first
        if safe_member("", name) != name:
            raise ExportUnreadable("the zip's export.xml has an unsafe path")
        return posixpath.dirname(name)

    def open_xml(self) -> WithoutDoctype:
        if self._zip is not None:
            name = posixpath.join(self._root, EXPORT_XML) if self._root else EXPORT_XML
            return WithoutDoctype(self._zip.open(name))
        assert self._folder is not None
        name = getattr(self, "_xml_name", EXPORT_XML)
        return WithoutDoctype((self._folder / name).open("rb"))

    @property
    def xml_size(self) -> int:
        """The size of ``export.xml`` as it unpacks, in bytes (for progress)."""
        if self._zip is not None:
            name = posixpath.join(self._root, EXPORT_XML) if self._root else EXPORT_XML
            return self._zip.getinfo(name).file_size
        assert self._folder is not None
        return (self._folder / getattr(self, "_xml_name", EXPORT_XML)).stat().st_size

    def open_member(self, path: str) -> IO[bytes] | None:
        """A file of the export by its path as the export writes it; None if absent or unsafe."""
        if self._zip is not None:
            name = safe_member(self._root, path)
            if name is None:
                return None
            try:
                return self._zip.open(name)
            except KeyError:
                return None
        assert self._folder is not None
        name = safe_member("", path)
        if name is None:
            return None
        target = self._folder / name
        try:
            # a symlink inside the folder must not lead out of it either
            if not target.resolve().is_relative_to(self._folder.resolve()):
                return None
            return target.open("rb")
        except OSError:
            return None

    def members(self, folder: str, suffix: str) -> Iterator[str]:
        """The paths (relative to the export) of the files in ``folder`` ending in ``suffix``,
        in name order."""
        if self._zip is not None:
            prefix = posixpath.join(self._root, folder) + "/" if self._root else folder + "/"
            names = sorted(
                n[len(self._root) + 1 if self._root else 0 :]
                for n in self._zip.namelist()
                if n.startswith(prefix)
                and n.lower().endswith(suffix)
                and "/" not in n[len(prefix) :]
            )
            yield from names
            return
        assert self._folder is not None
        where = self._folder / folder
        if where.is_dir():
            for entry in sorted(where.iterdir()):
                if entry.is_file() and entry.name.lower().endswith(suffix):
                    yield f"{folder}/{entry.name}"

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


#: the root element of the Health app's ``export.xml``, which its DOCTYPE names too
_ROOT = b"HealthData"
# how much of a file's head tells whether it is an export.xml: the DOCTYPE comes first,
# or (no DOCTYPE) the root element within a few comments and the XML declaration
_SNIFF_BYTES = 64 * 1024


def looks_like_export_xml(path: Path) -> bool:
    """Whether the file at ``path`` reads as the Health app's ``export.xml`` by its head.

    XML whose DOCTYPE or first element is ``HealthData``: so a GPX route, a CDA document
    or any other XML is told apart before anything is stored, while an export cut short
    (even inside its DOCTYPE) still is one, for the reader to say where it ends.
    """
    with path.open("rb") as f:
        head = f.read(_SNIFF_BYTES).lstrip(b"\xef\xbb\xbf \t\r\n")
    at = 0
    while head.startswith((b"<?", b"<!--"), at):  # the declaration, comments, PIs
        close = head.find(b"?>" if head.startswith(b"<?", at) else b"-->", at + 2)
        if close < 0:
            return False  # nothing but a comment in the head: not an export's
        at = close + (2 if head.startswith(b"<?", at) else 3)
        while at < len(head) and head[at] in b" \t\r\n":
            at += 1
    if head.startswith(b"<!DOCTYPE", at):
        return _names_root(head[at + len(b"<!DOCTYPE") :].lstrip())
    return head.startswith(b"<", at) and _names_root(head[at + 1 :])


def _names_root(text: bytes) -> bool:
    """Whether ``text`` starts with the name ``HealthData``, whole (not ``HealthDataX``)."""
    return text.startswith(_ROOT) and text[len(_ROOT) : len(_ROOT) + 1] in (
        b"", b" ", b"\t", b"\r", b"\n", b">", b"/", b"[",
    )  # fmt: skip
