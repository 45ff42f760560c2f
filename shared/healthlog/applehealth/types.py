"""HealthKit identifiers to HAE's metric names, fields, sections and unit spellings.

The names are HAE's (docs/hae-format.md, "Names"): HAE's snake_case of the Health app's
display name, as ``healthlog.hae.units.CANONICAL`` and ``healthlog.reads`` spell them.
The table is docs/apple-health-export.md's, "Mapping"; a type that is in none of these
tables is an uncovered key of the export, counted per type.
"""

from __future__ import annotations

import re

QUANTITY_PREFIX = "HKQuantityTypeIdentifier"
CATEGORY_PREFIX = "HKCategoryTypeIdentifier"

# HKQuantityTypeIdentifier<suffix> -> HAE metric name
_QUANTITIES: dict[str, str] = {
    # activity
    "StepCount": "step_count",
    "DistanceWalkingRunning": "walking_running_distance",
    "DistanceCycling": "cycling_distance",
    "DistanceWheelchair": "wheelchair_distance",
    "DistanceSwimming": "swimming_distance",
    "DistanceDownhillSnowSports": "downhill_snow_sports",
    "PushCount": "push_count",
    "SwimmingStrokeCount": "swimming_stroke_count",
    "FlightsClimbed": "flights_climbed",
    "ActiveEnergyBurned": "active_energy",
    "BasalEnergyBurned": "basal_energy_burned",
    "AppleExerciseTime": "apple_exercise_time",
    "AppleStandTime": "apple_stand_time",
    "AppleMoveTime": "apple_move_time",
    "VO2Max": "vo2_max",
    "TimeInDaylight": "time_in_daylight",
    "PhysicalEffort": "physical_effort",
    "RunningPower": "running_power",
    "RunningSpeed": "running_speed",
    "RunningStrideLength": "running_stride_length",
    "RunningVerticalOscillation": "running_vertical_oscillation",
    "RunningGroundContactTime": "running_ground_contact_time",
    "CyclingSpeed": "cycling_speed",
    "CyclingPower": "cycling_power",
    "CyclingCadence": "cycling_cadence",
    "CyclingFunctionalThresholdPower": "cycling_functional_threshold_power",
    "UnderwaterDepth": "under_water_depth",
    "WaterTemperature": "under_water_temperature",
    "NikeFuel": "nike_fuel",
    # body
    "BodyMass": "weight_body_mass",
    "BodyMassIndex": "body_mass_index",
    "BodyFatPercentage": "body_fat_percentage",
    "Height": "height",
    "LeanBodyMass": "lean_body_mass",
    "WaistCircumference": "waist_circumference",
    "AppleSleepingWristTemperature": "apple_sleeping_wrist_temperature",
    "BodyTemperature": "body_temperature",
    "BasalBodyTemperature": "basal_body_temperature",
    # heart
    "HeartRate": "heart_rate",
    "RestingHeartRate": "resting_heart_rate",
    "WalkingHeartRateAverage": "walking_heart_rate_average",
    "HeartRateVariabilitySDNN": "heart_rate_variability",
    "HeartRateRecoveryOneMinute": "cardio_recovery",
    "AtrialFibrillationBurden": "atrial_fibrillation_burden",
    "PeripheralPerfusionIndex": "peripheral_perfusion_index",
    "BloodPressureSystolic": "blood_pressure",
    "BloodPressureDiastolic": "blood_pressure",
    # respiratory
    "OxygenSaturation": "blood_oxygen_saturation",
    "RespiratoryRate": "respiratory_rate",
    "ForcedVitalCapacity": "forced_vital_capacity",
    "ForcedExpiratoryVolume1": "forced_expiratory_volume_1",
    "PeakExpiratoryFlowRate": "peak_expiratory_flow_rate",
    "InhalerUsage": "inhaler_usage",
    # mobility
    "WalkingSpeed": "walking_speed",
    "WalkingStepLength": "walking_step_length",
    "WalkingDoubleSupportPercentage": "walking_double_support_percentage",
    "WalkingAsymmetryPercentage": "walking_asymmetry_percentage",
    "StairAscentSpeed": "stair_speed_up",
    "StairDescentSpeed": "stair_speed_down",
    "SixMinuteWalkTestDistance": "six_minute_walking_test_distance",
    "AppleWalkingSteadiness": "apple_walking_steadiness",
    # hearing
    "EnvironmentalAudioExposure": "environmental_audio_exposure",
    "HeadphoneAudioExposure": "headphone_audio_exposure",
    "EnvironmentalSoundReduction": "environmental_sound_reduction",
    # other vitals and lab results
    "BloodGlucose": "blood_glucose",
    "BloodAlcoholContent": "blood_alcohol_content",
    "NumberOfAlcoholicBeverages": "number_of_alcoholic_beverages",
    "InsulinDelivery": "insulin_delivery",
    "ElectrodermalActivity": "electrodermal_activity",
    "NumberOfTimesFallen": "number_of_times_fallen",
    "UVExposure": "uv_exposure",
    # nutrition (HAE's names: the macro- and micronutrients without a dietary_ prefix)
    "DietaryEnergyConsumed": "dietary_energy",
    "DietaryWater": "dietary_water",
    "DietarySugar": "dietary_sugar",
    "DietaryFatTotal": "total_fat",
    "DietaryFatSaturated": "saturated_fat",
    "DietaryFatMonounsaturated": "monounsaturated_fat",
    "DietaryFatPolyunsaturated": "polyunsaturated_fat",
    **{
        f"Dietary{camel}": name
        for camel, name in (
            ("Carbohydrates", "carbohydrates"),
            ("Fiber", "fiber"),
            ("Protein", "protein"),
            ("Cholesterol", "cholesterol"),
            ("Caffeine", "caffeine"),
            ("Biotin", "biotin"),
            ("Calcium", "calcium"),
            ("Chloride", "chloride"),
            ("Chromium", "chromium"),
            ("Copper", "copper"),
            ("Folate", "folate"),
            ("Iodine", "iodine"),
            ("Iron", "iron"),
            ("Magnesium", "magnesium"),
            ("Manganese", "manganese"),
            ("Molybdenum", "molybdenum"),
            ("Niacin", "niacin"),
            ("PantothenicAcid", "pantothenic_acid"),
            ("Phosphorus", "phosphorus"),
            ("Potassium", "potassium"),
            ("Riboflavin", "riboflavin"),
            ("Selenium", "selenium"),
            ("Sodium", "sodium"),
            ("Thiamin", "thiamin"),
            ("VitaminA", "vitamin_a"),
            ("VitaminB6", "vitamin_b6"),
            ("VitaminB12", "vitamin_b12"),
            ("VitaminC", "vitamin_c"),
            ("VitaminD", "vitamin_d"),
            ("VitaminE", "vitamin_e"),
            ("VitaminK", "vitamin_k"),
            ("Zinc", "zinc"),
        )
    },
}

