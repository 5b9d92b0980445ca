"""Which entries answer a query, best first.

Candidates come from both FTS tables: ``entries_fts`` (what was said, each call's name and key
arguments, each result's call; positions, so phrases match and bm25 scores) and
``entries_bulk`` (whole texts of entries with tool output or call arguments; no positions, so
a group's terms are required together rather than as a phrase, and the score is bm25 with
every term counted once, computed here).

Every candidate is scored the same way, whether it holds all of the question or part of it:

    score = lexical × coverage² × kind weight / (1 + age / scale)

* lexical: bm25 of what was said (all the question's groups OR'ed, so more of them scores
  higher), or of the bulk text, whichever is higher;
* coverage: the share of the question's weight the entry holds, each group weighted by its
  rarity (idf), so a long tool output that holds a few common words does not outrank a
  statement that holds the rare ones;
* kind: what a person or an agent said, and summaries, over raw tool output;
* age: damped over weeks — over days when the question asks for the current state ("now",
  "current", "latest"): facts change, and the newest statement is the answer.

Entries holding every meaningful word are marked complete; the hint says when only some of
the hits shown are. The best are then re-read and scored on their words (``rerank``), and for a
question about the current state put newest first among those close to the best.
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from journal_index import synonyms
from journal_index.entry_text import quotes_our_answer
from journal_index.hits import HIT_COLUMNS, Filters, Hit, hits_of
from journal_index.store import Store
from journal_index.text_forms import PARTICLES, STOPWORDS

DAY_MS = 86_400_000
K1, B = 1.2, 0.75  # bm25's, as FTS5 uses them
# How much a match counts by where it was found: said (or summarised) vs raw tool output.
KIND_WEIGHT = {"user": 1.0, "assistant": 1.0, "compaction": 1.0, "branch_summary": 1.0, "custom": 1.0,
               "context_edit": 1.0, "bash": 0.8, "tool_result": 0.8}
BULK_WEIGHT = 0.7  # words found only in tool output or call arguments
COVERAGE_POWER = 2.0
AGE_DAYS = 30.0  # score / (1 + age / AGE_DAYS)
FRESH_AGE_DAYS = 2.0  # the same when the question asks for the current state
FRESH_WORDS = frozenset({"current", "currently", "now", "latest", "newest", "today", "nowadays", "still",
                         "anymore", "lately"})
BULK_LEADS = 1  # bulk candidates are also found by the rarest concepts alone (a common word matches everything)
SYNONYMS = True
SYNONYM_WEIGHT = 0.7  # a concept found only through a synonym counts this much
NAME_WEIGHT = 1.5  # an identifier or a file name (a word the tokenizer splits) is what a question is about
FRESH_KEEP = 0.3  # asked for now: candidates scoring at least this share of the best, newest first
# A question of this many concepts that few entries answer in full gets the entries answering
# most of it too; a single precise word (an identifier) is not padded.
FILL_MIN_GROUPS = 2
LIGHT_LIMIT = 200  # candidates from what was said, by bm25
BULK_LIMIT = 100  # candidates from tool output per expression, newest first
SCORE_WINDOW = 2000  # an expression matching more entries than this has only its newest scored

HINT_SOME = ("{n} of these {shown} results hold every term; the others hold most of them. "
             "Add, drop or change words to narrow it down.")
HINT_ANY = "no entry holds every term; these hold some of them. Add, drop or change words to narrow it down."
HINT_NONE = "nothing matched; try fewer or other words, a wider scope or a longer time range"

Tokenize = Callable[[str], list[str]]
_WORDS = re.compile(r"[^\W_]+")


@dataclass
class _Stats:
    """What bm25 over the bulk table needs and FTS5 does not give without positions."""

    docs: int
    average_chars: float


# store -> (newest rowid, average chars) when last measured
_AVERAGES: weakref.WeakKeyDictionary[Store, tuple[int, float]] = weakref.WeakKeyDictionary()
STATS_STALE_ROWS = 1000  # the average is measured again after this many new entries


def _stats(store: Store) -> _Stats:
    """Estimated without scanning the table (a scan of every row would cost more than the
    search): rows are rarely deleted, so the newest rowid counts them, and the newest
    thousands give the average length, measured again once a thousand more have come."""
    newest = int(store.value("SELECT max(rowid) FROM entries", default=0))
    known = _AVERAGES.get(store)
    if known is None or abs(newest - known[0]) >= STATS_STALE_ROWS:
        average = store.value("SELECT avg(chars) FROM (SELECT chars FROM entries ORDER BY rowid DESC LIMIT 4000)")
        known = _AVERAGES[store] = (newest, float(average or 1.0))
    return _Stats(max(newest, 1), known[1])


def _window(store: Store, table: str, expression: str) -> int:
    """The lowest rowid worth scoring: for an expression that matches more than SCORE_WINDOW
    entries (common words), only the newest SCORE_WINDOW are scored; else every match."""
    row = store.one(f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                    (expression, SCORE_WINDOW))
    return int(row[0]) if row else 0


def _idf(docs: int, containing: int) -> float:
    return math.log((docs - containing + 0.5) / (containing + 0.5) + 1.0)


def _doc_count(store: Store, phrase: list[str], tokenize: Tokenize) -> int:
    """About how many entries hold the rarest term of a phrase: the larger of its document
    counts in the two tables (an entry with bulk holds its light words in both)."""
    for table in ("entries_fts", "entries_bulk"):
        store.conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab_{table} USING fts5vocab(main, {table}, row)")
    terms = tokenize(" ".join(phrase)) or [t.lower() for t in phrase]
    return min(max(int(store.value(f"SELECT doc FROM temp.vocab_{table} WHERE term = ?", (term,), default=0))
                   for table in ("entries_fts", "entries_bulk")) for term in terms)


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _light_expression(phrases: list[list[str]]) -> str:
    return " OR ".join(_quoted(" ".join(p)) for p in phrases)


def _bulk_expression(phrases: list[list[str]]) -> str:
    """Without positions (entries_bulk) a phrase is its terms, all required."""
    return " OR ".join("(" + " AND ".join(_quoted(t) for t in p) + ")" for p in phrases)


@dataclass
class _Concept:
    phrase: list[str]  # the question's words, as literal terms
    alternatives: list[list[str]]  # other phrases that say the same
    weight: float  # idf of the question's words

    @property
    def phrases(self) -> list[list[str]]:
        return [self.phrase, *self.alternatives]


def _light(store: Store, concepts: list[_Concept], filters: Filters) -> list[Hit]:
    """Entries whose light text holds any concept, by bm25 (which grows with what they hold);
    of very many, the newest SCORE_WINDOW (bm25 is computed for each match scored)."""
    where, params = filters.sql()
    expression = " OR ".join(_light_expression(c.phrases) for c in concepts)
    low = _window(store, "entries_fts", expression)
    sql = (f"SELECT {HIT_COLUMNS}, -bm25(entries_fts) FROM entries_fts "
           "JOIN entries e ON e.rowid = entries_fts.rowid JOIN files f ON f.id = e.file_id "
           f"WHERE entries_fts MATCH ? AND entries_fts.rowid >= ? AND {where} ORDER BY rank LIMIT {LIGHT_LIMIT}")
    return hits_of(store.rows(sql, [expression, low, *params]))


def _bulk(store: Store, expression: str, filters: Filters) -> list[tuple[Hit, int]]:
    """The newest bulk matches of an expression, with their length in characters."""
    where, params = filters.sql()
    sql = (f"SELECT {HIT_COLUMNS}, 0.0, e.chars FROM entries_bulk "
           "JOIN entries e ON e.rowid = entries_bulk.rowid JOIN files f ON f.id = e.file_id "
           f"WHERE entries_bulk MATCH ? AND {where} ORDER BY entries_bulk.rowid DESC LIMIT {BULK_LIMIT}")
    return [(Hit(*row[:-1]), int(row[-1])) for row in store.rows(sql, [expression, *params])]


def _held(store: Store, phrases: list[list[str]], rowids: set[int]) -> set[int]:
    """Which of the candidates hold any of the phrases (in either table). The matches from the
    lowest candidate on are read and intersected here: FTS5 reads a doclist in about a
    millisecond, while asking it about each candidate (rowid IN …) costs a seek per candidate."""
    if not rowids:
        return set()
    low = min(rowids)
    rows: set[int] = set()
    for table, expression in (("entries_fts", _light_expression(phrases)),
                              ("entries_bulk", _bulk_expression(phrases))):
        rows |= {r[0] for r in store.conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? AND rowid >= ?", (expression, low))}
    return rows & rowids


IMPLICIT_NOW = 0.3  # how much a present-tense question counts as asking for the current state
FRESH_PHRASES = ("at the moment", "these days", "end up", "ended up", "right now", "as of now", "so far")


# Words that put a question in the past ("why did we…", "what was…"): it asks about an event.
PAST_WORDS = frozenset({"did", "was", "were", "had", "happened", "went", "before", "originally", "initially",
                        "earlier", "previous", "previously", "first", "back", "ago", "yesterday", "old", "older"})


PRESENT_WORDS = frozenset({"is", "are", "does", "do", "has", "have", "am"})


def asks_for_now(query: str) -> float:
    """How strongly a question asks for the current state of something: 1 when it says so
    ("now", "latest", "at the moment"), IMPLICIT_NOW when it is in the present tense (a setting,
    an owner, a version: what it is today), 0 when it asks about the past or only names what to
    find ("test_revoke_twice assert 204 == 409": an error is looked up, not a state)."""
    words = _WORDS.findall(query.lower())
    spaced = " " + " ".join(words) + " "
    if any(w in FRESH_WORDS for w in words) or any(f" {p} " in spaced for p in FRESH_PHRASES):
        return 1.0
    if any(w in PAST_WORDS for w in words):
        return 0.0
    # "does a failed webhook get retried": the verb is present; "-ed" words then describe.
    return IMPLICIT_NOW if any(w in PRESENT_WORDS for w in words) else 0.0


def _one_per_entry(hits: list[Hit], speaking: set[int] | None = None) -> list[Hit]:
    """One hit per entry id (/fork and branch copies repeat entries under the same id: the
    others are noted on the first), and a call counts once with its result: the result holds
    the call, so it takes the call's place, unless the entry making the call is in
    ``speaking`` (it also says something the question asks about; None: keep every call)."""
    answered = {(h.path, h.link_offset) for h in hits if h.link_offset is not None} if speaking is not None else set()
    first: dict[str, Hit] = {}
    out = []
    for hit in hits:
        if hit.kind == "assistant" and (hit.path, hit.offset) in answered and hit.rowid not in (speaking or ()):
            continue
        kept = first.setdefault(hit.entry_id, hit)
        if kept is hit:
            out.append(hit)
        elif hit.session_id and hit.session_id != kept.session_id and hit.session_id not in kept.also_in:
            kept.also_in.append(hit.session_id)
    return out


def _concepts(groups: list[list[str]], stats: _Stats, store: Store, tokenize: Tokenize) -> tuple[list[_Concept], bool]:
    """The question's meaningful concepts (stopwords, and words asking for freshness or for a
    tool's output, dropped unless nothing else is left), and whether it asks for the current state."""
    fresh = asks_for_now(" ".join(" ".join(g) for g in groups)) >= 1.0
    found = synonyms.concepts(groups, _lexicon() if SYNONYMS else None, tokenize)
    asking_now = FRESH_WORDS | {w for p in FRESH_PHRASES for w in p.split()} if fresh else FRESH_WORDS
    # What the question asks for, not words of its answer:
    intent = asking_now | OUTPUT_WORDS | (SAY_WORDS if _names_a_thing(groups) else frozenset())
    meaningful = [c for c in found if not _only(c, intent) and (c.alternatives or not _only(c, STOPWORDS))]
    out = []
    for concept, verb in _with_particles(meaningful, found) if meaningful else [(c, None) for c in found]:
        phrase = [t for g in concept.words for t in g]
        weight = _idf(stats.docs, _doc_count(store, verb or phrase, tokenize))
        if len(concept.words) == 1 and len(phrase) > 1 and verb is None:
            weight *= NAME_WEIGHT
        out.append(_Concept(phrase, concept.alternatives, weight))
    return out, fresh


