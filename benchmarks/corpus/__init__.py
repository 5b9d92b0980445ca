"""Deterministic generator of realistic pi session journals for benchmarks.

    python -m benchmarks.corpus --size 50MB --out DIR [--seed 1] [--json]
    python -m benchmarks.corpus --measure fixtures/sessions      # mix of an existing corpus

Writes ``DIR/sessions/--<encoded cwd>--/<header timestamp>_<uuid v7>.jsonl`` files in pi's version-3
journal format (the same shapes, key order and escaping as ``fixtures/sessions``, which pi 0.73.1 wrote
itself). The same seed and size give byte-identical files on the same machine: all text comes from this
interpreter's standard library sources, docstrings and ``pydoc_data`` topics, so another Python version
gives different (but equally valid) text.

Sizes: ``500KB``, ``50MB``, ``1GB``, ``2.5GB`` are decimal (powers of 1000); ``KiB``/``MiB``/``GiB``
are binary (powers of 1024); a bare number is bytes.

Modules: ``units`` (sizes, names, times, numbers), ``mix`` (the target mix and its measure),
``pools`` (text from the standard library), ``world`` (projects, models, a session's state),
``tally`` (what was written), ``text`` (generated text), ``tool_outputs`` (what tools return),
``entries`` (journal entries), ``sessions`` (the driver, ``generate``), ``__main__`` (the CLI).
"""

from benchmarks.corpus.mix import CATEGORIES, TARGET_LINE_LENGTHS, TARGET_MIX, classify_entry, measure_corpus
from benchmarks.corpus.pools import INTL_TEXT, text_pools
from benchmarks.corpus.sessions import generate
from benchmarks.corpus.units import encode_cwd, iso_ms, js_number, parse_size
from benchmarks.corpus.world import PROJECTS

__all__ = [
    "CATEGORIES",
    "INTL_TEXT",
    "PROJECTS",
    "TARGET_LINE_LENGTHS",
    "TARGET_MIX",
    "classify_entry",
    "encode_cwd",
    "generate",
    "iso_ms",
    "js_number",
    "measure_corpus",
    "parse_size",
    "text_pools",
]
