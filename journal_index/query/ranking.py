"""Which entries answer a query, best first: one score per hit, a sum of named factors.

The model, small enough to hold in one's head (weights: ``ranking_weights.py``, fitted on the
eval's train split):

1. Candidates come from both FTS tables (``read_sql``): what was said, and tool output.
2. Every candidate gets, from the index alone:
   * ``bm25`` and ``field``: the better of its light match (bm25 by FTS5) and its bulk match
     (bm25 computed here), each weighed by the field it is in — what was said, a call, tool
     output, a summary — in the table of the question's intent (BM25F-style, one table);
   * ``coverage``: the share of the question's weight it holds (groups weighted by idf, names
     more, synonyms less), so a long output holding a few common words does not win;
   * ``age``: damping over weeks (asked for now, ``newest`` below orders the statements in time);
   * ``length``: the journal line's size, against the words a long entry (a big tool output)
     holds by chance — coverage is not normalized by length, bm25 is.
3. The best RERANK are re-read and get, from their words: ``proximity`` (the question's terms
   close together), ``pairs`` (its word pairs as typed), ``thought`` (an entry that is only the
   model's readable thinking, no reply, call or output), ``progress`` (a message its agent marked
   as a note between steps: Codex's commentary), ``later`` (of a turn's hits, each after the
   first, by how many came before it), ``rest`` (below the first hit, a step by how many
   entries follow it in its turn: a turn says what came of its steps at its end),
   ``question_turn`` (a question found in
   the journal, whose turn's reply then gets ``reply_link``: at least the question's score plus
   that weight), ``copy`` (a reply pasting an earlier answer of ours, or repeating an older
   candidate), and ``newest`` (asked for now: those close to the best, newest first; summaries
   left below).
4. Hits are sorted by the sum; ``Hit.explain`` holds each factor's part of it.
"""

from __future__ import annotations

import copy as copying
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from journal_index.data import read_sql
from journal_index.data.store import Store
from journal_index.query import echoes, synonyms
from journal_index.query.hits import Filters, Hit
from journal_index.query.question import FRESH_PHRASES, FRESH_WORDS, OUTPUT_WORDS, SAY_WORDS, Question
from journal_index.query.ranking_weights import FITTED
from journal_index.text.entry_text import quotes_our_answer
from journal_index.text.text_forms import PARTICLES, is_stopword

DAY_MS = 86_400_000
K1, B = 1.2, 0.75  # bm25's, as FTS5 uses them
AGE_DAYS = 30.0
EPS = 1e-4  # the least a share or a bm25 counts for (its log stays finite)
BULK_LEADS = 1  # bulk candidates are also found by the rarest concepts alone (a common word matches everything)
FILL_MIN_GROUPS = 2  # a single precise word (an identifier) is not padded with partial matches
RERANK = 10  # the best this many candidates are re-read and scored on their text (a page shows 8)
PROXIMITY_CHARS = 200
LENGTH_BYTES = 1_000  # the scale of the length feature (a journal line's bytes)
QUESTION_CHARS = 600
SUMMARY_KINDS = frozenset({"compaction", "branch_summary"})
TOOL_KINDS = frozenset({"tool_result", "bash"})

# The weights in use: ranking_weights.FITTED, replaced in-process by the fitting script only.
WEIGHTS: dict[str, Any] = copying.deepcopy(FITTED)

HINT_SOME = ("{n} of these {shown} results hold every term; the others hold most of them. "
             "Add, drop or change words to narrow it down.")
HINT_ANY = "no entry holds every term; these hold some of them. Add, drop or change words to narrow it down."
HINT_NONE = "nothing matched; try fewer or other words, a wider scope or a longer time range"

Tokenize = Callable[[str], list[str]]
TextOf = Callable[[Hit], str | None]
_WORDS = re.compile(r"[^\W_]+")


def _w(name: str) -> float:
    return float(WEIGHTS["features"][name])


def _fields(kind: str) -> tuple[str, str]:
    """The fields of a candidate's light and bulk text: a result's light text is its call."""
    if kind in SUMMARY_KINDS:
        return "summary", "summary"
    if kind in TOOL_KINDS:
        return "call", "output"
    return "said", "call"


def _set(hit: Hit, name: str, value: float) -> None:
    hit.score += value - hit.explain.get(name, 0.0)
    hit.explain[name] = value


@dataclass
class _Concept:
    phrase: list[str]  # the question's words, as literal terms
    alternatives: list[list[str]]  # other phrases that say the same
    weight: float  # idf of the question's words

    @property
    def phrases(self) -> list[list[str]]:
        return [self.phrase, *self.alternatives]