def _only(concept: synonyms.Concept, words: frozenset[str]) -> bool:
    """Whether every word of the concept is one of ``words``."""
    return all(len(g) == 1 and g[0].lower() in words for g in concept.words)


def _with_particles(meaningful: list[synonyms.Concept],
                    found: list[synonyms.Concept]) -> list[tuple[synonyms.Concept, list[str] | None]]:
    """A verb followed by its particle in the question ("give up") asks for the phrase; the verb
    alone ("give me") still counts, as an alternative, and weighs the phrase (the particle is
    common). Each concept comes with that verb, or None."""
    out: list[tuple[synonyms.Concept, list[str] | None]] = []
    for i, concept in enumerate(found):
        if concept not in meaningful:
            continue
        after = found[i + 1].words if i + 1 < len(found) else []
        if len(concept.words) == 1 and len(after) == 1 and len(after[0]) == 1 and after[0][0].lower() in PARTICLES:
            verb = concept.words[0]
            out.append((synonyms.Concept([verb + after[0]], [verb, *concept.alternatives]), verb))
        else:
            out.append((concept, None))
    return out


_LEXICON: list[synonyms.Lexicon] = []


def _lexicon() -> synonyms.Lexicon:
    """The synonym vocabulary, read once per process (every connection tokenizes alike)."""
    if not _LEXICON:
        _LEXICON.append(synonyms.Lexicon())
    return _LEXICON[0]


