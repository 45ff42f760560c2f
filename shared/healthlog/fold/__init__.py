"""The fold: pending deliveries in, showcase points and honest outcomes out.

``classify`` is the one predicate ("circumstance or failure"), ``player`` folds one
delivery and is the one public door (used by the scheduled pass and by replay),
``pass_`` pages the queue, ``service`` runs one pass at a time for a process.
"""
