"""Records out of the showcase: JSON lines, CSV, and workouts as GeoJSON or GPX.

Pure writers over ``StoredRecord``s; ``healthlog export --section`` picks one. A record's
fields are ``healthlog.reads.shapes.stored_record``'s. Times are the stored UTC text
(``2021-12-24T00:04:00.000000Z``), which GeoJSON properties and GPX ``<time>``
(xsd:dateTime) both accept.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from typing import IO
from xml.sax.saxutils import escape, quoteattr

from healthlog.journal.port import StoredRecord
from healthlog.model import Item
from healthlog.reads.shapes import stored_record

FORMATS = ("csv", "jsonl", "geojson", "gpx")
#: formats that draw a route: workouts only
ROUTE_FORMATS = ("geojson", "gpx")

CSV_COLUMNS = [
    "account_id", "section", "identity", "start", "end", "utc_offset", "name", "source",
    "source_name", "body", "items", "delivery_id",
]  # fmt: skip


def write(records: Iterable[StoredRecord], out: IO[str], fmt: str) -> None:
    if fmt == "jsonl":
        for stored in records:
            out.write(json.dumps(stored_record(stored), ensure_ascii=False) + "\n")
    elif fmt == "csv":
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for stored in records:
            row = stored_record(stored)
            del row["fields"]  # the body is the fields, as JSON
            row["body"] = stored.record.body
            row["items"] = len(stored.record.items)  # the series are in jsonl
            writer.writerow(row)
    elif fmt == "geojson":
        _geojson(records, out)
    elif fmt == "gpx":
        _gpx(records, out)
    else:
        raise ValueError(f"unknown format {fmt!r}")


def _route(stored: StoredRecord) -> list[Item]:
    return [
        i
        for i in stored.record.items
        if i.series == "route" and i.lat is not None and i.lon is not None
    ]


def _geojson(records: Iterable[StoredRecord], out: IO[str]) -> None:
    """A FeatureCollection: one LineString per workout (null geometry without a route)."""
    out.write('{"type":"FeatureCollection","features":[')
    for n, stored in enumerate(records):
        route = _route(stored)
        coordinates = [[i.lon, i.lat] if i.alt is None else [i.lon, i.lat, i.alt] for i in route]
        geometry = {"type": "LineString", "coordinates": coordinates} if route else None
        properties = {k: v for k, v in stored_record(stored).items() if k != "items"}
        properties["times"] = [i.t for i in route]
        feature = {"type": "Feature", "geometry": geometry, "properties": properties}
        out.write(("," if n else "") + json.dumps(feature, ensure_ascii=False))
    out.write("]}\n")


def _gpx(records: Iterable[StoredRecord], out: IO[str]) -> None:
    """GPX 1.1: one track per workout with a route, one segment of its fixes."""
    out.write(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<gpx version="1.1" creator="healthlog" xmlns="http://www.topografix.com/GPX/1/1">\n'
    )
    for stored in records:
        route = _route(stored)
        if not route:
            continue
        name = stored.record.name or stored.record.identity
        out.write(f"  <trk><name>{escape(name)}</name>")
        out.write(f"<desc>{escape(stored.record.identity)}</desc><trkseg>\n")
        out.writelines(_trkpt(i) for i in route)
        out.write("  </trkseg></trk>\n")
    out.write("</gpx>\n")


def _trkpt(item: Item) -> str:
    inner = "" if item.alt is None else f"<ele>{item.alt}</ele>"
    inner += "" if item.t is None else f"<time>{escape(item.t)}</time>"
    where = f"lat={quoteattr(str(item.lat))} lon={quoteattr(str(item.lon))}"
    return f"    <trkpt {where}>{inner}</trkpt>\n"
