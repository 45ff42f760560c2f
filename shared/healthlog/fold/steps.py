"""Folds in steps: a delivery too large for one transaction, an export of the Health app.

``fold_in_steps`` reads the archived export (``Archive.local_file``: the local folder's
own file, or S3's object streamed to a temporary file, since a zip is read by seeking)
with ``healthlog.applehealth``, batch by batch, and commits each batch as a *step*: its
points, its records and the position it reached, in one transaction
(``Journal.write_step``). The outcome is written with the last step
(``Journal.write_outcome(step=...)``). docs/architecture.md, "Folds in steps", has the
rules; in short:

* **Resumable.** A fold interrupted anywhere (SIGKILL included) rolls back the step in
  hand; the next fold of the delivery goes on after the last committed one, with the
  counts committed with it (``State``), and comes to the same showcase, day counts and
  extents as a fold in one go. A refold of a settled delivery (replay) starts again from
  the beginning, and its first step takes the delivery back to ``pending``.
* **Guarded.** Every step is written only if the delivery still has the status and the
  position this fold read: a second folder gets ``Conflict``, and writes nothing.
* **Crashes count once per step.** A step commits the attempt count as 1 (this fold,
  still running), so a fold killed again and again *without progress* becomes a crash
  suspect as any delivery does, and one that moves on is not blamed for earlier kills.
* **Budgets.** The fold's deadline is one step's (``PlayOptions.deadline_s``); between
  steps ``stop()`` may pause it (``Paused``, a circumstance: the delivery stays
  ``pending`` and the next pass goes on), which is how a served or Lambda pass keeps to
  its budget with an import in its queue.
* **Outcomes.** ``parsed``; ``partial`` with the HealthKit types (or elements) that have
  no mapping, or could not be read, as uncovered keys, counted per type in the state;
  ``partial`` with ``export.xml:cut`` for a file cut short (what was read is folded, the
  state says how much was not); ``failed`` for what is not an export (``unreadable``).

Nothing here imports lxml until an export is folded: a fold of HAE deliveries never
loads the reader (tests/unit/test_cold_start.py).
"""

from __future__ import annotations

import logging
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import orjson

from healthlog import log
from healthlog.archive.keys import EXPORT_XML, EXPORT_ZIP
from healthlog.archive.port import Archive
from healthlog.errors import FoldDeadline, Paused, UnreadableBody
from healthlog.journal.port import Journal
from healthlog.model import Delivery, ParseStatus, Step, distinct_points, status_for

if TYPE_CHECKING:
    from healthlog.applehealth import Batch, ExportReading
    from healthlog.applehealth.aside import AsideReading

logger = logging.getLogger("healthlog.fold")

#: a point's place in the showcase's primary key (metric, start, field, source, seq)
_KEY_ORDER = itemgetter(0, 3, 1, 2, 10)
#: the content types that fold in steps
STEPPED = frozenset({EXPORT_ZIP, EXPORT_XML})
#: the uncovered key of an export cut short (or damaged): what follows the cut is not read
CUT = "export.xml:cut"


