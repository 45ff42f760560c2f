"""The local stack: the functions served on one machine with zero services.

``server`` serves one function (functions-framework's app under waitress), ``launcher``
starts such a process and waits until it listens, ``stack`` is ``healthlog serve``:
ingest, fold, a tick and the dashboard together.
"""