QUANTITIES: dict[str, str] = {QUANTITY_PREFIX + k: v for k, v in _QUANTITIES.items()}

# the value key a quantity's HAE point holds it in, where it is not ``qty``
VALUE_KEYS: dict[str, str] = {
    QUANTITY_PREFIX + "BloodPressureSystolic": "systolic",
    QUANTITY_PREFIX + "BloodPressureDiastolic": "diastolic",
}

# a category that HAE sends as a metric -> its metric name
CATEGORY_METRICS: dict[str, str] = {
    CATEGORY_PREFIX + "SleepAnalysis": "sleep_analysis",
    CATEGORY_PREFIX + "MindfulSession": "mindful_minutes",
    CATEGORY_PREFIX + "AppleStandHour": "apple_stand_hour",
    CATEGORY_PREFIX + "HandwashingEvent": "handwashing",
    CATEGORY_PREFIX + "ToothbrushingEvent": "toothbrushing",
    CATEGORY_PREFIX + "SexualActivity": "sexual_activity",
}

# the sleep stages as HAE's unaggregated sleep spells them (docs/hae-format.md, "Sleep")
SLEEP_STAGES: dict[str, str] = {
    "HKCategoryValueSleepAnalysisInBed": "In Bed",
    "HKCategoryValueSleepAnalysisAsleep": "Asleep",  # before iOS 16: sleep without a stage
    "HKCategoryValueSleepAnalysisAsleepUnspecified": "Asleep",
    "HKCategoryValueSleepAnalysisAwake": "Awake",
    "HKCategoryValueSleepAnalysisAsleepCore": "Core",
    "HKCategoryValueSleepAnalysisAsleepDeep": "Deep",
    "HKCategoryValueSleepAnalysisAsleepREM": "REM",
}

