"""Import the Health app's own export: years of history as one delivery (issue 12).

``import_export(path, ...)`` takes an ``export.zip``, its unzipped folder, or a bare
``export.xml``, against any journal and archive (``healthlog.ops.wiring``), and does what
ingest and the fold do for an HAE body, in the same three steps
(docs/history.md, "How an import is stored and folded"):

1. **Checked** (``inspect``): what it is, and that it is an export (a zip that holds an
   ``export.xml`` and no member whose path leaves it; XML; a folder holding
   ``export.xml``), within ``Settings.max_import_bytes``, which counts what a zip
   *expands to* (its members' sizes, which bound what the reader can read), so a zip
   bomb is refused before anything is stored. Refusals are ``ImportRefused``, whose
   message names what is wrong and never quotes the file's content.
2. **Archived** byte for byte (``archive_export``), streamed in 1 MiB chunks into the
   archive's writer: locally a temporary file, fsynced and linked under its key; on S3
   a multipart upload, nothing visible until it completes. A zip or an XML is stored as
   it is; a folder is stored as the zip of its files (``apple_health_export/...``),
   written as it streams. The archive holds exactly the bytes the fold reads. Then the
   delivery is journalled as ``pending``, with its own content type
   (``application/vnd.healthlog.apple-health-export+zip`` or ``+xml``), so ``status``,
   ``replay``, ``reconcile`` and a rebuild from the archive know it.
3. **Folded** (``fold_import``) by the same fold as every delivery (``Player.play``,
   under the journal's fold lock), in steps (``healthlog.fold.steps``): resumable after
   an interruption, with the same outcomes (``parsed``; ``partial`` with the uncovered
   HealthKit types as keys; ``failed``).

``progress`` hears of both phases (``ImportProgress``): bytes archived, then bytes of
``export.xml`` read and points folded. Nothing here prints: the command line draws.
"""

from __future__ import annotations

import logging
import os
import stat
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from healthlog import ids, log
from healthlog.applehealth.files import ExportUnreadable, checked_members, looks_like_export_xml
from healthlog.archive.keys import EXPORT_XML, EXPORT_ZIP, body_key
from healthlog.archive.port import Archive, ArchiveWriter
from healthlog.config import ENV_PREFIX, Settings
from healthlog.errors import HealthlogError, NoSuchAccount
from healthlog.fold.service import make_player
from healthlog.fold.steps import FoldProgress, State
from healthlog.journal.port import Journal
from healthlog.model import NewDelivery, Outcome, OutcomeClass, ParseStatus

logger = logging.getLogger("healthlog.importer")

CHUNK = 1024 * 1024
#: the folder the phone's zip holds the export in; a folder is archived under it too
ZIP_FOLDER = "apple_health_export"
EXPORT_FILE = "export.xml"

Kind = Literal["zip", "folder", "xml"]
Phase = Literal["archive", "fold"]


class ImportRefused(HealthlogError):
    """The file is not an export healthlog imports; nothing was stored."""


@dataclass(frozen=True, slots=True)
class ImportProgress:
    """Where an import is: ``archive`` (bytes stored of the file's) or ``fold``."""

    phase: Phase
    #: archive: bytes read from the file; fold: bytes of export.xml read (as it unpacks)
    bytes_done: int
    bytes_total: int
    points: int = 0
    records: int = 0


Progress = Callable[[ImportProgress], None]


@dataclass(frozen=True, slots=True)
class Source:
    """An export on this machine, checked: what it is and how big."""

    path: Path
    kind: Kind
    #: bytes to read from it (a folder: its files')
    size: int
    #: what the reader can expand it to: a zip's members, a folder's files, the XML
    expanded: int
    #: a folder's files, relative to ``root`` (the folder holding export.xml)
    files: tuple[Path, ...] = ()
    root: Path | None = None

    @property
    def content_type(self) -> str:
        return EXPORT_XML if self.kind == "xml" else EXPORT_ZIP


