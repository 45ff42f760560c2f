"""healthlog: a receiver for Apple Health data sent by the Health Auto Export app."""

__version__ = "0.1.0"
