"""The team hub: shared projects' redacted entries in PostgreSQL, searched together.

Nothing here is imported by the local commands: psycopg (the ``hub`` extra) is loaded only
when a ``hub`` command or ``--hub`` runs.
"""
