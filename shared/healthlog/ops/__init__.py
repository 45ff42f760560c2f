"""Operations: what an operator runs beside the two functions.

Accounts and their tokens (``accounts``), journaling archived bodies that have no row
(``reconcile``), removing old bodies (``retention``), importing the Health app's export
(``importer``), the watch that tells when deliveries stop (``watch``, ``watch_aws``),
opening the adapters a location names (``wiring``, ``store``) and the journal URL kept
in SSM (``secrets``). They build on the write side and the read side; no interface or
local-stack module is imported here.
"""
