"""CSV deliveries: HAE's multipart/form-data export, accepted, archived and folded like JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from healthlog.archive.local import LocalArchive
from healthlog.fold.player import Player
from healthlog.model import OutcomeClass, ParseStatus
from healthlog.ops.reconcile import reconcile

from tests.unit.test_hae_csv import BOUNDARY, CONTENT_TYPE, METRICS, WORKOUTS, multipart
from tests.unit.test_ingest import Rig, make_rig


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    yield from make_rig(tmp_path, LocalArchive(tmp_path / "archive"))


def post_form(rig: Rig, body: bytes, content_type: str = CONTENT_TYPE) -> tuple[int, str]:
    reply = rig.post(body, {"Authorization": f"Bearer {rig.token}", "Content-Type": content_type})
    return reply.status, reply.body


def test_a_csv_export_is_archived_byte_for_byte_and_folds_into_the_showcase(rig: Rig) -> None:
    body = multipart(("metrics", METRICS), ("workouts", WORKOUTS))
    status, text = post_form(rig, body)
    assert status == 200, text
    delivery = rig.journal.get_delivery(json.loads(text)["id"])
    assert delivery is not None
    assert delivery.content_type == CONTENT_TYPE  # the boundary is kept for the fold
    assert delivery.archive_key.endswith(".form")
    assert rig.archive.read(delivery.archive_key) == body

    outcome = Player(rig.journal, rig.archive).play(delivery.id)
    assert outcome.klass is OutcomeClass.PARSED
    metrics = {sp.point.metric for sp in rig.journal.export_points()}
    assert metrics == {"active_energy", "heart_rate", "weight_body_mass"}
    assert [r.record.section for r in rig.journal.export_records()] == ["workouts"]


def test_a_quoted_boundary_is_read(rig: Rig) -> None:
    status, text = post_form(rig, multipart(("metrics", METRICS)),
                             f'multipart/form-data; boundary="{BOUNDARY}"')  # fmt: skip
    assert status == 200, text


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (multipart(("metrics", METRICS)), "multipart/form-data"),  # no boundary
        (multipart(("metrics", METRICS)), "multipart/form-data; boundary=other"),
        (multipart(("metrics", METRICS))[:-30], CONTENT_TYPE),  # cut short
        (b'{"data": {}}', CONTENT_TYPE),
    ],
    ids=["no boundary", "wrong boundary", "truncated", "json as form"],
)
def test_a_body_that_is_not_the_form_its_header_names_is_400_and_nothing_is_stored(
    rig: Rig, body: bytes, content_type: str
) -> None:
    status, text = post_form(rig, body, content_type)
    assert status == 400
    assert "multipart form" in text
    rig.assert_nothing_stored()


def test_a_csv_body_journalled_by_reconcile_still_folds(rig: Rig) -> None:
    status, text = post_form(rig, multipart(("metrics", METRICS)))
    assert status == 200
    key = rig.journal.deliveries()[0].archive_key
    # the row is lost (a crash between archive and journal): reconcile knows only the key
    orphan = key.replace(json.loads(text)["id"][:8], "0" * 8)
    rig.archive.put(orphan, rig.archive.read(key))
    assert reconcile(rig.journal, rig.archive).journalled == 1
    recovered = next(d for d in rig.journal.deliveries() if d.archive_key == orphan)
    assert recovered.content_type == "multipart/form-data"
    assert Player(rig.journal, rig.archive).play(recovered.id).klass is OutcomeClass.PARSED
    assert rig.journal.get_delivery(recovered.id).status is ParseStatus.PARSED  # type: ignore[union-attr]
