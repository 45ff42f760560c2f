"""Names for people: a metric's, a field's and a unit's name as the dashboard shows them.

The store keeps HAE's names (``step_count``, field ``qty``, unit ``count/min``); a person
reads "Steps" and "bpm". This is the one place that says how: the dashboard's pages and
its API (``display_name``, ``display_unit`` beside the stored ``metric``, ``field`` and
``unit``, which stay as they are: an operator's view, docs/dashboard.md, "Names").

Pure: no I/O, no state. Every metric the HAE parser and the export reader produce
(``hae.units.CANONICAL``, ``applehealth.types.QUANTITIES`` and ``CATEGORY_METRICS``,
``kinds.CUMULATIVE``) has a name here; any other name gets one made from it
(``resting_heart_rate`` -> "Resting heart rate", ``heartRateData`` -> "Heart rate data").
"""

from __future__ import annotations

import re

_NUTRIENTS = {
    "biotin": "Biotin",
    "caffeine": "Caffeine",
    "calcium": "Calcium",
    "carbohydrates": "Carbohydrates",
    "chloride": "Chloride",
    "cholesterol": "Cholesterol",
    "chromium": "Chromium",
    "copper": "Copper",
    "fiber": "Fiber",
    "folate": "Folate",
    "iodine": "Iodine",
    "iron": "Iron",
    "magnesium": "Magnesium",
    "manganese": "Manganese",
    "molybdenum": "Molybdenum",
    "monounsaturated_fat": "Monounsaturated fat",
    "monosaturated_fat": "Monounsaturated fat",
    "niacin": "Niacin",
    "pantothenic_acid": "Pantothenic acid",
    "phosphorus": "Phosphorus",
    "polyunsaturated_fat": "Polyunsaturated fat",
    "potassium": "Potassium",
    "protein": "Protein",
    "riboflavin": "Riboflavin",
    "saturated_fat": "Saturated fat",
    "selenium": "Selenium",
    "sodium": "Sodium",
    "sugar": "Sugar",
    "dietary_sugar": "Sugar",
    "thiamin": "Thiamin",
    "total_fat": "Total fat",
    "vitamin_a": "Vitamin A",
    "vitamin_b6": "Vitamin B6",
    "vitamin_b12": "Vitamin B12",
    "vitamin_c": "Vitamin C",
    "vitamin_d": "Vitamin D",
    "vitamin_e": "Vitamin E",
    "vitamin_k": "Vitamin K",
    "zinc": "Zinc",
}