# heart-rate events -> HAE's heartRateNotifications ``heartNotification``
NOTIFICATIONS: dict[str, str] = {
    CATEGORY_PREFIX + "HighHeartRateEvent": "high_heart_rate_notification",
    CATEGORY_PREFIX + "LowHeartRateEvent": "low_heart_rate_notification",
    CATEGORY_PREFIX + "IrregularHeartRhythmEvent": "irregular_heart_rhythm_notification",
}

_SYMPTOMS = (
    "AbdominalCramps Acne AppetiteChanges BladderIncontinence Bloating BreastPain"
    " ChestTightnessOrPain Chills Constipation Coughing Diarrhea Dizziness DrySkin Fainting"
    " Fatigue Fever GeneralizedBodyAche HairLoss Headache Heartburn HotFlashes LossOfSmell"
    " LossOfTaste LowerBackPain MemoryLapse MoodChanges Nausea NightSweats PelvicPain"
    " RapidPoundingOrFlutteringHeartbeat RunnyNose ShortnessOfBreath SinusCongestion"
    " SkippedHeartbeat SleepChanges SoreThroat VaginalDryness Vomiting Wheezing"
)
_CYCLE = (
    "MenstrualFlow IntermenstrualBleeding OvulationTestResult CervicalMucusQuality"
    " PregnancyTestResult ProgesteroneTestResult Contraceptive Pregnancy Lactation"
    " InfrequentMenstrualCycles IrregularMenstrualCycles PersistentIntermenstrualBleeding"
    " ProlongedMenstrualPeriods BleedingDuringPregnancy BleedingAfterPregnancy"
)


def display(camel: str) -> str:
    """``ChestTightnessOrPain`` -> ``Chest Tightness Or Pain``; ``VO2Max`` stays one word."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", camel)


#: category type -> the English display name its HAE section event is named by
SYMPTOMS: dict[str, str] = {CATEGORY_PREFIX + s: display(s) for s in _SYMPTOMS.split()}
CYCLE_TRACKING: dict[str, str] = {CATEGORY_PREFIX + s: display(s) for s in _CYCLE.split()}

# HKCategoryValue<Enum><Case>: the enum names whose case is the text HAE shows
_VALUE_ENUMS = (
    "Severity",
    "Presence",
    "AppetiteChanges",
    "VaginalBleeding",
    "MenstrualFlow",
    "OvulationTestResult",
    "CervicalMucusQuality",
    "PregnancyTestResult",
    "ProgesteroneTestResult",
    "Contraceptive",
    "AppleStandHour",
)
_VALUE_PREFIX = re.compile(r"HKCategoryValue(?:" + "|".join(_VALUE_ENUMS) + ")?")


def category_text(value: str | None) -> str | None:
    """``HKCategoryValueSeverityMild`` -> ``Mild``; ``HKCategoryValueNotApplicable`` -> None."""
    if value is None or value == "HKCategoryValueNotApplicable":
        return None
    match = _VALUE_PREFIX.match(value)
    if match is None:
        return value
    rest = value[match.end() :]
    return display(rest) if rest else value


# --- units ------------------------------------------------------------------------------

# the export's unit spellings that HAE spells otherwise (docs/hae-format.md, "Units")
_SPELLINGS = {
    "mL/min·kg": "ml/(kg·min)",
    "mL/(kg·min)": "ml/(kg·min)",
}
# a molar unit with the substance's molar mass in angle brackets: mmol<180.15588...>/L
_MOLAR_MASS = re.compile(r"<[0-9.eE+-]*>")


def unit_spelling(unit: str) -> str:
    """The export's unit as HAE spells it: ``mmol<180.1558800000541>/L`` is ``mmol/L``."""
    if "<" in unit:
        unit = _MOLAR_MASS.sub("", unit)
    return _SPELLINGS.get(unit, unit)


#: the unit HealthKit writes as a fraction (0.96) and HAE as a percentage (96)
PERCENT = "%"

# workout activity types whose HAE-like names say where they were (HKIndoorWorkout)
WORKOUT_PREFIX = "HKWorkoutActivityType"


def workout_name(activity_type: str) -> str:
    """``HKWorkoutActivityTypeTraditionalStrengthTraining`` -> ``Traditional Strength Training``."""
    suffix = activity_type.removeprefix(WORKOUT_PREFIX)
    return display(suffix) if suffix else activity_type
