"""The Health app's own export (``export.zip``) as healthlog's Points and Records.

``read_export(path)`` streams ``export.xml`` (from the zip, its unzipped folder, or a
bare file) with the export's routes and ECGs, and yields ``Batch``es of the same Points
and Records a Health Auto Export delivery of the same data gives: HAE's metric names,
fields, canonical units and section identities (docs/apple-health-export.md).
"""

from healthlog.applehealth.files import ExportUnreadable
from healthlog.applehealth.read import BATCH_POINTS, Batch, ExportCut, ExportReading, read_export

__all__ = ["BATCH_POINTS", "Batch", "ExportCut", "ExportReading", "ExportUnreadable", "read_export"]