#: stored metric (or workout series) name -> a person's name for it
NAMES: dict[str, str] = {
    # activity
    "step_count": "Steps",
    "walking_running_distance": "Walking + running distance",
    "distance_walking_running": "Walking + running distance",
    "cycling_distance": "Cycling distance",
    "distance_cycling": "Cycling distance",
    "wheelchair_distance": "Wheelchair distance",
    "swimming_distance": "Swimming distance",
    "distance_swimming": "Swimming distance",
    "downhill_snow_sports": "Downhill snow sports distance",
    "distance_downhill_snow_sports": "Downhill snow sports distance",
    "push_count": "Wheelchair pushes",
    "swimming_stroke_count": "Swimming strokes",
    "flights_climbed": "Flights climbed",
    "active_energy": "Active energy",
    "basal_energy_burned": "Resting energy",
    "apple_exercise_time": "Exercise minutes",
    "apple_stand_time": "Stand minutes",
    "apple_stand_hour": "Stand hours",
    "apple_move_time": "Move minutes",
    "vo2_max": "Cardio fitness (VO₂ max)",
    "time_in_daylight": "Time in daylight",
    "physical_effort": "Physical effort",
    "running_power": "Running power",
    "running_speed": "Running speed",
    "running_stride_length": "Running stride length",
    "running_vertical_oscillation": "Running vertical oscillation",
    "running_ground_contact_time": "Running ground contact time",
    "cycling_speed": "Cycling speed",
    "cycling_power": "Cycling power",
    "cycling_cadence": "Cycling cadence",
    "cycling_functional_threshold_power": "Cycling functional threshold power",
    "under_water_depth": "Underwater depth",
    "under_water_temperature": "Water temperature",
    "nike_fuel": "NikeFuel",
    # body
    "weight_body_mass": "Weight",
    "body_mass_index": "Body mass index",
    "body_fat_percentage": "Body fat",
    "height": "Height",
    "lean_body_mass": "Lean body mass",
    "waist_circumference": "Waist circumference",
    "apple_sleeping_wrist_temperature": "Wrist temperature",
    "body_temperature": "Body temperature",
    "basal_body_temperature": "Basal body temperature",
    # heart
    "heart_rate": "Heart rate",
    "resting_heart_rate": "Resting heart rate",
    "walking_heart_rate_average": "Walking heart rate average",
    "walking_heart_rate": "Walking heart rate average",
    "heart_rate_variability": "Heart rate variability",
    "cardio_recovery": "Cardio recovery",
    "atrial_fibrillation_burden": "AFib history",
    "peripheral_perfusion_index": "Peripheral perfusion index",
    "blood_pressure": "Blood pressure",
    # respiratory
    "blood_oxygen_saturation": "Blood oxygen",
    "respiratory_rate": "Respiratory rate",
    "forced_vital_capacity": "Forced vital capacity",
    "forced_expiratory_volume": "Forced expiratory volume",
    "forced_expiratory_volume_1": "Forced expiratory volume, 1 s",
    "peak_expiratory_flow_rate": "Peak expiratory flow rate",
    "inhaler_usage": "Inhaler usage",
    # mobility
    "walking_speed": "Walking speed",
    "walking_step_length": "Walking step length",
    "walking_double_support_percentage": "Double support time",
    "walking_asymmetry_percentage": "Walking asymmetry",
    "stair_speed_up": "Stair speed: up",
    "stair_speed:_up": "Stair speed: up",
    "stair_speed_down": "Stair speed: down",
    "stair_speed:_down": "Stair speed: down",
    "six_minute_walking_test_distance": "Six-minute walk",
    "six-minute_walking_test_distance": "Six-minute walk",
    "apple_walking_steadiness": "Walking steadiness",
    # hearing
    "environmental_audio_exposure": "Environmental sound levels",
    "headphone_audio_exposure": "Headphone audio levels",
    "environmental_sound_reduction": "Environmental sound reduction",
    # other vitals and lab results
    "blood_glucose": "Blood glucose",
    "blood_alcohol_content": "Blood alcohol content",
    "number_of_alcoholic_beverages": "Alcoholic beverages",
    "insulin_delivery": "Insulin delivery",
    "electrodermal_activity": "Electrodermal activity",
    "number_of_times_fallen": "Number of times fallen",
    "uv_exposure": "UV exposure",
    # categories HAE sends as metrics
    "sleep_analysis": "Sleep",
    "mindful_minutes": "Mindful minutes",
    "handwashing": "Handwashing",
    "toothbrushing": "Toothbrushing",
    "sexual_activity": "Sexual activity",
    # nutrition
    "dietary_energy": "Dietary energy",
    "dietary_water": "Water",
    **_NUTRIENTS,
    **{f"dietary_{k}": v for k, v in _NUTRIENTS.items()},  # dietary_dietary_sugar too
    # a workout's series (HAE's camelCase keys)
    "activeEnergy": "Active energy",
    "basalEnergy": "Resting energy",
    "cyclingDistance": "Cycling distance",
    "walkingAndRunningDistance": "Walking + running distance",
    "swimDistance": "Swimming distance",
    "cyclingSpeed": "Cycling speed",
    "heartRateData": "Heart rate",
    "heartRate": "Heart rate",
    "heartRateRecovery": "Heart rate recovery",
}

#: a workout's figure (``reads.figures.Figures``) as a page names it
FIGURES: dict[str, str] = {
    "duration": "Duration",
    "active_energy": "Active energy",
    "total_energy": "Total energy",
    "distance": "Distance",
    "avg_heart_rate": "Average heart rate",
    "max_heart_rate": "Maximum heart rate",
    "pace": "Average pace",
    "speed": "Average speed",
    "elevation_gain": "Elevation gain",
    "steps": "Steps",
    "step_cadence": "Step cadence",
    "swim_cadence": "Stroke rate",
    "temperature": "Temperature",
    "humidity": "Humidity",
    "intensity": "Intensity",
}

