"""The event sections: stateOfMind, medications, symptoms, cycleTracking, ecg,
heartRateNotifications (docs/hae-format.md, "Other sections").

Each is a list of objects read by ``records.build`` under a ``Spec``: how its identity
is made, which field is its name, which lists are series. Values are stored as sent:
medication status, ECG classification, symptom and cycle names follow the phone's
language (Lybron/health-auto-export#66, #73) and are never translated or guessed.
"""

from __future__ import annotations

from healthlog.hae import records
from healthlog.hae.records import Found, NotUnderstood, Spec, field_text, given_id, keyed


def _mood_identity(element: dict[str, object], start: str | None, end: str | None) -> str:
    return given_id(element) or keyed(field_text(element, "kind"), start)


# "stateOfMind": [{"id": "5A7E0C1B-...", "start": "2025-01-10 09:00:00 +0000",
#   "end": "2025-01-10 09:00:00 +0000", "kind": "daily_mood", "labels": ["calm"],
#   "associations": ["work"], "valence": 0.4, "valenceClassification": "pleasant"}]
STATE_OF_MIND = Spec("stateOfMind", _mood_identity, name_key="kind")


def _medication_identity(element: dict[str, object], start: str | None, end: str | None) -> str:
    # no stable ids (#70): the medication as displayed and the dose's scheduled time,
    # else the time it was logged
    scheduled, _ = records.when(element.get("scheduledDate"))
    return keyed(field_text(element, "displayText"), scheduled or start)


# "medications": [{"displayText": "Ibuprofen 200 mg", "start": "2025-10-01 08:02:00 +0200",
#   "scheduledDate": "2025-10-01 08:00:00 +0200", "status": "Taken", "isArchived": false,
#   "dosage": 1, "codings": []}]
MEDICATIONS = Spec(
    "medications",
    _medication_identity,
    name_key="displayText",
    # codings describe the medication; they are not a series in time
    not_series=frozenset({"codings"}),
)


def _named_identity(element: dict[str, object], start: str | None, end: str | None) -> str:
    return keyed(field_text(element, "name"), start)


# "symptoms": [{"start": "2025-01-10 08:00:00 +0000", "end": "2025-01-10 12:00:00 +0000",
#   "name": "Headache", "severity": "Mild", "userEntered": true, "source": "Health"}]
SYMPTOMS = Spec("symptoms", _named_identity, name_key="name")

# "cycleTracking": [{"start": "2025-02-03 00:00:00 +0100", "end": "2025-02-03 23:59:59 +0100",
#   "name": "Menstrual Flow", "value": "Medium", "isCycleStart": true}]
CYCLE_TRACKING = Spec("cycleTracking", _named_identity, name_key="name")


def _ecg_identity(element: dict[str, object], start: str | None, end: str | None) -> str:
    # one reading at a time per watch: its start identifies it
    return keyed(start)


# an ECG keeps at most ``records.Caps.ecg`` voltages (``Caps.per_record``)
# "ecg": [{"start": "2025-03-01 10:00:00 +0000", "classification": "Sinus Rhythm",
#   "averageHeartRate": 64, "samplingFrequency": 512, "numberOfVoltageMeasurements": 15360,
#   "voltageMeasurements": [{"date": 1740823200.0, "voltage": -12.5, "units": "mcV"}, ...]}]
ECG = Spec(
    "ecg",
    _ecg_identity,
    name_key="classification",
    renames={"voltageMeasurements": "voltage"},
    qty_keys={"voltage": ("voltage", "qty")},
)


def _notification_identity(element: dict[str, object], start: str | None, end: str | None) -> str:
    return keyed(field_text(element, "heartNotification"), start)


# "heartRateNotifications": [{"heartNotification": "high_heart_rate_notification",
#   "threshold": 120, "start": "2025-04-01 14:00:00 +0000", "end": "...",
#   "heartRateData": [{"date": 1743516000.5, "qty": 124, "units": "count/min"}],
#   "source": {"name": "Apple Watch", "bundleIdentifier": "com.apple.health"}}]
# (the wiki's shape instead: "heartRate": [{"hr": 124, "units": "count/min",
#   "timestamp": {"start": "...", "end": "...", "interval": {...}}}], "heartRateVariation")
HEART_RATE_NOTIFICATIONS = Spec(
    "heartRateNotifications",
    _notification_identity,
    name_key="heartNotification",
    renames={"heartRateData": "heartRate"},
    qty_keys={"heartRate": ("hr", "qty", "Avg"), "heartRateVariation": ("qty", "hrv", "value")},
)

SPECS = {
    spec.section: spec
    for spec in (
        STATE_OF_MIND,
        MEDICATIONS,
        SYMPTOMS,
        CYCLE_TRACKING,
        ECG,
        HEART_RATE_NOTIFICATIONS,
    )
}


def read(name: str, section: object, found: Found) -> None:
    records.read(section, SPECS[name], found)


__all__ = ["SPECS", "NotUnderstood", "read"]