@dataclass(frozen=True, slots=True)
class Stored:
    """The export archived and journalled as a pending delivery."""

    delivery_id: str
    archive_key: str
    received_at: datetime
    #: bytes in the archive
    size: int
    kind: Kind


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did: where it is stored, and what its fold came to."""

    delivery_id: str
    archive_key: str
    size: int
    kind: Kind
    #: the delivery's status now: ``pending`` if it was not folded (yet), or is paused
    status: ParseStatus
    #: the fold's outcome in this call; None when it did not fold (``fold=False``, or
    #: another fold held the lock)
    outcome: Outcome | None
    points: int = 0
    records: int = 0
    incomparable: int = 0
    #: samples the export held more than once exactly, kept once (not in ``points``)
    repeated: int = 0
    #: HealthKit types (or elements) with no mapping yet, and how many elements of each
    uncovered: dict[str, int] = field(default_factory=dict)
    #: elements of a mapped type that could not be read, per type
    unreadable: dict[str, int] = field(default_factory=dict)
    #: the file was cut short: bytes of export.xml read, of how many, and where
    cut: dict[str, Any] | None = None
    failure: str | None = None
    #: why nothing of it could be read, for a failed import (a line and column, no value)
    refused: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "delivery_id": self.delivery_id,
            "archive_key": self.archive_key,
            "size": self.size,
            "kind": self.kind,
            "status": self.status.value,
            "outcome": None if self.outcome is None else self.outcome.klass.value,
            "reason": None if self.outcome is None else self.outcome.reason,
            "points": self.points,
            "records": self.records,
            "incomparable": self.incomparable,
            "repeated": self.repeated,
            "uncovered": self.uncovered,
            "unreadable": self.unreadable,
            "cut": self.cut,
            "failure": self.failure,
            "refused": self.refused,
        }


# --- 1. checked ----------------------------------------------------------------------------


def inspect(path: str | Path, *, max_bytes: int) -> Source:
    """What ``path`` is, checked as an export within ``max_bytes``; ImportRefused if not."""
    where = Path(path)
    try:
        mode = where.stat().st_mode
    except OSError as exc:
        raise ImportRefused(f"cannot read {where}: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        source = _folder(where)
    elif not stat.S_ISREG(mode):
        raise ImportRefused(f"{where} is neither a file nor a folder")
    elif zipfile.is_zipfile(where):
        source = _zip(where)
    elif looks_like_export_xml(where):
        size = where.stat().st_size
        source = Source(where, "xml", size, size)
    else:
        raise ImportRefused(
            f"{where.name} is neither a zip nor an XML export (the Health app's "
            "export.zip, its unzipped folder, or its export.xml, whose root is HealthData)"
        )
    biggest = max(source.size, source.expanded)
    if biggest > max_bytes:
        what = "expands to" if source.kind == "zip" else "holds"
        raise ImportRefused(
            f"{where.name} {what} {biggest} bytes, over the import limit of {max_bytes} "
            f"({ENV_PREFIX}MAX_IMPORT_BYTES)"
        )
    return source


def _zip(path: Path) -> Source:
    try:
        with zipfile.ZipFile(path) as archive:
            expanded = checked_members(archive)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ImportRefused(f"{path.name} is not a readable zip ({type(exc).__name__})") from None
    except ExportUnreadable as exc:
        raise ImportRefused(f"{path.name}: {exc}") from None
    return Source(path, "zip", path.stat().st_size, expanded)


def _folder(path: Path) -> Source:
    root = path if (path / EXPORT_FILE).is_file() else path / ZIP_FOLDER
    if not (root / EXPORT_FILE).is_file():
        raise ImportRefused(f"the folder {path.name} holds no export.xml")
    files = tuple(sorted(_files(root, root.resolve())))
    size = sum((root / f).stat().st_size for f in files)
    return Source(path, "folder", size, size, files=files, root=root)


def _files(folder: Path, inside: Path) -> Iterator[Path]:
    """The regular files under ``folder``, relative to it. A link to a file is followed
    where it stays inside the export (as the reader opens them); a link to a folder is
    not (it could lead round in a circle)."""
    for entry in os.scandir(folder):
        target = Path(entry.path)
        if entry.is_symlink():
            if entry.is_file() and target.resolve().is_relative_to(inside):
                yield Path(entry.name)
        elif entry.is_dir():
            for found in _files(target, inside):
                yield Path(entry.name) / found
        elif entry.is_file():
            yield Path(entry.name)


# --- 2. archived and journalled -------------------------------------------------------------


def archive_export(
    source: Source,
    journal: Journal,
    archive: Archive,
    *,
    account_id: str,
    progress: Progress | None = None,
    now: Callable[[], datetime] = ids.now,
) -> Stored:
    """Store the export byte for byte, then journal it as a pending delivery.

    The delivery's time is when the import started (its layer: a later export or HAE
    delivery of the same points wins over it, an earlier one does not). Raises
    NoSuchAccount for an account the journal does not hold (before storing anything),
    and what the archive and the journal raise; a body stored without its row (the
    journal failed after the archive) is journalled by ``healthlog reconcile``.
    """
    if journal.get_account(account_id) is None:
        raise NoSuchAccount("no such account in this journal")
    received_at = now()
    delivery_id = ids.new_delivery_id(received_at)
    key = body_key(account_id, delivery_id, source.content_type)
    writer = _Counting(archive.writer(key), source.size, progress)
    committed = False
    try:
        if source.kind == "folder":
            _write_zip(source, writer)
        else:
            _copy(source, writer)
        size = writer.commit()
        committed = True
    finally:
        if not committed:
            writer.abort()
    journal.insert_delivery(
        NewDelivery(
            id=delivery_id,
            account_id=account_id,
            received_at=received_at,
            archive_key=key,
            size=size,
            content_type=source.content_type,
        )
    )
    log.event(
        logger,
        logging.INFO,
        "import.stored",
        delivery_id=delivery_id,
        account_id=account_id,
        kind=source.kind,
        size=size,
    )
    return Stored(delivery_id, key, received_at, size, source.kind)


class _Counting:
    """The archive's writer, counting what it is given (progress: the file's bytes read)."""

    def __init__(self, inner: ArchiveWriter, total: int, progress: Progress | None) -> None:
        self._inner = inner
        self._total = total
        self._progress = progress
        self.written = 0  # bytes stored
        self.read = 0  # bytes of the source read (a folder: of its files)

    def write(self, chunk: bytes, /) -> int:
        self._inner.write(bytes(chunk))
        self.written += len(chunk)
        return len(chunk)

    def flush(self) -> None:
        """zipfile flushes its stream; the writer buffers nothing of its own to flush."""

    def close(self) -> None:
        """zipfile's stream protocol; ``commit`` or ``abort`` ends the writer."""

    def advance(self, n: int) -> None:
        self.read += n
        if self._progress is not None:
            self._progress(ImportProgress("archive", min(self.read, self._total), self._total))

    def commit(self) -> int:
        return self._inner.commit()

    def abort(self) -> None:
        self._inner.abort()


