-- The units an account's figures are shown in (a workout's distance, pace, energy...):
-- 'metric' (km, m, km/h, min/km, kcal, degC) or 'imperial' (mi, ft, mph, min/mi, kcal,
-- degF); `healthlog account set-units NAME SYSTEM`. Stored values keep the units the
-- phone sent: this is how they are read, never how they are kept.
ALTER TABLE accounts ADD COLUMN unit_system TEXT NOT NULL DEFAULT 'metric'
    CHECK (unit_system IN ('metric', 'imperial'));
