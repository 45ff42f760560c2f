"""Fold one delivery and say honestly what came of it.

``Player.play`` is the one public door to the classifier: the scheduled pass and replay
both call it, so an outcome is written and counted the same way everywhere. It never
raises for anything that happens while folding one delivery: every exception becomes an
``Outcome`` (``failed`` or ``deferred``), and a fold never takes the process down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from healthlog import log
from healthlog.archive.port import Archive
from healthlog.errors import (
    Conflict,
    FoldDeadline,
    NoSuchAccount,
    OutcomeWriteFailed,
    WriteInterrupted,
)
from healthlog.fold.classify import CRASHED, SUSPECT, _classify
from healthlog.fold.steps import Progress, State, StepFold, folds_in_steps
from healthlog.journal.driver import write_bound
from healthlog.journal.port import Journal
from healthlog.model import (
    Delivery,
    Outcome,
    OutcomeClass,
    ParseResult,
    ParseStatus,
    Point,
    Record,
    Step,
    status_for,
)

logger = logging.getLogger("healthlog.fold")

Parse = Callable[..., ParseResult]


def _slices(result: ParseResult, size: int) -> list[tuple[int, list[Point], list[Record]]]:
    """A parsed body's points and records in runs of about ``size`` points and items,
    each with how far into the body it reaches (points, then records and their items,
    in the parser's order, which is the same each time the body is parsed): one run
    for a body within ``size``."""
    size = max(1, size)
    points, records = result.points, result.records
    total = len(points) + sum(1 + len(r.items) for r in records)
    if total <= size:
        return [(total, points, records)]
    runs: list[tuple[int, list[Point], list[Record]]] = []
    reach = 0
    for at in range(0, len(points), size):
        chunk = points[at : at + size]
        reach += len(chunk)
        runs.append((reach, chunk, []))
    held: list[Record] = []
    for record in records:
        held.append(record)
        reach += 1 + len(record.items)
        if sum(1 + len(r.items) for r in held) >= size:
            runs.append((reach, [], held))
            held = []
    if held:
        runs.append((reach, [], held))
    return runs


def _default_parse() -> Parse:
    from healthlog.hae import parse

    return parse


@dataclass(frozen=True)
class PlayOptions:
    #: one delivery's own budget, seconds (the parser checks it as it goes); a fold in
    #: steps gives it to each step
    deadline_s: float = 120.0
    #: folds that started and never ended (the process died) before ``crashed``
    max_attempts: int = 3
    #: a fold in steps commits a step about every this many points
    step_points: int = 50_000
    #: a fold in steps refuses an export.xml larger than this (``unreadable``), as the
    #: import does (Settings.max_import_bytes): a body put in the archive some other way
    #: must not fold for ever
    max_expanded: int = 32 * 1024**3
    #: a fold in steps reads an export.xml at least this large in a process of its own,
    #: beside its writes (``healthlog.applehealth.aside``)
    aside_bytes: int = 16 * 1024**2


class Player:
    def __init__(
        self,
        journal: Journal,
        archive: Archive,
        options: PlayOptions | None = None,
        *,
        parse: Parse | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._journal = journal
        self._archive = archive
        self._options = options or PlayOptions()
        self._parse = parse or _default_parse()
        self._clock = clock
        # attempts this process counted, ended by a circumstance, and could not release
        # (the journal failed again): released before the count is next read, so that
        # circumstances never add up to ``crashed``
        self._unreleased: set[str] = set()

    def play(
        self,
        delivery_id: str,
        *,
        dry_run: bool = False,
        pending_only: bool = False,
        last_try: bool = True,
        stop: Callable[[], bool] | None = None,
        progress: Progress | None = None,
        until: float | None = None,
    ) -> Outcome:
        """Fold one delivery; with ``dry_run``, read and parse it but write nothing.

        The delivery's own deadline (``deadline_s`` from the start of this play) bounds
        its write too, and ``until`` (a ``time.monotonic()`` value: the end of the pass's
        time) bounds it when it comes first. A write interrupted at its own deadline is
        ``FoldDeadline`` (failed, ``deadline``); one interrupted at ``until`` is
        ``WriteInterrupted`` (deferred: the pass's time ran out, it stays pending). A
        fold in steps has a deadline per step, which its parser checks; its step writes
        are bounded by ``until`` only.

        A delivery that folds in steps (an import of the Health app's export,
        ``fold.steps``) asks ``stop()`` between its steps, and pauses (``Paused``,
        deferred: it goes on from its last step next time) when it says so; ``progress``
        hears of every step it commits.

        ``pending_only`` (the pass) leaves alone a delivery that is no longer pending by
        the time it is folded: another writer got there first (``Conflict``, deferred).

        A delivery whose folds died ``max_attempts`` times is a *crash suspect*: the
        process may have been killed from outside, or the body kills it. With
        ``last_try`` False (the pass, in its backlog) it is deferred (``crash_suspect``)
        for one more try on its own after the backlog; that try is the last: if it dies
        too, the next play finds the count past the limit and fails it ``crashed``.
        """
        started = self._clock()
        delivery: Delivery | None = None
        stepped: StepFold | None = None
        attempt_open = False
        try:
            if delivery_id in self._unreleased and not dry_run:
                self._journal.release_attempt(delivery_id)
                self._unreleased.discard(delivery_id)
            delivery = self._journal.get_delivery(delivery_id)
            account = None if delivery is None else self._journal.get_account(delivery.account_id)
            if delivery is None or account is None:
                raise NoSuchAccount()
            if pending_only and delivery.status is not ParseStatus.PENDING:
                raise Conflict()
            if folds_in_steps(delivery.content_type):
                stepped = StepFold(
                    self._journal,
                    self._archive,
                    delivery,
                    step_points=self._options.step_points,
                    max_expanded=self._options.max_expanded,
                    aside_bytes=self._options.aside_bytes,
                    deadline_s=self._options.deadline_s,
                    clock=self._clock,
                    stop=stop,
                    progress=progress,
                    dry_run=dry_run,
                )
            limit = self._options.max_attempts
            if not dry_run and delivery.attempts > limit:
                # every fold of this body died with the process, its last try alone too:
                # stop the loop
                self._write_failure(delivery, CRASHED, (), stepped)
                return self._done(delivery_id, OutcomeClass.FAILED, (), 0, CRASHED, started)
            if not dry_run and delivery.attempts == limit and not last_try:
                return self._done(delivery_id, OutcomeClass.DEFERRED, (), 0, SUSPECT, started)
            if not dry_run:
                self._journal.begin_attempt(delivery_id)
                attempt_open = True
            if stepped is not None:
                with write_bound(until):
                    folded = stepped.run()
                attempt_open = False
                return self._done(
                    delivery_id,
                    OutcomeClass(folded.status.value),
                    folded.state.keys(),
                    folded.state.points,
                    None,
                    started,
                    records=folded.state.records,
                    incomparable=folded.state.incomparable,
                )
            body = self._archive.read(delivery.archive_key)
            result = self._parse(
                body,
                deadline=started + self._options.deadline_s,
                content_type=delivery.content_type,
                tz=account.time_zone,
            )
            status = status_for(failed=False, uncovered=result.uncovered)
            if not dry_run:
                # the own deadline, in time.monotonic()'s terms (the journal's clock)
                own = time.monotonic() + (started + self._options.deadline_s - self._clock())
                try:
                    with write_bound(own if until is None else min(own, until)):
                        self._write(delivery, status, result)
                except WriteInterrupted as exc:
                    if until is not None and until < own:
                        raise  # the pass's time, which others used: stays pending
                    # the write alone did not fit what its own budget left
                    raise FoldDeadline(uncovered=result.uncovered) from exc
                attempt_open = False
            klass = OutcomeClass(status.value)
            return self._done(
                delivery_id,
                klass,
                result.uncovered,
                len(result.points),
                None,
                started,
                records=len(result.records),
                incomparable=result.incomparable,
            )
        except Exception as exc:
            klass, reason = _classify(exc)
            uncovered: tuple[str, ...] = getattr(exc, "uncovered", ())
            if klass is OutcomeClass.FAILED and delivery is not None and not dry_run:
                try:
                    self._write_failure(delivery, reason, uncovered, stepped)
                    attempt_open = False
                except Exception:
                    # nothing to write the outcome with: "not done", stay pending
                    klass, reason = _classify(OutcomeWriteFailed())
            if attempt_open and not getattr(exc, "crash", False):
                # a process of the fold's that died (ReaderDied) is a crash: counted
                self._release(delivery_id)
            return self._done(delivery_id, klass, uncovered, 0, reason, started)

    def _write(self, delivery: Delivery, status: ParseStatus, result: ParseResult) -> None:
        """The body's points, records and outcome: in one transaction, or, for a body of
        more than ``step_points`` points and items, in steps of about that many, each its
        own transaction, the outcome with the last (docs/architecture.md, "Folds in
        steps"): the journal's write lock is held for one step at a time, so another
        account's delivery is taken between two. A fold whose process died between two
        steps goes on after the last one committed (its position counts the points and
        items written), as an import's does."""
        parts = _slices(result, self._options.step_points)
        if len(parts) == 1:
            self._journal.write_outcome(
                delivery.id,
                expected=delivery.status,
                status=status,
                uncovered=result.uncovered,
                failure=None,
                points=result.points,
                records=result.records,
                repeated=result.repeated,
            )
            return
        resuming = delivery.status is ParseStatus.PENDING and delivery.fold_position > 0
        done = delivery.fold_position if resuming else 0
        expected = delivery.status
        points = records = steps = 0
        for n, (reach, some_points, some_records) in enumerate(parts, 1):
            points += len(some_points)
            records += len(some_records)
            steps += 1
            if reach <= done:
                continue  # written by the fold that died after it
            step = Step(
                after=done,
                position=reach,
                points=points,
                state=State(
                    points=points, records=records, repeated=result.repeated, steps=steps
                ).to_json(),
                records=records,
                repeated=result.repeated,
            )
            if n == len(parts):
                self._journal.write_outcome(
                    delivery.id,
                    expected=expected,
                    status=status,
                    uncovered=result.uncovered,
                    failure=None,
                    points=some_points,
                    records=some_records,
                    step=step,
                )
            else:
                self._journal.write_step(
                    delivery.id,
                    expected=expected,
                    step=step,
                    points=some_points,
                    records=some_records,
                )
                expected, done = ParseStatus.PENDING, reach

    def _write_failure(
        self,
        delivery: Delivery,
        reason: str,
        uncovered: tuple[str, ...],
        stepped: StepFold | None = None,
    ) -> None:
        if stepped is not None:
            stepped.fail(reason, uncovered)  # with the steps it committed
            return
        self._journal.write_outcome(
            delivery.id,
            expected=delivery.status,
            status=status_for(failed=True, uncovered=uncovered),
            uncovered=uncovered,
            failure=reason,
            points=(),
        )

    def _release(self, delivery_id: str) -> None:
        try:
            self._journal.release_attempt(delivery_id)
        except Exception:
            # the count stays raised until the next play of this delivery here releases
            # it; if this process dies first, the raised count is what a crash leaves
            self._unreleased.add(delivery_id)
            log.event(logger, logging.WARNING, "fold.attempt_not_released", delivery_id=delivery_id)

    def _done(
        self,
        delivery_id: str,
        klass: OutcomeClass,
        uncovered: tuple[str, ...],
        points: int,
        reason: str | None,
        started: float,
        *,
        records: int = 0,
        incomparable: int = 0,
    ) -> Outcome:
        outcome = Outcome(
            delivery_id=delivery_id,
            klass=klass,
            uncovered=uncovered,
            points=points,
            reason=reason,
            duration_s=self._clock() - started,
            records=records,
            incomparable=incomparable,
        )
        level = {
            OutcomeClass.DEFERRED: logging.WARNING,
            OutcomeClass.FAILED: logging.ERROR,
        }.get(klass, logging.INFO)
        log.event(
            logger,
            level,
            "delivery.folded",
            delivery_id=delivery_id,
            outcome=klass.value,
            reason=reason,
            points=points,
            records=records,
            incomparable=incomparable,
            uncovered=len(uncovered),
            duration_ms=round(outcome.duration_s * 1000, 1),
        )
        return outcome