#: a field's name where it is not the one that stands for the metric
FIELDS: dict[str, str] = {
    "qty": "",
    "min": "Minimum",
    "avg": "Average",
    "max": "Maximum",
    "systolic": "Systolic",
    "diastolic": "Diastolic",
    "totalSleep": "Total asleep",
    "asleep": "Asleep (no stage)",
    "core": "Core",
    "deep": "Deep",
    "rem": "REM",
    "awake": "Awake",
    "inBed": "In bed",
    "segment": "Segments",
}

#: the fields each metric is shown by without naming the field (its main one)
_MAIN = frozenset({"qty", "avg", "segment"})

#: a unit as a person reads it (a unit not here is shown as stored)
UNITS: dict[str, str] = {
    "count/min": "bpm",
    "bpm": "bpm",
    "count/s": "per s",
    "count/hr": "per h",
    "hr": "h",
    "h": "h",
    "min": "min",
    "s": "s",
    "ms": "ms",
    "d": "days",
    "degC": "°C",
    "degF": "°F",
    "km/hr": "km/h",
    "mi/hr": "mph",
    "Cal": "kcal",
    "fl_oz_us": "fl oz",
    "cup_us": "cups",
    "ml/(kg·min)": "mL/(kg·min)",
    "dBASPL": "dB",
    "dBHL": "dB",
    "mcg": "µg",
    "count": "",
}

#: what a ``count`` is of, for the metrics that count something a person names
_COUNTED: dict[str, str] = {
    "step_count": "steps",
    "flights_climbed": "floors",
    "push_count": "pushes",
    "swimming_stroke_count": "strokes",
    "apple_stand_hour": "h",
    "number_of_alcoholic_beverages": "drinks",
    "number_of_times_fallen": "falls",
    "inhaler_usage": "uses",
}

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def generated(name: str) -> str:
    """A name made from a stored one: ``resting_heart_rate`` -> "Resting heart rate",
    ``heartRateData`` -> "Heart rate data"; "" stays ""."""
    words = _CAMEL.sub(" ", name).replace("_", " ").split()
    if not words:
        return name
    text = " ".join(w if w.isupper() else w.lower() for w in words)
    return text[0].upper() + text[1:]


def metric_name(metric: str) -> str:
    """A person's name for a stored metric name ("Steps" for ``step_count``)."""
    return NAMES.get(metric) or generated(metric)


def is_main(field: str) -> bool:
    """Whether ``field`` is shown without naming it (``qty``, ``avg``, a sleep segment)."""
    return field in _MAIN


def field_name(metric: str, field: str) -> str:
    """A person's name for a field of ``metric`` ("Average" for ``avg``); "" for ``qty``."""
    if field in FIELDS:
        return FIELDS[field]
    return generated(field)


def display_name(metric: str, field: str | None = None) -> str:
    """A metric field as a page titles it: "Heart rate", "Heart rate · Maximum";
    the main field (``qty``, ``avg``) is not named."""
    name = metric_name(metric)
    if field is None or is_main(field):
        return name
    part = field_name(metric, field)
    return f"{name} · {part}" if part else name


def unit_name(unit: str | None, metric: str | None = None) -> str:
    """A unit as a person reads it: ``count/min`` is "bpm", ``hr`` "h", ``degC`` "°C";
    ``count`` is what ``metric`` counts ("steps") or nothing; other units as stored."""
    if unit is None:
        return ""
    if unit == "count" and metric is not None and metric in _COUNTED:
        return _COUNTED[metric]
    return UNITS.get(unit, unit)


# --- the sections and the fields of their records (the Records page) -------------------

#: a section other than metrics -> a person's name for it
SECTION_NAMES: dict[str, str] = {
    "stateOfMind": "State of mind",
    "medications": "Medications",
    "symptoms": "Symptoms",
    "cycleTracking": "Cycle tracking",
    "ecg": "ECG",
    "heartRateNotifications": "Heart-rate notifications",
    "heartbeatSeries": "Heartbeat series",
    "workouts": "Workouts",
    "food": "Food",
    "activitySummary": "Activity summaries",
}


def section_name(section: str) -> str:
    """A person's name for a section ("State of mind"); one made from an unknown name."""
    return SECTION_NAMES.get(section) or generated(section)


