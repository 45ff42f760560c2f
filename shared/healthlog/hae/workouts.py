"""The ``workouts`` section, both export versions (docs/hae-format.md, "Workouts").

One Record per workout: its identity is the HealthKit UUID ``id`` (v2), or
``name|start`` with start in UTC (v1 has no id). Every scalar and ``{qty, units}``
field stays in the body as sent; every list of objects is a series of Items: ``route``
(v1 ``lat``/``lon``, v2 ``latitude``/``longitude``, both with ``altitude``),
``heartRateData`` and ``heartRateRecovery`` (v1 ``qty``, v2 ``Min``/``Avg``/``Max``: the
Item's qty is ``Avg``, Min and Max go to extra), and the v2 per-workout metrics
(``activeEnergy``, ``stepCount``, ``walkingAndRunningDistance``...), each converted to
its series' canonical unit (see ``units``).

Known app bugs (docs/hae-format.md, "Known app bugs") are read as what they are, never
as failures: an empty or ``[]`` ``metadata`` is kept as sent; a missing route or series
is simply absent (a newer delivery without a route inherits the older one's: layers are
per series, see docs/sections.md); and when ``heartRateData`` holds the recovery series
instead (``Lybron/health-auto-export#60``: Min = Avg = Max, starting at or after
``end``, and no ``heartRateRecovery``), it is stored as ``heartRateRecovery`` with
``"sent_as": "heartRateData"`` in each Item's extra.
"""

from __future__ import annotations

import orjson

from healthlog.hae import records
from healthlog.hae.records import Found, Spec, field_text, given_id, keyed
from healthlog.model import Record

_DATA, _RECOVERY = "heartRateData", "heartRateRecovery"


def _identity(element: dict[str, object], start: str | None, end: str | None) -> str:
    return given_id(element) or keyed(field_text(element, "name"), start)


SPEC = Spec(
    "workouts",
    _identity,
    name_key="name",
    # route fixes have no quantity of their own: speed and accuracies stay in extra
    qty_keys={"route": ()},
)


# v1: {"name": "Walking", "start": "2021-12-24 08:02:43 +0800", "end": "...",
#      "activeEnergy": {"qty": 226.2, "units": "kJ"}, "elevation": {"ascent": 16.36, ...},
#      "heartRateData": [{"date": "...", "qty": 108, "units": "bpm"}],
#      "route": [{"lat": 38.8951, "lon": -77.0364, "altitude": 8.03, "timestamp": "..."}]}
# v2: {"id": "DEADBEEF-1234-...", "name": "Outdoor Run", "duration": 1820.5,
#      "distance": {"qty": 5.1, "units": "km"}, "isIndoor": false, "metadata": {},
#      "heartRateData": [{"date": "...", "Min": 120, "Avg": 141, "Max": 160, "units": "bpm"}],
#      "route": [{"latitude": 51.5, "longitude": -0.12, "altitude": 21.4, "timestamp": "..."}]}
def build(spec: Spec, element: dict[str, object], found: Found) -> Record:
    end, _ = records.when(element.get("end"))
    if _recovery_sent_as_data(element, end):
        moved = dict(element)
        moved[_RECOVERY] = moved.pop(_DATA)
        record = records.build(spec, moved, found)
        # the Items say where the series was found
        return record._replace(
            items=tuple(
                item._replace(extra=_with_sent_as(item.extra)) if item.series == _RECOVERY else item
                for item in record.items
            ),
        )
    return records.build(spec, element, found)


def _recovery_sent_as_data(element: dict[str, object], end: str | None) -> bool:
    data, recovery = element.get(_DATA), element.get(_RECOVERY)
    if end is None or not records.is_series(data) or records.is_series(recovery):
        return False
    assert isinstance(data, list)
    for sample in data:
        low, avg, high = sample.get("Min"), sample.get("Avg"), sample.get("Max")
        if records.number(avg) is None or not low == avg == high:
            return False
    first, _ = records.when(data[0].get("date"))
    return first is not None and first >= end


def _with_sent_as(extra: str | None) -> str:
    fields = orjson.loads(extra) if extra else {}
    fields["sent_as"] = _DATA
    return records.canonical(fields)


def read(section: object, found: Found) -> None:
    records.read(section, SPEC, found, build)