_LEXICON: list[synonyms.Lexicon] = []


def _lexicon() -> synonyms.Lexicon:
    """The synonym vocabulary, read once per process (every connection tokenizes alike)."""
    if not _LEXICON:
        _LEXICON.append(synonyms.Lexicon())
    return _LEXICON[0]


def _only(concept: synonyms.Concept, test: Callable[[str], bool]) -> bool:
    """Whether every word of the concept is a single term passing ``test``."""
    return all(len(g) == 1 and test(g[0]) for g in concept.words)


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


def concepts(question: Question, stats: read_sql.Stats, store: Store, tokenize: Tokenize) -> list[_Concept]:
    """The question's meaningful concepts: stopwords, and words asking for freshness or for a
    tool's output, dropped unless nothing else is left; names (identifiers, files) weigh more."""
    groups = question.groups
    found = synonyms.concepts(groups, _lexicon(), tokenize)
    fresh = question.now >= 1.0
    asking_now = FRESH_WORDS | {w for p in FRESH_PHRASES for w in p.split()} if fresh else FRESH_WORDS
    intent = asking_now | OUTPUT_WORDS | (SAY_WORDS if question.names else frozenset())
    meaningful = [c for c in found if not _only(c, lambda word: word.lower() in intent)
                  and (c.alternatives or not _only(c, is_stopword))]
    names = question.name_groups
    out = []
    for concept, verb in _with_particles(meaningful, found) if meaningful else [(c, None) for c in found]:
        phrase = [t for g in concept.words for t in g]
        weight = read_sql.idf(stats.docs, read_sql.doc_count(store, verb or phrase, tokenize))
        if len(concept.words) == 1 and concept.words[0] in names and verb is None:
            weight *= _w("name")
        out.append(_Concept(phrase, concept.alternatives, weight))
    return out


def rank(store: Store, question: Question, filters: Filters, now: int, tokenize: Tokenize) -> list[Hit]:
    """Every candidate scored from the index alone (bm25 by field, coverage, age), best first,
    each marked complete when it holds every meaningful word."""
    stats = read_sql.stats(store)
    found_concepts = concepts(question, stats, store, tokenize)
    total = sum(c.weight for c in found_concepts) or 1.0
    light_expression = " OR ".join(read_sql.light_expression(c.phrases) for c in found_concepts)
    found: dict[int, Hit] = {h.rowid: h for h in read_sql.light(store, light_expression, filters)}
    chars: dict[int, int] = {}
    leads = sorted(found_concepts, key=lambda c: -c.weight)[:BULK_LEADS]
    expressions = [" AND ".join(f"({read_sql.bulk_expression(c.phrases)})" for c in found_concepts)]
    expressions += [read_sql.bulk_expression(c.phrases) for c in leads]
    for expression in dict.fromkeys(expressions):
        for hit, length in read_sql.bulk(store, expression, filters):
            chars[hit.rowid] = length
            if hit.rowid not in found:
                hit.score = 0.0
                found[hit.rowid] = hit

    rowids = set(found)
    exact = [read_sql.held(store, [c.phrase], rowids) for c in found_concepts]
    loose = [read_sql.held(store, c.alternatives, rowids) if c.alternatives else set() for c in found_concepts]
    fields = WEIGHTS["fields"][question.intent]
    synonym = _w("synonym")
    for rowid, hit in found.items():
        matched = [c.weight if rowid in e else synonym * c.weight
                   for c, e, lo in zip(found_concepts, exact, loose, strict=True) if rowid in e or rowid in lo]
        coverage = sum(matched) / total
        hit.complete = all(rowid in e for e in exact)
        light_field, bulk_field = _fields(hit.kind)
        best = (fields[light_field] * hit.score, hit.score, light_field)
        if rowid in chars:
            norm = K1 * (1 - B + B * chars[rowid] / stats.average_chars)
            bm25 = sum(w * (K1 + 1) / (1 + norm) for w in matched)
            best = max(best, (fields[bulk_field] * bm25, bm25, bulk_field))
        age_days = max(0.0, (now - (hit.ts or now)) / DAY_MS)
        hit.matched_field = best[2]
        hit.explain = {
            "bm25": math.log(max(best[1], EPS)),
            "field": math.log(max(fields[best[2]], EPS)),
            "coverage": _w("coverage") * math.log(max(coverage, EPS)),
            "age": _w("age") * math.log1p(age_days / AGE_DAYS),
            # a long entry holds many of a question's words by chance: coverage is not normalized
            "length": _w("length") * math.log1p(hit.length / LENGTH_BYTES),
        }
        hit.score = sum(hit.explain.values())
    ranked = _sorted(list(found.values()))
    if len(found_concepts) < FILL_MIN_GROUPS and any(h.complete for h in ranked):
        ranked = [h for h in ranked if h.complete]
    return _one_per_entry(ranked, speaking=None)  # calls and results are paired after re-ranking


