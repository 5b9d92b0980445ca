"""journal-index: make a coding agent's past searchable, and readable verbatim."""

__version__ = "0.1.0"
