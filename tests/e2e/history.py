"""What the end-to-end suites know of their history, prjct-be's pi journals, and of our answers.

Shared by the pi, Claude Code and Codex suites: the fixture project whose journals a test
re-files under its own project folder, entries and words known to be in it (or in no journal at
all), and the lines of our answers that must never come back inside a hit (an echo).
"""

from __future__ import annotations

from journal_index.text.entry_text import ANSWER_END, ANSWER_START
from tests.e2e.answers import Answer

HISTORY = "--home-dev-Apps-prjct-prjct-be--"
RATE_LIMIT_ENTRY = "20147e3f"  # the prjct-be user entry that holds every word of RATE_LIMIT_QUERY
RATE_LIMIT_QUERY = "600 requests minute bursts"  # two or three entries hold every word: always on page 1
RATE_LIMIT_SESSION = "01a066a0-b2cd-76ec-8039-f893567c84c9"
RATE_LIMIT_TEXT = "Rate limiting: per token, 600 requests/minute with bursts up to 100."
ECHO_QUERY = "rate limit per token"  # many hits in the history, on every run
# Words that exist in no fixture journal: only a test's first prompt (and its searches) hold them.
OWN_WORDS = "kestrelvane marmotfield"
FIRST_PROMPT = "Remember: the kestrelvane threshold lives in marmotfield.toml."
# Lines of ours that must never turn up inside a hit's excerpt (that would be an echo).
ANSWER_MARKS = (ANSWER_START, ANSWER_END, "search: results", "newest entries: results", "read more: {",
                "next page: the same call", "index: ", " · entry ", "results hold every term")


def assert_no_echo(answer: Answer) -> None:
    """None of the hits shows text of an answer of ours."""
    for hit in answer.hits():
        for mark in ANSWER_MARKS:
            assert mark not in hit.excerpt, f"hit [{hit.number}] echoes an answer of ours ({mark!r}):\n{answer.text}"
