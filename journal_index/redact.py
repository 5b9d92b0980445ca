"""Secret redaction, the public calls: every hit becomes ``[REDACTED:<kind>]``.

The engine lives in the ``journal_index.redaction`` package (rules, checks, engine, pieces, the
RE2 adapter); this module keeps the names callers import.
"""

from journal_index.redaction.api import engine, redact, redact_region, redact_with_hits, secret_spans
from journal_index.redaction.engine import Engine, Hit
from journal_index.redaction.pieces import PIECE_SIZE
from journal_index.redaction.rules import KINDS, RULES, Rule

__all__ = [
    "KINDS",
    "PIECE_SIZE",
    "RULES",
    "Engine",
    "Hit",
    "Rule",
    "engine",
    "redact",
    "redact_region",
    "redact_with_hits",
    "secret_spans",
]