EXPLAIN_WORDS = frozenset({"how", "why"})
EXPLAIN_TOOL_WEIGHT = 0.3  # "how did we…", "why…": an explanation is said, not printed by a tool


# "what did `alembic heads` print", "what does settings.json contain": the answer is a tool's
# output, and these words say so rather than being words of it.
OUTPUT_WORDS = frozenset("print printed prints output outputs return returned returns contain contains "
                         "contained show showed shows shown".split())
OUTPUT_TOOL_WEIGHT = 2.0  # tool output, usually read from the bulk table, then outweighs talk about it


# "what does eval-file.schema.ts say": what a file (an identifier, a path) says is its output;
# what a person said is not.
SAY_WORDS = frozenset({"say", "says", "said"})


def _names_a_thing(groups: list[list[str]]) -> bool:
    """Whether the question holds an identifier, a file name or a path (a word split in terms)."""
    return any(len(g) > 1 for g in groups)


def _asks_for_output(groups: list[list[str]]) -> bool:
    words = {g[0].lower() for g in groups if len(g) == 1}
    return bool(words & OUTPUT_WORDS) or (bool(words & SAY_WORDS) and _names_a_thing(groups))


def _explains(groups: list[list[str]]) -> bool:
    """Whether the question asks how or why (it starts so). "How long did it take" asks for a
    duration, which tools print (timings, `time`, logs): not an explanation. ("How many" stays
    one: counts were said more often than printed in the eval, and file reads drowned them.)"""
    words = [g[0].lower() if len(g) == 1 else "" for g in groups[:3]]
    for i, word in enumerate(words[:2]):
        if word in EXPLAIN_WORDS:
            return not (word == "how" and words[i + 1:i + 2] == ["long"])
    return False