def _write_zip(source: Source, writer: _Counting) -> None:
    """A folder's files as the phone's zip, written into the archive as it streams.

    zipfile writes to a stream that cannot seek with a data descriptor after each member
    (and ZIP64 records where sizes need them), which is what it needs to read it back.
    """
    assert source.root is not None
    with zipfile.ZipFile(writer, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as out:
        for name in source.files:
            path = source.root / name
            info = zipfile.ZipInfo.from_file(path, f"{ZIP_FOLDER}/{name.as_posix()}")
            info.compress_type = zipfile.ZIP_DEFLATED
            with path.open("rb") as src, out.open(info, "w", force_zip64=True) as dest:
                while chunk := src.read(CHUNK):
                    dest.write(chunk)
                    writer.advance(len(chunk))


def _copy(source: Source, writer: _Counting) -> None:
    with source.path.open("rb") as body:
        while chunk := body.read(CHUNK):
            writer.write(chunk)
            writer.advance(len(chunk))


# --- 3. folded -----------------------------------------------------------------------------


def fold_import(
    journal: Journal,
    archive: Archive,
    settings: Settings,
    delivery_id: str,
    *,
    progress: Progress | None = None,
    wait_s: float = 60.0,
) -> Outcome | None:
    """Fold the imported delivery (to its end, or on from where an earlier fold stopped).

    Under the journal's fold lock, as a pass or a replay (one fold at a time, in any
    process), waiting up to ``wait_s`` for a pass that holds it. Returns the fold's
    outcome; None when the lock stayed taken (the delivery stays pending: the next pass,
    or ``healthlog fold``, folds it). A delivery some other fold settled meanwhile is
    left as it is (a deferred outcome, ``Conflict``).
    """

    def heard(step: FoldProgress) -> None:
        if progress is None:
            return
        try:
            progress(
                ImportProgress("fold", step.bytes_read, step.bytes_total, step.points, step.records)
            )
        except Exception as exc:
            # a progress bar that fails is not the delivery's failure: the fold goes on
            log.event(logger, logging.WARNING, "import.progress_failed", error=type(exc).__name__)

    player = make_player(journal, archive, settings)
    with journal.fold_lock(wait_s) as held:
        if not held:
            log.event(logger, logging.WARNING, "import.fold_later", delivery_id=delivery_id)
            return None
        return player.play(delivery_id, pending_only=True, progress=heard)


def import_export(
    path: str | Path,
    *,
    journal: Journal,
    archive: Archive,
    settings: Settings,
    account_id: str,
    progress: Progress | None = None,
    fold: bool = True,
    wait_s: float = 60.0,
) -> ImportReport:
    """Check, archive, journal and fold one export; see the module's doc.

    Raises ImportRefused (nothing stored) for what is not an export or is over the
    limit, NoSuchAccount for an unknown account, and the archive's or the journal's
    errors while storing. Once stored, nothing the fold meets is raised: it is in the
    report (``status``, ``outcome``), as ``healthlog status`` would show it.
    """
    source = inspect(path, max_bytes=settings.max_import_bytes)
    stored = archive_export(source, journal, archive, account_id=account_id, progress=progress)
    outcome = None
    if fold:
        outcome = fold_import(
            journal, archive, settings, stored.delivery_id, progress=progress, wait_s=wait_s
        )
    return report(journal, stored, outcome)


def report(journal: Journal, stored: Stored, outcome: Outcome | None) -> ImportReport:
    """The import's report, read from the journal (whoever folded it)."""
    delivery = journal.get_delivery(stored.delivery_id)
    if delivery is None:  # journalled a moment ago: only a journal wiped meanwhile
        raise HealthlogError("the imported delivery is not in the journal")
    state = State.from_json(delivery.fold_state)
    if outcome is not None and outcome.klass is OutcomeClass.DEFERRED:
        log.event(
            logger,
            logging.WARNING,
            "import.deferred",
            delivery_id=stored.delivery_id,
            reason=outcome.reason,
        )
    return ImportReport(
        delivery_id=stored.delivery_id,
        archive_key=stored.archive_key,
        size=stored.size,
        kind=stored.kind,
        status=delivery.status,
        outcome=outcome,
        points=delivery.points,
        records=state.records,
        incomparable=state.incomparable,
        repeated=delivery.repeated,
        uncovered=dict(state.uncovered),
        unreadable=dict(state.unreadable),
        cut=state.cut,
        failure=delivery.failure,
        refused=state.refused,
    )
