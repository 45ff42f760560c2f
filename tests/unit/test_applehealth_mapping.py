"""The Health export gives the Points and Records an HAE delivery of the same data gives.

Each case writes one tiny ``export.xml`` and the HAE JSON body that says the same
thing, reads the first with ``healthlog.applehealth`` and the second with
``healthlog.hae.parse``, and compares: every column equal, and everything in HAE's
``extra`` also in the export's (which adds the export's own fields: ``sourceVersion``,
``device``, ``creationDate``, ``metadata``).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from healthlog.applehealth import read_export
from healthlog.hae.parse import parse
from healthlog.model import Item, Point, Record

WATCH = "Ada’s Apple Watch"


def export_of(tmp_path: Path, *elements: str) -> tuple[list[Point], list[Record]]:
    path = tmp_path / "export.xml"
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<HealthData locale="en_GB">\n'
        ' <ExportDate value="2024-04-02 09:12:44 +0200"/>\n'
        + "\n".join(elements)
        + "\n</HealthData>\n",
        encoding="utf-8",
    )
    points: list[Point] = []
    found: list[Record] = []
    with read_export(path) as reading:
        for batch in reading.batches():
            points += batch.points
            found += batch.records
        assert not reading.uncovered and not reading.unreadable
    return points, found


def hae_of(data: dict[str, object]) -> tuple[list[Point], list[Record]]:
    result = parse(orjson.dumps({"data": data}))
    assert result.uncovered == ()
    return result.points, result.records


def record(
    kind: str,
    unit: str | None,
    value: str,
    start: str,
    end: str,
    source: str = WATCH,
    inner: str = "",
) -> str:
    unit_attr = f' unit="{unit}"' if unit is not None else ""
    return (
        f'<Record type="{kind}" sourceName="{source}" sourceVersion="10.3.1"{unit_attr} '
        f'startDate="{start}" endDate="{end}" value="{value}">{inner}</Record>'
    )


def assert_same_points(export: list[Point], hae: list[Point]) -> None:
    assert len(export) == len(hae)
    for mine, theirs in zip(export, hae, strict=True):
        assert mine._replace(extra=None) == theirs._replace(extra=None)
        sent = orjson.loads(theirs.extra) if theirs.extra else {}
        kept = orjson.loads(mine.extra) if mine.extra else {}
        assert sent.items() <= kept.items()


Q = "HKQuantityTypeIdentifier"
T0, T1 = "2024-03-30 08:02:10 +0100", "2024-03-30 08:12:31 +0100"

# (HealthKit type, export unit, export value, HAE name, HAE units, HAE point fields)
QUANTITIES = [
    ("StepCount", "count", "1021", "step_count", "count", {"qty": 1021}),
    ("ActiveEnergyBurned", "kJ", "22.6", "active_energy", "kJ", {"qty": 22.6}),
    ("ActiveEnergyBurned", "kcal", "5.412", "active_energy", "kcal", {"qty": 5.412}),
    ("BodyMass", "lb", "143.3", "weight_body_mass", "lb", {"qty": 143.3}),
    ("BodyMass", "kg", "65", "weight_body_mass", "kg", {"qty": 65}),
    ("DistanceWalkingRunning", "mi", "0.4971", "walking_running_distance", "mi", {"qty": 0.4971}),
    ("DistanceWalkingRunning", "km", "0.8", "walking_running_distance", "km", {"qty": 0.8}),
    ("BodyTemperature", "degF", "98.6", "body_temperature", "degF", {"qty": 98.6}),
    ("BodyTemperature", "degC", "37", "body_temperature", "degC", {"qty": 37}),
    ("DietaryWater", "fl_oz_us", "8", "dietary_water", "fl_oz_us", {"qty": 8}),
    ("DietaryWater", "mL", "250", "dietary_water", "mL", {"qty": 250}),
    ("OxygenSaturation", "%", "0.97", "blood_oxygen_saturation", "%", {"qty": 97.0}),
    ("BodyFatPercentage", "%", "0.25", "body_fat_percentage", "%", {"qty": 25.0}),
    ("RestingHeartRate", "count/min", "52", "resting_heart_rate", "count/min", {"qty": 52}),
    ("RespiratoryRate", "count/min", "14.5", "respiratory_rate", "count/min", {"qty": 14.5}),
    ("HeartRateVariabilitySDNN", "ms", "44.18", "heart_rate_variability", "ms", {"qty": 44.18}),
    ("VO2Max", "mL/min·kg", "41.37", "vo2_max", "ml/(kg·min)", {"qty": 41.37}),
    ("WalkingSpeed", "km/hr", "4.8", "walking_speed", "km/hr", {"qty": 4.8}),
    ("FlightsClimbed", "count", "3", "flights_climbed", "count", {"qty": 3}),
    ("AppleExerciseTime", "min", "4", "apple_exercise_time", "min", {"qty": 4}),
    ("DietaryProtein", "g", "31.5", "protein", "g", {"qty": 31.5}),
    ("BloodGlucose", "mg/dL", "101", "blood_glucose", "mg/dL", {"qty": 101}),
]


@pytest.mark.parametrize(("kind", "unit", "value", "name", "units", "fields"), QUANTITIES)
def test_a_quantity_is_the_hae_point(
    tmp_path: Path,
    kind: str,
    unit: str,
    value: str,
    name: str,
    units: str,
    fields: dict[str, object],
) -> None:
    export, _ = export_of(tmp_path, record(Q + kind, unit, value, T0, T1))
    hae, _ = hae_of(
        {
            "metrics": [
                {
                    "name": name,
                    "units": units,
                    "data": [{"date": T0, "end": T1, "source": WATCH, **fields}],
                }
            ]
        }
    )
    assert export and export[0].metric == name
    assert_same_points(export, hae)


def test_heart_rate_sample_is_haes_unaggregated_point(tmp_path: Path) -> None:
    at = "2024-03-31 01:59:00 +0100"
    context = '<MetadataEntry key="HKMetadataKeyHeartRateMotionContext" value="1"/>'
    export, _ = export_of(
        tmp_path, record(Q + "HeartRate", "count/min", "58", at, at, inner=context)
    )
    # HAE's default (per-second) heart rate: Min = Avg = Max, 9.x context
    point = {
        "date": at,
        "end": at,
        "Min": 58,
        "Avg": 58,
        "Max": 58,
        "source": WATCH,
        "context": "Sedentary",
    }
    hae, _ = hae_of({"metrics": [{"name": "heart_rate", "units": "count/min", "data": [point]}]})
    assert [p.field for p in export] == ["min", "avg", "max"]
    assert_same_points(export, hae)


def test_blood_glucose_in_mmol_with_meal_time(tmp_path: Path) -> None:
    meal = '<MetadataEntry key="HKBloodGlucoseMealTime" value="2"/>'
    export, _ = export_of(
        tmp_path,
        record(Q + "BloodGlucose", "mmol&lt;180.1558800000541&gt;/L", "5.6", T0, T0, inner=meal),
    )
    point = {"date": T0, "end": T0, "qty": 5.6, "mealTime": "After Meal", "source": WATCH}
    hae, _ = hae_of({"metrics": [{"name": "blood_glucose", "units": "mmol/L", "data": [point]}]})
    assert_same_points(export, hae)


def test_blood_pressure_samples_are_haes_two_fields(tmp_path: Path) -> None:
    systolic = record(Q + "BloodPressureSystolic", "mmHg", "121", T0, T0, source="Omron")
    diastolic = record(Q + "BloodPressureDiastolic", "mmHg", "79", T0, T0, source="Omron")
    correlation = (
        f'<Correlation type="HKCorrelationTypeIdentifierBloodPressure" sourceName="Omron" '
        f'startDate="{T0}" endDate="{T0}">{diastolic}{systolic}</Correlation>'
    )
    export, found = export_of(tmp_path, systolic, diastolic, correlation)
    point = {"date": T0, "end": T0, "systolic": 121, "diastolic": 79, "source": "Omron"}
    hae, _ = hae_of({"metrics": [{"name": "blood_pressure", "units": "mmHg", "data": [point]}]})
    # the correlation's samples are also its top-level Records: counted once, not twice
    by_field = sorted(export, key=lambda p: p.field)
    assert_same_points(by_field, sorted(hae, key=lambda p: p.field))
    assert found == []


SLEEP = [
    ("HKCategoryValueSleepAnalysisAsleepCore", "Core"),
    ("HKCategoryValueSleepAnalysisAsleepDeep", "Deep"),
    ("HKCategoryValueSleepAnalysisAsleepREM", "REM"),
    ("HKCategoryValueSleepAnalysisAwake", "Awake"),
    ("HKCategoryValueSleepAnalysisInBed", "In Bed"),
    ("HKCategoryValueSleepAnalysisAsleepUnspecified", "Asleep"),
    ("HKCategoryValueSleepAnalysisAsleep", "Asleep"),
]


@pytest.mark.parametrize(("value", "stage"), SLEEP)
def test_a_sleep_sample_is_haes_unaggregated_segment(
    tmp_path: Path, value: str, stage: str
) -> None:
    # 01:25 CET to 03:10 CEST: 45 minutes across the change to summer time
    start, end = "2024-03-31 01:25:00 +0100", "2024-03-31 03:10:00 +0200"
    export, _ = export_of(
        tmp_path, record("HKCategoryTypeIdentifierSleepAnalysis", None, value, start, end)
    )
    segment = {"startDate": start, "endDate": end, "qty": 0.75, "value": stage, "source": WATCH}
    hae, _ = hae_of({"metrics": [{"name": "sleep_analysis", "units": "hr", "data": [segment]}]})
    assert_same_points(export, hae)


def test_category_metrics_are_haes(tmp_path: Path) -> None:
    c = "HKCategoryTypeIdentifier"
    na = "HKCategoryValueNotApplicable"
    t2 = "2024-03-30 08:07:10 +0100"
    export, _ = export_of(
        tmp_path,
        record(c + "MindfulSession", None, na, T0, t2),
        record(c + "AppleStandHour", None, "HKCategoryValueAppleStandHourStood", T0, t2),
        record(c + "HandwashingEvent", None, na, T0, "2024-03-30 08:02:34 +0100"),
        record(
            c + "SexualActivity",
            None,
            na,
            T0,
            T0,
            inner='<MetadataEntry key="HKSexualActivityProtectionUsed" value="1"/>',
        ),
    )
    hae, _ = hae_of(
        {
            "metrics": [
                {
                    "name": "mindful_minutes",
                    "units": "min",
                    "data": [{"date": T0, "end": t2, "qty": 5, "source": WATCH}],
                },
                {
                    "name": "apple_stand_hour",
                    "units": "count",
                    "data": [{"date": T0, "end": t2, "qty": 1, "source": WATCH}],
                },
                {
                    "name": "handwashing",
                    "units": "s",
                    "data": [
                        {"date": T0, "end": "2024-03-30 08:02:34 +0100", "qty": 24, "source": WATCH}
                    ],
                },
                {
                    "name": "sexual_activity",
                    "units": "count",
                    "data": [
                        {
                            "date": T0,
                            "end": T0,
                            "Unspecified": 0,
                            "Protection Used": 1,
                            "Protection Not Used": 0,
                            "source": WATCH,
                        }
                    ],
                },
            ]
        }
    )
    assert_same_points(export, hae)


def test_hrv_beats_are_haes_heartbeat_series(tmp_path: Path) -> None:
    start, end = "2024-03-31 04:12:00 +0200", "2024-03-31 04:13:00 +0200"
    beats = (
        "<HeartRateVariabilityMetadataList>"
        '<InstantaneousBeatsPerMinute bpm="59" time="4:12:01.31\u202fAM"/>'
        '<InstantaneousBeatsPerMinute bpm="61" time="04:12:02,32"/>'
        "</HeartRateVariabilityMetadataList>"
    )
    export, found = export_of(
        tmp_path, record(Q + "HeartRateVariabilitySDNN", "ms", "44.18", start, end, inner=beats)
    )
    epoch = 1711851120.0  # 2024-03-31T02:12:00Z
    series = [
        {"date": epoch + 1.31, "timeSinceStart": 1.31},
        {"date": epoch + 2.32, "timeSinceStart": 2.32},
    ]
    point = {"date": start, "end": end, "qty": 44.18, "source": WATCH, "heartbeatSeries": series}
    hae_points, hae_records = hae_of(
        {"metrics": [{"name": "heart_rate_variability", "units": "ms", "data": [point]}]}
    )
    assert_same_points(export, hae_points)
    (mine,), (theirs,) = found, hae_records
    assert mine[:7] == theirs[:7]
    assert [(i.series, i.seq, i.t, i.qty) for i in mine.items] == [
        (i.series, i.seq, i.t, i.qty) for i in theirs.items
    ]
    assert [orjson.loads(i.extra or "{}")["bpm"] for i in mine.items] == [59, 61]


def test_symptoms_cycle_and_notifications_are_haes_records(tmp_path: Path) -> None:
    c = "HKCategoryTypeIdentifier"
    s, e = "2024-03-30 15:00:00 +0100", "2024-03-30 17:00:00 +0100"
    _, found = export_of(
        tmp_path,
        record(c + "Headache", None, "HKCategoryValueSeverityModerate", s, e, source="Health"),
        record(
            c + "MenstrualFlow",
            None,
            "HKCategoryValueVaginalBleedingMedium",
            s,
            s,
            source="Health",
            inner='<MetadataEntry key="HKMenstrualCycleStart" value="1"/>',
        ),
        record(
            c + "HighHeartRateEvent",
            None,
            "HKCategoryValueNotApplicable",
            s,
            e,
            inner='<MetadataEntry key="HKHeartRateEventThreshold" value="120 count/min"/>',
        ),
    )
    _, hae = hae_of(
        {
            "symptoms": [
                {
                    "start": s,
                    "end": e,
                    "name": "Headache",
                    "severity": "Moderate",
                    "source": "Health",
                }
            ],
            "cycleTracking": [
                {
                    "start": s,
                    "end": s,
                    "name": "Menstrual Flow",
                    "value": "Medium",
                    "isCycleStart": True,
                    "source": "Health",
                }
            ],
            "heartRateNotifications": [
                {
                    "heartNotification": "high_heart_rate_notification",
                    "threshold": 120,
                    "start": s,
                    "end": e,
                    "source": WATCH,
                }
            ],
        }
    )
    assert [r[:7] for r in found] == [r[:7] for r in hae]
    for mine, theirs in zip(found, hae, strict=True):
        assert orjson.loads(theirs.body).items() <= orjson.loads(mine.body).items()


def _route_items(items: tuple[Item, ...]) -> list[tuple[object, ...]]:
    return [(i.series, i.seq, i.t, i.lat, i.lon, i.alt) for i in items if i.series == "route"]


def test_a_route_is_haes_v2_route(tmp_path: Path) -> None:
    fixture = Path(__file__).parent.parent / "fixtures" / "applehealth"
    (tmp_path / "workout-routes").mkdir()
    gpx = (fixture / "workout-routes" / "route_2024-03-30_8.02am.gpx").read_bytes()
    (tmp_path / "workout-routes" / "route_2024-03-30_8.02am.gpx").write_bytes(gpx)
    workout = (
        '<Workout workoutActivityType="HKWorkoutActivityTypeRunning" '
        'duration="30.35" durationUnit="min" '
        f'sourceName="{WATCH}" startDate="{T0}" endDate="{T1}">'
        '<WorkoutRoute><FileReference path="/workout-routes/route_2024-03-30_8.02am.gpx"/>'
        "</WorkoutRoute>"
        "</Workout>"
    )
    _, (mine,) = export_of(tmp_path, workout)
    route = [
        {
            "latitude": 52.516281,
            "longitude": 13.376812,
            "altitude": 34.102,
            "timestamp": "2024-03-30T07:02:12Z",
            "speed": 2.913,
            "course": 88.52,
            "horizontalAccuracy": 3.41,
            "verticalAccuracy": 2.12,
        },
    ]
    _, (theirs,) = hae_of(
        {"workouts": [{"id": "X", "name": "Running", "start": T0, "end": T1, "route": route}]}
    )
    assert _route_items(mine.items)[:1] == _route_items(theirs.items)
    assert mine.items[0].extra == theirs.items[0].extra
    assert len(_route_items(mine.items)) == 3
    body = orjson.loads(mine.body)
    assert body["duration"] == pytest.approx(1821.0)
    assert mine.identity == f"HKWorkoutActivityTypeRunning|{WATCH}|2024-03-30T07:02:10.000000Z"


def test_an_ecg_is_haes_ecg_record(tmp_path: Path) -> None:
    fixture = Path(__file__).parent.parent / "fixtures" / "applehealth"
    with read_export(fixture) as reading:
        (ecg,) = [r for b in reading.batches() for r in b.records if r.section == "ecg"]
    first = ecg.items[:3]
    voltages = [
        {"date": 1711790102.0 + n / 512, "voltage": item.qty, "units": "mcV"}
        for n, item in enumerate(first)
    ]
    _, (theirs,) = hae_of(
        {
            "ecg": [
                {
                    "start": "2024-03-30 10:15:02 +0100",
                    "classification": "Sinus Rhythm",
                    "voltageMeasurements": voltages,
                }
            ]
        }
    )
    assert (ecg.section, ecg.identity, ecg.start, ecg.name) == (
        theirs.section,
        theirs.identity,
        theirs.start,
        theirs.name,
    )
    assert first == theirs.items
    assert len(ecg.items) == 1024 and ecg.end == "2024-03-30T09:15:04.000000Z"
    body = orjson.loads(ecg.body)
    assert "Name" not in body and "Date of Birth" not in body  # who it is stays out