def rank(store: Store, groups: list[list[str]], filters: Filters, limit: int, now: int,
         tokenize: Tokenize) -> list[Hit]:
    """Candidates in rank order, all by the same score (most of the question, rare words
    weighing most), each marked complete when it holds every meaningful word."""
    stats = _stats(store)
    concepts, fresh = _concepts(groups, stats, store, tokenize)
    total = sum(c.weight for c in concepts) or 1.0

    found: dict[int, Hit] = {h.rowid: h for h in _light(store, concepts, filters)}
    chars: dict[int, int] = {}
    # Bulk candidates: all concepts together, and each of the rarest on its own.
    leads = sorted(concepts, key=lambda c: -c.weight)[:BULK_LEADS]
    expressions = [" AND ".join(f"({_bulk_expression(c.phrases)})" for c in concepts)]
    expressions += [_bulk_expression(c.phrases) for c in leads]
    for expression in dict.fromkeys(expressions):
        for hit, length in _bulk(store, expression, filters):
            chars[hit.rowid] = length
            if hit.rowid not in found:
                hit.score = 0.0
                found[hit.rowid] = hit

    rowids = set(found)
    exact = [_held(store, [c.phrase], rowids) for c in concepts]
    loose = [_held(store, c.alternatives, rowids) if c.alternatives else set() for c in concepts]
    age_scale = FRESH_AGE_DAYS if fresh else AGE_DAYS
    explain = _explains(groups)
    output = _asks_for_output(groups)
    for rowid, hit in found.items():
        matched = [c.weight if rowid in e else SYNONYM_WEIGHT * c.weight
                   for c, e, lo in zip(concepts, exact, loose, strict=True) if rowid in e or rowid in lo]
        coverage = sum(matched) / total
        hit.complete = all(rowid in e for e in exact)
        lexical = hit.score
        if rowid in chars:
            norm = K1 * (1 - B + B * chars[rowid] / stats.average_chars)
            lexical = max(lexical, BULK_WEIGHT * sum(w * (K1 + 1) / (1 + norm) for w in matched))
        age_days = max(0.0, (now - (hit.ts or now)) / DAY_MS)
        kind = KIND_WEIGHT.get(hit.kind, 1.0)
        if explain and hit.kind in ("tool_result", "bash"):
            kind *= EXPLAIN_TOOL_WEIGHT
        elif output and hit.kind in ("tool_result", "bash"):
            kind *= OUTPUT_TOOL_WEIGHT
        hit.score = lexical * coverage ** COVERAGE_POWER * kind / (1 + age_days / age_scale)
    ranked = sorted(found.values(), key=lambda h: (-h.score, -(h.ts or 0)))
    if len(concepts) < FILL_MIN_GROUPS and any(h.complete for h in ranked):
        ranked = [h for h in ranked if h.complete]  # a single precise word (an identifier) is not padded
    return _one_per_entry(ranked, speaking=None)  # calls and results are paired after re-ranking