#: a record's field (a key of its body as sent, or one of its series) -> a person's label,
#: whatever its section; ``RECORD_SECTION_FIELDS`` says it otherwise for one section
RECORD_FIELDS: dict[str, str] = {
    # state of mind
    "kind": "Kind",
    "valence": "Valence",
    "valenceClassification": "Valence classification",
    "labels": "Labels",
    "associations": "Associations",
    "id": "ID",
    "metadata": "Metadata",
    # medications
    "displayText": "Medication",
    "nickname": "Nickname",
    "status": "Status",
    "dosage": "Dose",
    "dose": "Dose",
    "unit": "Unit",
    "units": "Unit",
    "form": "Form",
    "scheduledDate": "Scheduled",
    "isArchived": "Archived",
    "codings": "Codings",
    # symptoms, cycle tracking
    "severity": "Severity",
    "userEntered": "Entered by hand",
    "value": "Value",
    "isCycleStart": "Cycle start",
    # ECG
    "classification": "Classification",
    "averageHeartRate": "Average heart rate",
    "samplingFrequency": "Sampling frequency",
    "numberOfVoltageMeasurements": "Voltage measurements",
    "voltage": "Voltage",
    # heart-rate notifications
    "heartNotification": "Notification",
    "threshold": "Threshold",
    "thresholdUnits": "Threshold unit",
    "heartRate": "Heart rate",
    "heartRateVariation": "Heart rate variability",
    # heartbeat series (an HRV reading's beats)
    "heartbeat": "Beats (time since the first)",
    "source": "Source as sent",
    # what the Health app's export adds to a sample
    "device": "Device",
    "sourceVersion": "Source version",
    "creationDate": "Written",
    # healthlog's own: a series cut at the cap (docs/security.md, "Limits")
    "items_capped": "Cut at the cap (elements sent)",
}

#: a field's label in one section, where it differs from ``RECORD_FIELDS``
RECORD_SECTION_FIELDS: dict[str, dict[str, str]] = {
    "symptoms": {"name": "Symptom"},
    "cycleTracking": {"name": "Type"},
    "heartbeatSeries": {"qty": "Heart rate variability (SDNN)", "date": "Reading"},
}

#: the fields each section shows first, in this order (the rest follow by name)
RECORD_FIELD_ORDER: dict[str, tuple[str, ...]] = {
    "stateOfMind": ("kind", "valence", "valenceClassification", "labels", "associations"),
    "medications": (
        "displayText",
        "nickname",
        "status",
        "dosage",
        "dose",
        "unit",
        "units",
        "scheduledDate",
    ),
    "symptoms": ("name", "severity", "userEntered"),
    "cycleTracking": ("name", "value", "isCycleStart"),
    "ecg": ("classification", "averageHeartRate", "severity"),
    "heartRateNotifications": (
        "heartNotification",
        "threshold",
        "thresholdUnits",
        "heartRate",
        "heartRateVariation",
    ),
    "heartbeatSeries": ("qty", "heartbeat"),
}

#: the unit of a field a section sends as a bare number (a unit sent beside it wins)
RECORD_FIELD_UNITS: dict[tuple[str, str], str] = {
    ("ecg", "averageHeartRate"): "bpm",
    ("ecg", "samplingFrequency"): "Hz",
    ("heartRateNotifications", "threshold"): "bpm",
    ("heartbeatSeries", "qty"): "ms",
    ("heartbeatSeries", "heartbeat"): "s",
}


def record_field_label(section: str, field: str) -> str:
    """A person's label for a field of a record of ``section`` ("Status", "Labels",
    "Average heart rate"); a field the tables do not know gets one made from it."""
    return (
        RECORD_SECTION_FIELDS.get(section, {}).get(field)
        or RECORD_FIELDS.get(field)
        or generated(field)
    )


def record_field_rank(section: str, field: str) -> tuple[int, str]:
    """Where a field of ``section`` stands among a record's fields: those the section
    shows first (``RECORD_FIELD_ORDER``) in their order, then the rest by name."""
    order = RECORD_FIELD_ORDER.get(section, ())
    return (order.index(field), "") if field in order else (len(order), field.lower())


def figure_name(figure: str) -> str:
    """A workout figure's name for people ("Average pace" for ``pace``)."""
    return FIGURES.get(figure) or generated(figure)