def _sorted(hits: list[Hit]) -> list[Hit]:
    return sorted(hits, key=lambda h: (-h.score, -(h.ts or 0), h.rowid))


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


def pairs_found(lowered: str, pairs: list[str]) -> int:
    """How many of the question's word pairs the text holds, looked for in its words alone:
    "test_revoke_twice" holds "test revoke", "assert 204 == 409" holds "204 409"."""
    words = " ".join(_WORDS.findall(lowered))
    return sum(1 for p in pairs if p in words)


# A sentence that asks to find or check something ("find the biggest stuff in my home") or
# asks without a question mark ("whats in this token"): its turn ends with what was found.
_INVESTIGATE = re.compile(r"(?:^|[.!?\n:]\s*)(?:please\s+|can you\s+|pls\s+)?(?:find|check|look|investigate|"
                          r"figure out|diagnose|debug|see|what's|whats|which|where|why)\b", re.I)


def _asks_in_journal(text: str, explain: bool) -> bool:
    """A short message that asks something: a question mark, a request to find out, or (asked
    how or why) any short request, whose turn's reply then says what was done."""
    return len(text) <= QUESTION_CHARS and ("?" in text or bool(_INVESTIGATE.search(text)) or explain)


def _head(ranked: list[Hit], terms: set[str], tokenize: Tokenize,
          said_of: TextOf) -> tuple[list[Hit], list[Hit], set[int]]:
    """The best RERANK candidates, the rest, and the calls kept beside their results. A call
    whose result is also a candidate gives way to it (the result shows the call), unless what
    the call's entry says besides the call holds every term of the question."""
    from journal_index.query.excerpt import find_matches

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


def _later(store: Store, head: list[Hit], question: Question) -> None:
    """``later``: a turn searches, reads and tries first and says what came of it last, so of
    the head's hits in one turn (no user entry between them) each after the first is lifted, by
    the log of 1 + how many came before it (a flat lift for any did less on train: stop 45).
    Not when asked for now (``newest`` orders those by time) nor for user entries and summaries,
    which are not steps of a turn."""
    weight = _w("later")
    if not weight or question.now > 0:
        return
    by_journal: dict[int, list[Hit]] = {}
    for hit in head:
        if hit.kind != "user" and hit.kind not in SUMMARY_KINDS:
            by_journal.setdefault(hit.file_id, []).append(hit)
    for file_id, hits in by_journal.items():
        hits.sort(key=lambda h: h.offset)
        earlier = 0
        for before, hit in zip(hits, hits[1:], strict=False):
            earlier = 0 if read_sql.user_between(store, file_id, before.offset, hit.offset) else earlier + 1
            if earlier:
                _set(hit, "later", weight * math.log1p(earlier))


def _rest(store: Store, head: list[Hit]) -> None:
    """``rest``: a step deep inside a long turn (a search, a read, a note between steps) answers
    less often than one near the turn's end, where what came of it is said. Each hit of the head
    but the first, user entries and summaries, by the log of 1 + the entries after it in its
    turn. The first keeps its place: lowering it too took more first places away than it gave
    (tests/eval/README.md, stop 48)."""
    weight = _w("rest")
    if not weight or not head:
        return
    first = _sorted(head)[0]
    steps = [h for h in head if h is not first and h.kind != "user" and h.kind not in SUMMARY_KINDS]
    for hit, left in zip(steps, read_sql.entries_left_in_turns(store, [(h.file_id, h.offset) for h in steps]),
                         strict=True):
        if left:
            _set(hit, "rest", weight * math.log1p(left))