RERANK = 10  # the best this many candidates are re-read and scored on their text (a page shows 8)
PROXIMITY_WEIGHT = 0.5  # up to this much more when the question's words stand together
PROXIMITY_CHARS = 200
PHRASE_WEIGHT = 0.3  # this much more for each pair of the question's words found as typed ("roll back")
# A question found in the journal is rarely its own answer; the reply that ends its turn is.
QUESTION_WEIGHT = 0.7
ANSWER_SHARE = 0.9  # of the question's score, given to that reply
ANSWER_LOOKAHEAD = 60  # entries looked at after the question for the end of its turn
QUESTION_CHARS = 600
CALL_NAMED_WEIGHT = 1.5  # asked what a named file (identifier, path) showed: a result whose call names it
QUOTED_ANSWER_WEIGHT = 0.001  # a reply that pastes an answer of ours (its score; it also goes last)


def _proximity(matches: list[tuple[int, int, str]], width: int) -> float:
    """The most distinct query terms within ``width`` characters, as a share of those present."""
    present = {m[2] for m in matches}
    if len(present) < 2:
        return 0.0
    best, left = 0, 0
    for right in range(len(matches)):
        while matches[right][0] - matches[left][0] > width:
            left += 1
        best = max(best, len({m[2] for m in matches[left:right + 1]}))
    return (best - 1) / (len(present) - 1) if best > 1 else 0.0


def _pairs(query: str) -> list[str]:
    words = [w for w in _WORDS.findall(query.lower())]
    return [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]


# The first words of a question ("what did…", "is it safe…"), as against words looked up.
QUESTION_OPENERS = frozenset("what how why when where which who whom whose is are am was were do does did can could "
                             "should shall will would has have had may might must".split())


WH_WORDS = frozenset("what how why when where which who".split())


def is_question(query: str) -> bool:
    """Whether the query asks something (as against naming what to look up: "日本語", an identifier):
    a question mark, a question word first, or a wh-word second ("so why did it hang")."""
    words = _WORDS.findall(query.lower())
    return "?" in query or bool(words) and (words[0] in QUESTION_OPENERS or any(w in WH_WORDS for w in words[1:2]))


