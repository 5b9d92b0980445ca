"""Secret redaction: one linear-time pass over a table of named patterns.

Every hit becomes ``[REDACTED:<kind>]`` where ``kind`` names the pattern that fired, never
anything taken from the secret. For ``name = value`` shapes only the value is replaced, so the
name stays searchable.

Engine: RE2 (``google-re2``), chosen by measurement (``benchmarks/redact_bench.py``). It runs
in time linear in the input whatever the pattern or the text; one alternation of this table in
Python's ``re`` (or ``regex``) crawls on ordinary text and backtracks without end on hostile
lines. RE2 finds where a match starts, and an anchored RE2 ``Set`` tells which rules match
there; Python's ``re``, anchored at that start, then gives the winner's groups (see ``table.Table``).
RE2 runs on the UTF-8 bytes of the text in Latin-1 mode: its wrapper re-encodes a ``str`` on
every call, which would make a text with many hits quadratic. Every pattern is ASCII and every
secret span starts and ends next to an ASCII byte, so spans never split a multi-byte character.

Patterns may not use look-around or back-references (RE2 has neither). Whatever a pattern
cannot say is checked in Python on the (rare) match: placeholders, code, prose, provider ids.

The package, in the order a text goes through it:

- ``rules``: the pattern table (``RULES``), each rule's kind and check;
- ``table``: a list of rules compiled: the RE2 finder, the anchored Set, each rule in Python's re;
- ``re2_adapter``: every call into google-re2 (its private ``_re2`` API) in one place;
- ``engine``: the scan (find, judge, cache verdicts), invisible characters, the replacement;
- ``checks``: the Python-side verdicts on a match (``groups`` reads its groups, ``k8s`` Secrets);
- ``invisible``: zero-width and bidi characters stripped and mapped back;
- ``pieces``: texts over 1 MiB cut into line-aligned pieces;
- ``api``: the public calls, which ``journal_index.redact`` re-exports.
"""
