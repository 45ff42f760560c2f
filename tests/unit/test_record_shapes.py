"""A record's JSON for people (``reads.shapes.record_dict``): every field a section sends,
its label (``healthlog.reads.display``), its unit, and the source by its name.

The bodies are those of ``tests/fixtures/hae/``: no public body of these sections exists
(tests/fixtures/hae/samples/SOURCES.md says so; /work's research notes found none), so
those files are written from docs/hae-format.md, which cites the issue reports showing
the shapes the app really sends (a notification's source as an object, epoch dates,
localized status). The Health app's export is ``tests/fixtures/applehealth/export.xml``
(written by hand, its README says from what), read by the real importer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from healthlog.applehealth import read_export
from healthlog.hae.parse import parse
from healthlog.model import Item, Record
from healthlog.reads import display
from healthlog.reads.shapes import HEAD_FIELDS, record_columns, record_dict, source_name
from hypothesis import given
from hypothesis import strategies as st

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def shaped(name: str) -> list[dict[str, Any]]:
    """The records of a fixture body, folded by the HAE parser, as the interfaces get them."""
    result = parse((FIXTURES / "hae" / name).read_bytes())
    return [record_dict(r) for r in result.records]


def fields(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["field"]: f for f in record["fields"]}


def values(record: dict[str, Any]) -> dict[str, Any]:
    return {f["field"]: f["value"] for f in record["fields"]}


def test_state_of_mind_shows_its_labels_and_associations_as_lists() -> None:
    first, second = shaped("state_of_mind.json")
    assert [f["field"] for f in first["fields"]][:5] == [
        "kind", "valence", "valenceClassification", "labels", "associations",
    ]  # fmt: skip
    assert values(first) | {"metadata": None} == {
        "kind": "daily_mood",
        "valence": 0.62,
        "valenceClassification": "very_pleasant",
        "labels": ["content", "grateful"],
        "associations": ["family", "fitness"],
        "id": "5A7E0C1B-0000-4000-8000-000000000002",
        "metadata": None,
    }
    assert fields(first)["labels"]["label"] == "Labels"
    assert fields(first)["valenceClassification"]["label"] == "Valence classification"
    assert values(second)["labels"] == ["stressed"]
    assert first["source_name"] is None  # none sent


def test_a_medication_keeps_its_status_as_sent_and_its_dose() -> None:
    taken, skipped = shaped("medications.json")
    assert values(taken)["status"] == "Genommen"  # localized, never translated
    assert values(skipped)["status"] == "Skipped"
    assert fields(taken)["status"]["label"] == "Status"
    assert fields(taken)["dosage"] == {"field": "dosage", "label": "Dose", "value": 1}
    assert values(taken)["nickname"] == "Ibu"
    assert values(taken)["isArchived"] is False
    assert values(skipped)["codings"] == [
        {"code": "5640", "system": "http://www.nlm.nih.gov/research/umls/rxnorm"}
    ]
    assert [f["field"] for f in taken["fields"]][:3] == ["displayText", "nickname", "status"]


def test_a_symptom_has_its_severity_and_an_empty_source_has_no_name() -> None:
    headache, fatigue = shaped("symptoms.json")
    assert values(headache)["severity"] == "Leicht"
    assert fields(headache)["name"]["label"] == "Symptom"
    assert headache["source_name"] == "Health"
    assert fatigue["source"] == "" and fatigue["source_name"] is None


def test_cycle_tracking_values() -> None:
    flow, test = shaped("cycle_tracking.json")
    assert values(flow) == {"name": "Menstrual Flow", "value": "Medium", "isCycleStart": True}
    assert values(test) == {"name": "Ovulation Test Result", "value": "Positivo"}
    assert fields(flow)["name"]["label"] == "Type"


def test_an_ecg_has_its_classification_and_average_heart_rate_and_its_trace_apart() -> None:
    (ecg,) = shaped("ecg.json")
    assert values(ecg)["classification"] == "Sinusrhythmus"
    assert fields(ecg)["averageHeartRate"] == {
        "field": "averageHeartRate", "label": "Average heart rate", "value": 64, "unit": "bpm",
    }  # fmt: skip
    assert fields(ecg)["samplingFrequency"]["unit"] == "Hz"
    assert "voltage" not in fields(ecg)  # drawn as a trace, not listed
    assert [v["qty"] for v in ecg["series"]["voltage"]] == [-12.5, 3.25, 140.0]
    assert ecg["source_name"] == "Simon's Apple Watch"


def test_a_notification_has_its_threshold_heart_rates_and_its_source_by_name() -> None:
    (sent,) = shaped("heart_rate_notifications_observed.json")
    assert sent["source"].startswith("{")  # stored as the JSON of the object sent
    assert sent["source_name"] == "Apple Watch"
    assert fields(sent)["threshold"] == {
        "field": "threshold", "label": "Threshold", "value": 120, "unit": "bpm",
    }  # fmt: skip
    assert fields(sent)["heartRate"] == {
        "field": "heartRate", "label": "Heart rate", "value": [124.0, 127.0], "items": 2,
        "unit": "bpm",
    }  # fmt: skip
    assert values(sent)["heartNotification"] == "high_heart_rate_notification"
    # the object's other parts are a field of their own: nothing sent is left out
    assert values(sent)["source"] == {
        "bundleIdentifier": "com.apple.health.ABCD",
        "name": "Apple Watch",
    }
    (wiki,) = shaped("heart_rate_notifications_documented.json")
    assert values(wiki)["heartRate"] == [38.0]
    assert fields(wiki)["heartRateVariation"]["value"] == [61.0]
    assert fields(wiki)["heartRateVariation"]["unit"] == "ms"


def test_a_heartbeat_series_lists_its_beats() -> None:
    (beats,) = shaped("metrics_hrv_heartbeat_series.json")  # the empty series: no record
    assert fields(beats)["heartbeat"] == {
        "field": "heartbeat", "label": "Beats (time since the first)", "value": [0.0, 0.906],
        "items": 2, "unit": "s",
    }  # fmt: skip
    assert fields(beats)["qty"]["unit"] == "ms" and fields(beats)["qty"]["value"] == 41.2
    assert "date" not in fields(beats)  # the reading's time is its start


def test_records_of_the_health_apps_export_are_shaped_alike() -> None:
    with read_export(FIXTURES / "applehealth" / "export.xml") as reading:
        found = [record_dict(r) for batch in reading.batches() for r in batch.records]
    by_section: dict[str, list[dict[str, Any]]] = {}
    for r in found:
        by_section.setdefault(r["section"], []).append(r)
    (headache,) = by_section["symptoms"]
    assert values(headache)["severity"] == "Moderate" and headache["source_name"] == "Health"
    (event,) = by_section["heartRateNotifications"]
    assert event["source_name"] == "Ada’s Apple Watch"
    assert fields(event)["threshold"]["value"] == 120.0
    assert fields(event)["threshold"]["unit"] == "bpm"  # its thresholdUnits, for people
    (flow,) = by_section["cycleTracking"]
    assert values(flow)["value"] == "Medium" and values(flow)["isCycleStart"] is True


@pytest.mark.parametrize(
    ("stored", "body", "name"),
    [
        ("Health", {"source": "Health"}, "Health"),
        ("", {"source": ""}, None),
        (None, {}, None),
        ("  ", {}, None),
        ('{"name":"Apple Watch"}', {}, "Apple Watch"),
        (None, {"source": {"bundleIdentifier": "com.apple.health"}}, "com.apple.health"),
        (None, {"source": {"name": "", "deviceName": "Ada’s Watch"}}, "Ada’s Watch"),
        (
            "",
            {"device": "<<HKDevice: 0x2839>, name:Apple Watch, manufacturer:Apple Inc.>"},
            "Apple Watch",
        ),
        (None, {"device": "<<HKDevice: 0x2839>, manufacturer:Apple Inc.>"}, None),
        ("iPhone|Apple Watch", {}, "iPhone|Apple Watch"),  # pipe-joined, as sent
    ],
)
def test_a_source_is_named(stored: str | None, body: dict[str, Any], name: str | None) -> None:
    assert source_name(stored, body) == name


def test_the_documented_fields_of_every_section_have_a_label_for_people() -> None:
    """docs/hae-format.md's fields of each section (and what the app really sends) are
    labelled by the table, not by a name made up from the key."""
    sent = {
        "stateOfMind": "id kind labels associations valence valenceClassification metadata",
        "medications": "displayText nickname scheduledDate form status isArchived dosage codings",
        "symptoms": "name severity userEntered",
        "cycleTracking": "name value isCycleStart",
        "ecg": "classification severity averageHeartRate numberOfVoltageMeasurements "
        "samplingFrequency voltage",
        "heartRateNotifications": "heartNotification threshold heartRate heartRateVariation",
        "heartbeatSeries": "qty heartbeat",
    }
    for section, keys in sent.items():
        own = display.RECORD_SECTION_FIELDS.get(section, {})
        for key in keys.split():
            assert key in own or key in display.RECORD_FIELDS, (section, key)
            assert (
                display.record_field_label(section, key) == own.get(key)
                or (display.RECORD_FIELDS[key])
            )


def test_columns_are_every_field_once_in_the_sections_order() -> None:
    taken, skipped = shaped("medications.json")
    columns = record_columns([skipped, taken])
    assert [c["field"] for c in columns] == [
        "displayText", "nickname", "status", "dosage", "scheduledDate", "codings", "isArchived",
    ]  # fmt: skip
    assert columns[0] == {"field": "displayText", "label": "Medication"}
    assert record_columns([]) == []


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    section=st.sampled_from([*display.RECORD_FIELD_ORDER, "food", "somethingNew"]),
    body=st.dictionaries(st.text(min_size=1, max_size=12), json_values, max_size=8),
)
def test_every_field_sent_is_shown_once_as_sent(section: str, body: dict[str, Any]) -> None:
    """Whatever a body holds, each of its keys but the head's times and source is a field,
    once, with the value as sent (a list stays a list), in the section's order."""
    record = Record(section, "x", None, None, None, None, None, orjson.dumps(body).decode())
    shown = record_dict(record)
    keys = [f["field"] for f in shown["fields"]]
    expected = {
        k for k in body if k not in HEAD_FIELDS or (k == "source" and isinstance(body[k], dict))
    } - ({"date"} if "start" not in body else set())
    assert sorted(keys) == sorted(expected) and len(keys) == len(set(keys))
    assert all(f["value"] == body[f["field"]] for f in shown["fields"])
    ranks = [display.record_field_rank(section, k) for k in keys]
    assert ranks == sorted(ranks)
    assert all(f["label"] for f in shown["fields"])


def test_a_series_of_a_record_is_a_field_with_its_items() -> None:
    items = tuple(Item("heartRate", n, None, float(100 + n), unit="count/min") for n in range(3))
    record = Record("heartRateNotifications", "x", None, None, None, None, None, "{}", items)
    (field,) = record_dict(record)["fields"]
    assert field == {
        "field": "heartRate", "label": "Heart rate", "value": [100.0, 101.0, 102.0],
        "items": 3, "unit": "bpm",
    }  # fmt: skip