def _pairs_found(lowered: str, pairs: list[str]) -> int:
    """How many of the question's word pairs the text holds, looked for in its words alone:
    "test_revoke_twice" holds "test revoke", "assert 204 == 409" holds "204 409"."""
    words = " ".join(_WORDS.findall(lowered))
    return sum(1 for p in pairs if p in words)


# A sentence that asks to find or check something ("find the biggest stuff in my home") or
# asks without a question mark ("whats in this token"): its turn ends with what was found.
_INVESTIGATE = re.compile(r"(?:^|[.!?\n:]\s*)(?:please\s+|can you\s+|pls\s+)?(?:find|check|look|investigate|"
                          r"figure out|diagnose|debug|see|what's|whats|which|where|why)\b", re.I)


def _asks_to_find(text: str) -> bool:
    """A short message that asks to find out something, with or without a question mark."""
    return len(text) <= QUESTION_CHARS and bool(_INVESTIGATE.search(text))


def _asks(text: str) -> bool:
    """A short message that asks something (it holds a question mark)."""
    return len(text) <= QUESTION_CHARS and "?" in text


def _reply(store: Store, question: Hit) -> Hit | None:
    """The reply that ends the question's turn (the last assistant entry before the user speaks
    again): it says what was found."""
    rows = store.rows(f"SELECT {HIT_COLUMNS} FROM entries e JOIN files f ON f.id = e.file_id "
                      "WHERE e.file_id = (SELECT file_id FROM entries WHERE rowid = ?) AND e.offset > ? "
                      f"ORDER BY e.offset LIMIT {ANSWER_LOOKAHEAD}", (question.rowid, question.offset))
    following = hits_of(rows)
    calls = {h.link_offset for h in following if h.link_offset is not None}  # a call is no reply
    last = None
    for hit in following:
        if hit.kind == "user":
            break
        if hit.kind == "assistant" and hit.offset not in calls:
            last = hit
    return last


def _head(ranked: list[Hit], terms: set[str], tokenize: Tokenize,
          said_of: Callable[[Hit], str | None]) -> tuple[list[Hit], list[Hit], set[int]]:
    """The best RERANK candidates, the rest, and the calls kept beside their results. A call
    whose result is also a candidate gives way to it (the result shows the call), unless what
    the call's entry says besides the call holds every term of the question ("revoking a
    revoked token should be 409 Conflict", thought before a call)."""
    from journal_index.excerpt import find_matches

    answered = {(h.path, h.link_offset) for h in ranked if h.link_offset is not None}
    head: list[Hit] = []
    tail: list[Hit] = []
    speaking: set[int] = set()
    for hit in ranked:
        if len(head) < RERANK and hit.kind == "assistant" and (hit.path, hit.offset) in answered:
            said = said_of(hit)
            found = {m[2] for m in find_matches(" ".join(said.lower().split()), terms, tokenize)} if said else set()
            if terms and found >= terms:
                speaking.add(hit.rowid)
            else:
                tail.append(hit)  # dropped with the others by _one_per_entry
                continue
        (head if len(head) < RERANK else tail).append(hit)
    return head, tail, speaking