def folds_in_steps(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() in STEPPED


@dataclass(frozen=True, slots=True)
class FoldProgress:
    """How far a fold in steps is, after each committed step (for a progress bar)."""

    delivery_id: str
    bytes_read: int  # of export.xml, as it unpacks
    bytes_total: int
    points: int  # written by the committed steps
    records: int
    steps: int


Progress = Callable[[FoldProgress], None]


@dataclass
class State:
    """A fold in steps' own account of what it found, committed with every step.

    Kept in ``deliveries.fold_state`` (JSON) and with the outcome, as the import's report:
    names and counts only, never a value or a source name.
    """

    points: int = 0
    records: int = 0
    incomparable: int = 0
    #: samples the export held more than once exactly, kept once (``distinct_points``)
    repeated: int = 0
    steps: int = 0
    #: this fold began on a delivery none of whose points were stored: a sample that
    #: equals a row an earlier step wrote is an exact repeat (a refold's are its own)
    first: bool = True
    #: HealthKit types (or elements) with no mapping, and how many elements of each
    uncovered: Counter[str] = field(default_factory=Counter)
    #: elements of a mapped type that could not be read, per type
    unreadable: Counter[str] = field(default_factory=Counter)
    bytes_read: int = 0
    xml_size: int = 0
    #: where a cut file stopped: line, bytes read of export.xml, elements read
    cut: dict[str, Any] | None = None
    #: why nothing of the export could be read (the reader's words: a line and column,
    #: never a value), for a failed delivery
    refused: str | None = None

    def to_json(self) -> str:
        return orjson.dumps(
            {
                "points": self.points,
                "records": self.records,
                "incomparable": self.incomparable,
                "repeated": self.repeated,
                "steps": self.steps,
                "first": self.first,
                "uncovered": dict(sorted(self.uncovered.items())),
                "unreadable": dict(sorted(self.unreadable.items())),
                "bytes_read": self.bytes_read,
                "xml_size": self.xml_size,
                "cut": self.cut,
                "refused": self.refused,
            }
        ).decode()

    @classmethod
    def from_json(cls, text: str | None) -> State:
        if not text:
            return cls()
        found = orjson.loads(text)
        return cls(
            points=int(found.get("points", 0)),
            records=int(found.get("records", 0)),
            incomparable=int(found.get("incomparable", 0)),
            repeated=int(found.get("repeated", 0)),
            steps=int(found.get("steps", 0)),
            first=bool(found.get("first", False)),
            uncovered=Counter(found.get("uncovered") or {}),
            unreadable=Counter(found.get("unreadable") or {}),
            bytes_read=int(found.get("bytes_read", 0)),
            xml_size=int(found.get("xml_size", 0)),
            cut=found.get("cut"),
            refused=found.get("refused"),
        )

    def keys(self) -> tuple[str, ...]:
        """The delivery's uncovered keys: what it holds that was not folded."""
        keys = set(self.uncovered) | set(self.unreadable)
        if self.cut is not None:
            keys.add(CUT)
        return tuple(sorted(keys))


@dataclass(frozen=True, slots=True)
class Folded:
    """What a fold in steps came to (the outcome was written, unless a dry run)."""

    status: ParseStatus
    state: State


@dataclass
class _Snapshot:
    """The reading's counts as they stood when a batch was yielded (before the next)."""

    uncovered: Counter[str]
    unreadable: Counter[str]
    incomparable: int


class StepFold:
    """One fold in steps of one delivery; ``run`` does it, ``fail`` writes its failure."""

    def __init__(
        self,
        journal: Journal,
        archive: Archive,
        delivery: Delivery,
        *,
        step_points: int,
        deadline_s: float,
        max_expanded: int,
        aside_bytes: int = 16 * 1024**2,
        clock: Callable[[], float],
        stop: Callable[[], bool] | None = None,
        progress: Progress | None = None,
        dry_run: bool = False,
    ) -> None:
        self._journal = journal
        self._archive = archive
        self._delivery = delivery
        self._step_points = step_points
        self._max_expanded = max_expanded
        self._aside_bytes = aside_bytes
        self._deadline_s = deadline_s
        self._clock = clock
        self._stop = stop
        self._progress = progress
        self._dry_run = dry_run
        # a settled delivery (a replay) folds again from the beginning
        resuming = delivery.status is ParseStatus.PENDING and delivery.fold_position > 0
        #: the status and position the next write is guarded by
        self.expected = delivery.status
        self.position = delivery.fold_position if resuming else 0
        self.state = (
            State.from_json(delivery.fold_state)
            if resuming
            else State(first=delivery.status is ParseStatus.PENDING and delivery.points == 0)
        )
        self._base = (
            Counter(self.state.uncovered),
            Counter(self.state.unreadable),
            self.state.incomparable,
        )

    def run(self) -> Folded:
        """Fold the rest of the export, step by step; the outcome with the last step.

        Raises ``UnreadableBody`` for what is not an export, ``FoldDeadline`` for a step
        past its deadline, ``Paused`` when ``stop()`` asked for it between steps, and what
        the journal and the archive raise.
        """
        from healthlog.applehealth import ExportCut, ExportUnreadable, read_export
        from healthlog.applehealth.aside import read_aside

        with self._archive.local_file(self._delivery.archive_key) as path:
            try:
                opened = read_export(path, batch_points=self._step_points, resume=self.position)
                if max(opened.xml_size, opened.export.expanded) > self._max_expanded:
                    opened.close()
                    raise ExportUnreadable("the export expands to more than the import limit")
                reading: ExportReading | AsideReading = opened
                if reading.xml_size >= self._aside_bytes:
                    # large: parsed in a process of its own while this one writes
                    reading.close()
                    reading = read_aside(path, batch_points=self._step_points, resume=self.position)
            except ExportUnreadable as exc:
                self.state.refused = str(exc)
                raise UnreadableBody(str(exc)) from None
            with reading:
                self.state.xml_size = reading.xml_size
                return self._steps(reading, ExportCut, ExportUnreadable)

    def _steps(
        self,
        reading: ExportReading | AsideReading,
        cut_error: type[Exception],
        unreadable: type[Exception],
    ) -> Folded:
        batches = reading.batches()
        held: tuple[Batch, _Snapshot] | None = None
        cut: str | None = None
        deadline = self._clock() + self._deadline_s
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except cut_error as exc:
                cut = str(exc)
                break
            except unreadable as exc:  # its DOCTYPE never ends, a DTD: not read
                self.state.refused = str(exc)
                raise UnreadableBody(str(exc)) from None
            except (zipfile.BadZipFile, zlib.error, EOFError):
                # the zip's export.xml is damaged from here on: like a cut
                cut = "the zip's export.xml is damaged"
                break
            if self._clock() > deadline:
                raise FoldDeadline(uncovered=self._counted(held, 0).keys() if held else ())
            if held is not None:
                self._write(*held, last=False)
                if self._stop is not None and self._stop():
                    raise Paused()
                deadline = self._clock() + self._deadline_s
            held = (batch, self._snapshot(reading))
        if held is None and cut is not None and self.position == 0:
            # not one element could be read: nothing of it can be folded
            self.state.refused = cut
            raise UnreadableBody(cut)
        if held is None:  # a resumed fold cut before its first batch: only the outcome
            from healthlog.applehealth import Batch

            empty = Batch([], [], self.position, reading.bytes_read)
            held = (empty, self._snapshot(reading))
        batch, snapshot = held
        if cut is not None:
            self.state.cut = {
                "bytes_read": reading.bytes_read,
                "xml_size": reading.xml_size,
                "at": cut,
            }
            log.event(
                logger,
                logging.WARNING,
                "fold.export_cut",
                delivery_id=self._delivery.id,
                bytes_read=reading.bytes_read,
                bytes_total=reading.xml_size,
            )
        return self._write(batch, snapshot, last=True)

    def _snapshot(self, reading: ExportReading | AsideReading) -> _Snapshot:
        return _Snapshot(
            Counter(reading.uncovered), Counter(reading.unreadable), reading.incomparable
        )

    def _counted(self, held: tuple[Batch, _Snapshot], repeated: int) -> State:
        """The state as it will stand once ``held`` is written (its points distinct,
        ``repeated`` exact repeats left out of them)."""
        batch, snapshot = held
        base_uncovered, base_unreadable, base_incomparable = self._base
        return State(
            points=self.state.points + len(batch.points),
            records=self.state.records + len(batch.records),
            incomparable=base_incomparable + snapshot.incomparable,
            repeated=self.state.repeated + repeated,
            first=self.state.first,
            steps=self.state.steps + 1,
            uncovered=base_uncovered + snapshot.uncovered,
            unreadable=base_unreadable + snapshot.unreadable,
            bytes_read=batch.bytes_read,
            xml_size=self.state.xml_size,
            cut=self.state.cut,
        )

    def _write(self, batch: Batch, snapshot: _Snapshot, *, last: bool) -> Folded:
        # every distinct sample keyed apart, exact repeats held once; in key order: the
        # showcase's b-tree takes them faster
        kept, repeated = distinct_points(batch.points)
        if not self._dry_run and kept:
            kept, equal = self._journal.beside_own(
                self._delivery.account_id, self._delivery.id, kept
            )
            if self.state.first:
                repeated += len(equal)  # the same sample, in an earlier step
            else:
                kept += equal  # a refold writes what it wrote before, again
        kept.sort(key=_KEY_ORDER)
        batch = replace(batch, points=kept)
        state = self._counted((batch, snapshot), repeated)
        step = Step(
            after=self.position,
            position=batch.position,
            points=state.points,
            state=state.to_json(),
            records=state.records,
            repeated=state.repeated,
        )
        keys = state.keys()
        status = status_for(failed=False, uncovered=keys)
        if not self._dry_run:
            points = batch.points
            if last:
                self._journal.write_outcome(
                    self._delivery.id,
                    expected=self.expected,
                    status=status,
                    uncovered=keys,
                    failure=None,
                    points=points,
                    records=batch.records,
                    step=step,
                )
            else:
                self._journal.write_step(
                    self._delivery.id,
                    expected=self.expected,
                    step=step,
                    points=points,
                    records=batch.records,
                )
                self.expected = ParseStatus.PENDING
        self.position, self.state = batch.position, state
        if self._progress is not None:
            self._progress(
                FoldProgress(
                    self._delivery.id,
                    batch.bytes_read,
                    state.xml_size,
                    state.points,
                    state.records,
                    state.steps,
                )
            )
        return Folded(status, state)

    def fail(self, reason: str, uncovered: tuple[str, ...]) -> None:
        """Write the fold's failure: with the steps it committed, if any (their points
        stay in the showcase, and the delivery's count says how many)."""
        keys = tuple(sorted(set(uncovered) | set(self.state.keys())))
        step = None
        if self.position or self.expected is not self._delivery.status or self.state.refused:
            step = Step(
                self.position,
                self.position,
                self.state.points,
                self.state.to_json(),
                self.state.records,
                self.state.repeated,
            )
        self._journal.write_outcome(
            self._delivery.id,
            expected=self.expected,
            status=status_for(failed=True, uncovered=keys),
            uncovered=keys,
            failure=reason,
            points=(),
            step=step,
        )
