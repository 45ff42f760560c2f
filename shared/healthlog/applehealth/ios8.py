"""Exports written by iOS 8 (2014–2015): the same elements in an older spelling.

The Health app of iOS 8 wrote what later versions write, spelled otherwise:

* times as ``20141018163235+0100`` (``startDate``, ``endDate``, ``creationDate``, and the
  ``ExportDate``'s ``value``), where later ones write ``2014-10-18 16:32:35 +0100``;
* the source as ``source=`` (later ``sourceName=``);
* a sample's metadata as attributes of its own (``HKWasUserEntered="1"``,
  ``sessionId="p1"``, an app's ``Modified Date``), later ``MetadataEntry`` children;
* a heart-rate record as a day's statistics, ``min``, ``max`` and ``average`` (with
  ``recordCount``) and no ``value``;
* sleep's category value as a number, ``0`` in bed, ``1`` asleep.

``respell`` turns one element into today's spelling, so the reader reads both with one
set of rules. Whether an export is spelled so is decided once, by its first element with
a time (``compact``). docs/apple-health-export.md, "Exports of iOS 8".
"""

from __future__ import annotations

import re
from typing import Protocol

_COMPACT = re.compile(r"(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})([+-]\d{4})")
_TIMES = ("startDate", "endDate", "creationDate", "date")
# a Record's attributes that are not its metadata, in today's spelling; min and max stay
# for heart rate's fields
_OWN = frozenset(
    {"type", "sourceName", "sourceVersion", "device", "unit", "value", "min", "max", *_TIMES}
)
_SLEEP = {
    "0": "HKCategoryValueSleepAnalysisInBed",
    "1": "HKCategoryValueSleepAnalysisAsleep",
    "2": "HKCategoryValueSleepAnalysisAwake",
}
_SLEEP_TYPE = "HKCategoryTypeIdentifierSleepAnalysis"


class Element(Protocol):
    """What ``respell`` changes: the reader's element (``read._Node``)."""

    tag: str
    attrib: dict[str, str]

    def add_child(self, tag: str, attrib: dict[str, str]) -> None: ...


def compact(tag: str, attrib: dict[str, str]) -> bool | None:
    """Whether the export is spelled as iOS 8's, from one of its top-level elements:
    None while the element has no time to tell by."""
    text = attrib.get("value") if tag == "ExportDate" else attrib.get("startDate")
    if text is None:
        return None
    return _COMPACT.fullmatch(text) is not None


def time_text(text: str) -> str:
    """``20141018163235+0100`` -> ``2014-10-18 16:32:35 +0100``; any other text as it is."""
    found = _COMPACT.fullmatch(text)
    if found is None:
        return text
    year, month, day, hour, minute, second, offset = found.groups()
    return f"{year}-{month}-{day} {hour}:{minute}:{second} {offset}"


def respell(element: Element) -> None:
    """One element of an iOS 8 export in today's spelling, in place."""
    attrib = element.attrib
    for key in _TIMES:
        if key in attrib:
            attrib[key] = time_text(attrib[key])
    if element.tag == "ExportDate" and "value" in attrib:
        attrib["value"] = time_text(attrib["value"])
    if element.tag != "Record":
        return
    if "source" in attrib and "sourceName" not in attrib:
        attrib["sourceName"] = attrib.pop("source")
    if "value" not in attrib and "average" in attrib:  # a day's statistics
        attrib["value"] = attrib.pop("average")
    if attrib.get("type") == _SLEEP_TYPE and attrib.get("value") in _SLEEP:
        attrib["value"] = _SLEEP[attrib["value"]]
    if attrib.get("type") != "HKQuantityTypeIdentifierHeartRate":
        for key in ("min", "max"):  # a field of heart rate's only; else the sample's metadata
            if key in attrib:
                element.add_child("MetadataEntry", {"key": key, "value": attrib.pop(key)})
    for key in [k for k in attrib if k not in _OWN]:
        element.add_child("MetadataEntry", {"key": key, "value": attrib.pop(key)})