def rerank(store: Store, ranked: list[Hit], query: str, groups: list[list[str]], tokenize: Tokenize,
           text_of: Callable[[Hit], str | None], said_of: Callable[[Hit], str | None]) -> list[Hit]:
    """The best candidates scored again on their own words: the question's terms close together,
    and its word pairs as typed ("roll back" is not "roll" and "back" far apart). ``said_of``
    gives what an entry says besides its tool calls: a call that also says what the question
    asks about is kept beside its result."""
    from journal_index.excerpt import find_matches

    terms = {t for g in groups if not (len(g) == 1 and g[0].lower() in STOPWORDS) for t in tokenize(" ".join(g))}
    head, tail, speaking = _head(ranked, terms, tokenize, said_of)
    pairs = _pairs(query)
    # "how did we fix…", "why…": a request found in the journal ("alembic upgrade fails on main")
    # is answered, like a question, by the reply that ends its turn.
    explains = _explains(groups)
    asked = is_question(query)
    # "what did manual_commit_condensation.go show": the output of a call naming that file.
    output = _asks_for_output(groups)
    names = {t for g in groups if len(g) > 1 for t in tokenize(" ".join(g))}
    known = {h.rowid: h for h in ranked}
    added: list[Hit] = []
    quoted: set[int] = set()
    for hit in head:
        text = text_of(hit)
        if text is None:
            continue
        if quotes_our_answer(text):
            # A reply pasting an answer of ours repeats the entries it lists, newer than all of them:
            # it comes after every other candidate, never above what it copies.
            quoted.add(hit.rowid)
            hit.score *= QUOTED_ANSWER_WEIGHT
            continue
        lowered = " ".join(text.lower().split())
        factor = 1.0
        if terms:
            factor += PROXIMITY_WEIGHT * _proximity(find_matches(lowered, terms, tokenize), PROXIMITY_CHARS)
        phrased = _pairs_found(lowered, pairs)
        factor += PHRASE_WEIGHT * phrased
        if output and names and hit.link_offset is not None:  # a result: its call's summary comes first
            call = text.split("\n", 1)[0].lower()
            if {m[2] for m in find_matches(call, names, tokenize)} >= names:
                factor *= CALL_NAMED_WEIGHT
        # Asked, a question quoted word for word is what is looked for; one merely alike asks what its
        # reply says. Words looked up ask for the entry holding them.
        asks = _asks(text) or _asks_to_find(text) or (explains and len(text) <= QUESTION_CHARS)
        if hit.kind == "user" and asks and asked and not (pairs and phrased == len(pairs)):
            reply = _reply(store, hit)
            if reply is not None:
                share = hit.score * factor * ANSWER_SHARE
                known_reply = known.get(reply.rowid)
                if known_reply is None:
                    reply.score, reply.complete = share, hit.complete
                    known[reply.rowid] = reply
                    added.append(reply)
                elif known_reply not in head:
                    known_reply.score = max(known_reply.score, share)
                    added.append(known_reply)
                else:
                    known_reply.score = max(known_reply.score, share)
            factor *= QUESTION_WEIGHT
        hit.score *= factor
    head = sorted(head + added, key=lambda h: -h.score)
    ordered = _one_per_entry(head + [h for h in tail if h not in added], speaking)
    return [h for h in ordered if h.rowid not in quoted] + [h for h in ordered if h.rowid in quoted]


# A summary is written after the turns it sums up, so it is always newer than the statement it
# repeats: asked for now, the statements close to the best come newest first, and it after them
# (or in its place, when the question is merely in the present tense).
SUMMARIES = frozenset({"compaction", "branch_summary"})


def newest_first_among_the_best(ranked: list[Hit], now_strength: float) -> list[Hit]:
    """For a question about the current state: of the candidates scoring close to the best, the
    newest first (a fact changed; its latest statement is the answer). How close depends on
    how clearly the question asks for now."""
    if not ranked or now_strength <= 0:
        return ranked
    share = 1 - (1 - FRESH_KEEP) * now_strength
    best = max(h.score for h in ranked)
    # Asked outright ("now", "latest"), a summary comes after the statements; merely asked in the
    # present tense, it keeps its place among them.
    outright = now_strength >= 1.0
    good = [h for h in ranked if h.score >= share * best and not (outright and h.kind in SUMMARIES)]
    moved = {id(h) for h in good}
    statements = iter(sorted((h for h in good if h.kind not in SUMMARIES), key=lambda h: -(h.ts or 0)))
    head = [h if h.kind in SUMMARIES else next(statements) for h in good]
    return head + [h for h in ranked if id(h) not in moved]


def match_quality(hits: list[Hit]) -> tuple[str, str | None]:
    """How well the shown hits match: "all", "any" or "none", and a hint when not all do."""
    if not hits:
        return "none", HINT_NONE
    whole = sum(1 for h in hits if h.complete)
    if whole == len(hits):
        return "all", None
    if whole:
        return "all", HINT_SOME.format(n=whole, shown=len(hits))
    return "any", HINT_ANY