def rerank(store: Store, ranked: list[Hit], question: Question, tokenize: Tokenize, text_of: TextOf,
           said_of: TextOf, only_thinks: Callable[[Hit], bool], progress_note: Callable[[Hit], bool],
           limit: int = RERANK) -> list[Hit]:
    """The best candidates scored again on their own words (proximity, pairs, thought, progress,
    question turn and its reply, later, copy); every hit sorted by its score."""
    from journal_index.query.excerpt import find_matches

    groups = question.groups
    terms = {t for g in groups if not (len(g) == 1 and is_stopword(g[0])) for t in tokenize(" ".join(g))}
    head, tail, speaking = _head(ranked, terms, tokenize, said_of)
    pairs = question.pairs
    known = {h.rowid: h for h in ranked}
    added: list[Hit] = []
    quoted: set[int] = set()
    for hit in head:
        text = text_of(hit)
        if text is None:
            continue
        if quotes_our_answer(text):
            quoted.add(hit.rowid)
        lowered = " ".join(text.lower().split())
        if terms:
            _set(hit, "proximity", _w("proximity") * _proximity(find_matches(lowered, terms, tokenize),
                                                                 PROXIMITY_CHARS))
        phrased = pairs_found(lowered, pairs)
        _set(hit, "pairs", _w("pairs") * math.log1p(phrased))
        if hit.kind == "assistant" and only_thinks(hit):
            # the model planning aloud ("I'm checking the config…"): what it found or did is said after
            _set(hit, "thought", _w("thought"))
        if hit.kind == "assistant" and _w("progress") and progress_note(hit):
            # a note between steps ("I'll inspect the provider first…"); the turn's report says what came of it
            _set(hit, "progress", _w("progress"))
        # Asked, a question quoted word for word is what is looked for; one merely alike asks
        # what its reply says.
        if (hit.kind == "user" and question.asks and _asks_in_journal(text, question.intent == "explain")
                and not (pairs and phrased == len(pairs))):
            reply = read_sql.reply_to(store, hit)  # the last assistant entry of its turn, no call
            if reply is not None:
                handed = hit.score + _w("reply_link")
                mine = known.get(reply.rowid)
                if mine is None:
                    reply.complete, reply.matched_field = hit.complete, hit.matched_field
                    reply.explain = {"question": hit.score, "reply_link": _w("reply_link")}
                    reply.score = handed
                    known[reply.rowid] = reply
                    added.append(reply)
                elif handed > mine.score:
                    mine.explain = {"question": hit.score, "reply_link": _w("reply_link")}
                    mine.score = handed
            _set(hit, "question_turn", _w("question_turn"))
    _later(store, head, question)
    _rest(store, head)
    tail = [h for h in tail if h not in added]
    ordered = _one_per_entry(_sorted(head + added + tail), speaking)
    _newest_first(ordered, question.now)
    ordered = _sorted(ordered)
    echoed = echoes.originals(ordered, text_of, limit)
    copies = quoted | {h.rowid for h in ordered if id(h) in echoed}
    for hit in ordered:
        if hit.rowid in copies:
            _set(hit, "copy", _w("copy"))
    return _sorted(ordered) if copies else ordered


NEWEST_STEP = 0.01  # between two statements lifted by ``newest``: their order in time, nothing more


def _newest_first(ordered: list[Hit], now: float) -> None:
    """Asked for the current state, the statements scoring close to the best come newest first
    (a fact changed; its latest statement is the answer, even minutes after the first, which age
    cannot tell): ``newest`` lifts each of them to its place in that order, above the rest. How
    close depends on how clearly the question asks for now (``newest_share`` of the best, in
    score terms its log). Asked outright, a summary (always newer than what it sums up) is left
    below them; asked in the present tense only, it keeps its place among them."""
    if now <= 0 or not ordered:
        return
    share = 1 - (1 - _w("newest_share")) * now
    best = max(h.score for h in ordered)
    outright = now >= 1.0
    good = [h for h in ordered
            if h.score >= best + math.log(share) and not (outright and h.kind in SUMMARY_KINDS)]
    statements = iter(sorted((h for h in good if h.kind not in SUMMARY_KINDS), key=lambda h: -(h.ts or 0)))
    places = [h if h.kind in SUMMARY_KINDS else next(statements) for h in good]
    for position, hit in enumerate(places):
        _set(hit, "newest", 0.0)
        target = best + (len(places) - position) * NEWEST_STEP
        _set(hit, "newest", target - hit.score)


def _one_per_entry(hits: list[Hit], speaking: set[int] | None = None) -> list[Hit]:
    """One hit per entry id (/fork and branch copies repeat entries under the same id: the
    others are noted on the first), and a call counts once with its result: the result holds
    the call, so the call gives way to it, unless the entry making the call is in ``speaking``
    (it also says something the question asks about; None: keep every call). The result keeps
    its own place: a call matched by its arguments (a file written whole) is weaker evidence
    than its score says (lifting results to their calls' places lost 42 train questions for 8)."""
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
