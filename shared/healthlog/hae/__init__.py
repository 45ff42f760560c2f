"""The Health Auto Export parser: pure, bytes in, Points and uncovered keys out."""

from healthlog.hae.parse import parse

__all__ = ["parse"]
