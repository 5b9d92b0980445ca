"""Secret redaction: the corpus, the planted fixture secrets, idempotence, hostile input, pieces."""

from __future__ import annotations

import collections
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from journal_index import redact as R
from journal_index.data.store import open_store
from journal_index.formats import Entry, pi
from journal_index.redact import Hit, redact, redact_with_hits
from journal_index.redaction.pieces import pieces as redaction_pieces
from tests.shared_data import agent_journals

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures"
CORPUS = HERE / "redact_corpus"


def _load(name: str) -> list[dict[str, str]]:
    return [json.loads(line) for line in (CORPUS / name).read_text().splitlines() if line.strip()]


POSITIVES = _load("positives.jsonl")
NEGATIVES = _load("negatives.jsonl")


def _json_escaped(s: str) -> str:
    return json.dumps(s)[1:-1]


# Each case is checked alone and inside the shapes a transcript wraps it in.
def _contexts(text: str) -> dict[str, tuple[str, Any]]:
    """name → (text to redact, how a value appears in it)."""
    same = lambda v: v  # noqa: E731
    return {
        "alone": (text, same),
        "prose": (f"Here is what the logs show:\n{text}\nDoes that look right to you?", same),
        "shell": (f"$ cd /srv/app && ./run.sh\n{text}\n$ echo $?\n0", same),
        "indented": ("\n".join("    " + line for line in text.split("\n")), same),
        # A tool call's arguments or a JSON tool result: newlines and quotes escaped.
        "json": (json.dumps({"type": "text", "text": text}), _json_escaped),
    }


def _leaks(case: dict[str, str]) -> list[str]:
    problems = []
    for name, (text, shape) in _contexts(case["text"]).items():
        out = redact(text)
        if shape(case["secret"]) in out:
            problems.append(f"{name}: secret survives")
        if "[REDACTED:" not in out:
            problems.append(f"{name}: no marker")
        if case.get("key") and shape(case["key"]) not in out:
            problems.append(f"{name}: key name lost")
        if name == "alone" and f"[REDACTED:{case['kind']}]" not in out:
            problems.append(f"alone: expected kind {case['kind']}, got {out!r}")
    return problems


def _false_positive(case: dict[str, str]) -> list[str]:
    return [name for name, (text, _) in _contexts(case["text"]).items() if redact(text) != text]


def test_corpus_size() -> None:
    assert len(POSITIVES) >= 150
    assert len({c["kind"] for c in POSITIVES}) >= 35
    assert len(NEGATIVES) >= 50
    # Every value is unique and none is a substring of its own surroundings by accident.
    assert len({c["secret"] for c in POSITIVES}) == len(POSITIVES)


@pytest.mark.parametrize("case", POSITIVES, ids=lambda c: f"{c['id']}-{c['kind']}")
def test_positive(case: dict[str, str]) -> None:
    assert _leaks(case) == []


@pytest.mark.parametrize("case", NEGATIVES, ids=lambda c: f"{c['id']}-{c['category']}")
def test_negative(case: dict[str, str]) -> None:
    assert _false_positive(case) == [], redact(case["text"])


def test_recall_and_false_positives() -> None:
    missed = [c["id"] for c in POSITIVES if _leaks(c)]
    flagged = [c["id"] for c in NEGATIVES if _false_positive(c)]
    kinds = {c["kind"] for c in POSITIVES}
    recall = 1 - len(missed) / len(POSITIVES)
    print(
        f"\nredaction corpus: {len(POSITIVES)} positives over {len(kinds)} kinds, recall {recall:.1%} "
        f"(missed {missed}); {len(NEGATIVES)} negatives, {len(flagged)} false positives {flagged}"
    )
    assert missed == []
    assert flagged == []


def test_every_rule_kind_is_exercised() -> None:
    seen: set[str] = set()
    for case in POSITIVES:
        seen.update(h.kind for h in redact_with_hits(case["text"])[1])
    # Only the aliases of the authorization rule (by scheme) may go unseen.
    assert {r.kind for r in R.RULES} - seen <= {"authorization_header"}


def test_finder_and_resolver_agree() -> None:
    """RE2 finds each match and re resolves it; on the corpus they must never disagree."""
    before = R.engine().disagreements
    for case in POSITIVES + NEGATIVES:
        for text, _ in _contexts(case["text"]).values():
            redact(text)
    assert R.engine().disagreements == before


# --- the secrets planted in the fixture journals -----------------------------------------------


def _field(obj: Any, path: str) -> Any:
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        obj = obj[int(part[1:-1])] if part.startswith("[") else obj[part]
    return obj


def _occurrences() -> list[tuple[str, str, str, bytes]]:
    planted = json.loads((FIXTURES / "SECRETS.json").read_text())
    found = []
    for secret in planted["secrets"]:
        for occ in secret["occurrences"]:
            for line in (FIXTURES / occ["file"]).read_bytes().splitlines():
                obj = json.loads(line)
                if obj.get("id") == occ["entryId"]:
                    probes = [secret["value"]] + ([secret["probe"]] if secret.get("probe") else [])
                    for probe in probes:
                        found.append((secret["id"], probe, _field(obj, occ["field"]), line))
    return found


OCCURRENCES = _occurrences()


def test_fixture_secrets_are_all_found() -> None:
    planted = json.loads((FIXTURES / "SECRETS.json").read_text())
    assert planted["count"] == 19
    assert {sid for sid, *_ in OCCURRENCES} == {s["id"] for s in planted["secrets"]}


@pytest.mark.parametrize("sid,probe,text,line", OCCURRENCES, ids=[o[0] for o in OCCURRENCES])
def test_fixture_secret(sid: str, probe: str, text: str, line: bytes) -> None:
    assert probe in text
    assert probe not in redact(text)
    # And as the indexer sees it: the entry text (tool arguments are JSON there).
    entry = pi.parse_line(line, 0)
    assert isinstance(entry, Entry)
    assert probe not in redact(entry.text)
    assert _json_escaped(probe) not in redact(entry.text)


def test_fixture_journals_are_stable() -> None:
    """Every indexed text of the fixtures: redaction is idempotent and never grows a secret."""
    for path in sorted((FIXTURES / "sessions").rglob("*.jsonl")):
        for offset, line in enumerate(path.read_bytes().splitlines()):
            entry = pi.parse_line(line, offset)
            if isinstance(entry, Entry):
                once = redact(entry.text)
                assert redact(once) == once


# --- properties --------------------------------------------------------------------------------


def test_verdict_cache_changes_nothing() -> None:
    """Verdicts are reused by context; a reused verdict must equal a fresh one."""
    fresh = R.Engine(cache=False)
    texts = ["data:\n  -----BEGIN RSA PRIVATE KEY-----\n"] * 2  # once a key collision
    texts += [text for case in POSITIVES + NEGATIVES for text, _ in _contexts(case["text"]).values()]
    for text in texts:
        assert redact(text) == fresh.redact(text)[0]
        assert redact(text) == fresh.redact(text)[0]


def test_redact_is_redact_with_hits() -> None:
    for case in POSITIVES + NEGATIVES:
        assert redact(case["text"]) == redact_with_hits(case["text"])[0]


def test_hits_point_at_markers() -> None:
    text = "AWS_SECRET_ACCESS_KEY=" + "a1B2" * 10 + " and é ghp_" + "x1Y2" * 9
    out, hits = redact_with_hits(text)
    assert [h.kind for h in hits] == ["aws_secret_access_key", "github_token"]
    for hit in hits:
        assert isinstance(hit, Hit)
        assert out[hit.start : hit.end] == f"[REDACTED:{hit.kind}]"
    assert redact(text) == out


def test_idempotent_on_corpus() -> None:
    for case in POSITIVES + NEGATIVES:
        for text, _ in _contexts(case["text"]).values():
            once = redact(text)
            assert redact(once) == once, case["id"]


def test_idempotent_when_a_match_reaches_into_an_earlier_marker() -> None:
    # Found by the property below: the PEM block swallowed a marker, so it was skipped, and the
    # second pass, with the END line redacted as a password, took the PEM head.
    text = "-----BEGIN RSA PRIVATE KEY-----\n[REDACTED:token]password=-----END RSA PRIVATE KEY-----"
    once = redact(text)
    assert redact(once) == once
    assert once.startswith("[REDACTED:private_key][REDACTED:token]password=[REDACTED:password]")


def test_idempotent_when_a_secret_block_names_itself() -> None:
    # Found by the property below: `kind: Secret` inside the data block was redacted as a value,
    # so the next pass found no Secret and read the block as ordinary text.
    text = "data:\n  password=data:\n  kind: Secret\n"
    once = redact(text)
    assert redact(once) == once
    assert "kind: Secret" in once


def test_markers_only_name_kinds() -> None:
    for case in POSITIVES:
        for kind in re.findall(r"\[REDACTED:([^\]]*)\]", redact(case["text"])):
            assert kind in R.KINDS


def test_empty_and_clean_text_is_returned_as_is() -> None:
    assert redact("") == ""
    text = "nothing to see here, just prose about a cat"
    assert redact(text) is text
    assert redact_with_hits(text) == (text, [])


_secretish = st.sampled_from(
    [
        "password=",
        "token: ",
        "Authorization: Bearer ",
        "ghp_",
        "-----BEGIN RSA PRIVATE KEY-----\n",
        "-----END RSA PRIVATE KEY-----",
        "://u:",
        "@",
        "eyJ",
        ".",
        "\\n",
        '\\"',
        '"',
        "'",
        "`",
        "=",
        ":",
        "[REDACTED:token]",
        "data:\n  ",
        "kind: Secret\n",
        "sk-",
        "_",
        "-",
        " ",
        "\n",
        "AKIA",
        "mysql -p",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.one_of(_secretish, st.text(max_size=20), st.text(alphabet="aA1+/=_-", max_size=40)), max_size=30).map(
        "".join
    )
)
def test_property_never_raises_and_is_idempotent(text: str) -> None:
    before = R.engine().disagreements
    once = redact(text)
    assert redact(once) == once
    out, hits = redact_with_hits(text)
    assert out == once
    for hit in hits:
        assert out[hit.start : hit.end] == f"[REDACTED:{hit.kind}]"
    assert R.engine().disagreements == before  # RE2 and re saw the same matches


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_property_arbitrary_unicode(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


# --- hostile input and big texts ---------------------------------------------------------------

SIZE = 10_000_000


def _hostile() -> dict[str, str]:
    b64 = "QWxhZGRpbjpvcGVuIHNlc2FtZQ+/="
    return {
        "a": "a" * SIZE,
        "=": "=" * SIZE,
        ":": ":" * SIZE,
        "-": "-" * SIZE,
        "base64": (b64 * (SIZE // len(b64) + 1))[:SIZE],
        "password=": ("password=" * (SIZE // 9 + 1))[:SIZE],
        "token: ": ("token: " * (SIZE // 7 + 1))[:SIZE],
        "password=$": ("password=$" * (SIZE // 10 + 1))[:SIZE],
        "pem heads": ("-----BEGIN RSA PRIVATE KEY-----\n" * (SIZE // 32 + 1))[:SIZE],
        "url": "https://u:" + "p" * SIZE,
        "mysql": ("mysql " * (SIZE // 6 + 1))[:SIZE],
        "mysql -p$P": ("mysql -p$P " * (SIZE // 11 + 1))[:SIZE],  # a candidate per command, one line
        "eyJ-": ("eyJ-" * (SIZE // 4 + 1))[:SIZE],
        "pem without end": "-----BEGIN RSA PRIVATE KEY-----\n" + ("QUJD" * 16 + "\n") * (SIZE // 65),
        "secret data block": "kind: Secret\ndata:\n" + "  k: djE=\n" * (SIZE // 10),
        # A `data:` line per line, each heading the rest: 56 KB took 15 s before the block was
        # found outside RE2. A quarter of the size: one candidate per 7 bytes, none cached.
        "nested data blocks": "data:\n" + " data:\n" * (SIZE // 28),
        "nested escaped data blocks": 'x: "data:\\n' + " data:\\n" * (SIZE // 32) + '"',
        "authorization": ("Authorization: " * (SIZE // 15 + 1))[:SIZE],
        # Invisible characters are taken out before a second scan: one run, and escapes.
        "zero-width": "\u200b" * SIZE,
        "escaped zero-width": ("\\u200b" * (SIZE // 6 + 1))[:SIZE],
        "zero-width between words": ("ab\u200bcd " * (SIZE // 6 + 1))[:SIZE],
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_hostile()))
def test_hostile_input_is_linear(name: str) -> None:
    text = _hostile()[name]
    start = time.perf_counter()
    out = redact(text)
    elapsed = time.perf_counter() - start
    print(f"\nhostile {name!r}: {len(text) / 1e6:.0f} MB in {elapsed:.2f} s")
    assert elapsed < 10
    assert len(out) <= len(text) + 100 * text.count("\n") + 10_000_000  # sanity: output is bounded


def test_long_line_of_secrets_stays_fast() -> None:
    line = " ".join(f"password=a{i}B" for i in range(20_000))  # 20 000 real hits on one line
    start = time.perf_counter()
    out = redact(line)
    assert time.perf_counter() - start < 5
    assert out.count("[REDACTED:password]") == 20_000


def _pem(lines: int = 30) -> tuple[str, str]:
    body = [f"MIIE{i:04d}" + "Qk1Nx7ab" * 7 for i in range(lines)]
    return "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\n", body[lines // 2]


@pytest.mark.parametrize("depth", [60, 400, 1200, 1900])
def test_pem_across_a_piece_boundary(depth: int) -> None:
    """A PEM block that the 1 MiB piece boundary would cut ``depth`` characters into."""
    pem, probe = _pem()
    filler_line = "some ordinary log line with words and numbers 12345\n"
    head = filler_line * ((R.PIECE_SIZE - depth) // len(filler_line))
    text = head + pem + filler_line * 50_000
    assert len(head) < R.PIECE_SIZE < len(head) + len(pem)
    out = redact(text)
    assert probe not in out
    assert out.count("[REDACTED:private_key]") == 1
    assert out.endswith(filler_line * 50_000)


def test_pieces_cover_the_text_at_line_boundaries() -> None:
    text = ("x" * 100 + "\n") * 30_000 + "  indented\n" * 10
    pieces = list(redaction_pieces(text, size=50_000))
    assert pieces[0][0] == 0 and pieces[-1][1] == len(text)
    for (_, a_end), (b_start, _) in zip(pieces, pieces[1:], strict=False):
        assert a_end == b_start and text[a_end - 1] == "\n"



def _cut_line_by_line(text: str, lo: int, hi: int, reach: int) -> int:
    """The piece cut as first written: each newline from the end, one at a time (the reference)."""
    nl = text.rfind("\n", lo, hi)
    first = nl
    floor = max(lo, hi - reach)
    while nl > floor:
        if nl + 1 < len(text) and text[nl + 1] not in " \t":
            return nl + 1
        nl = text.rfind("\n", lo, nl)
    return first + 1 if first != -1 else lo


@settings(max_examples=400, deadline=None)
@given(text=st.text(alphabet=" \tab\n-", max_size=120), lo=st.integers(0, 130), width=st.integers(0, 130),
       reach=st.integers(1, 40))
@example(text="a\nb\n\n c", lo=0, width=7, reach=40)  # a newline followed by the last one: a line start
@example(text="\nab\n cd", lo=0, width=6, reach=6)  # a newline at the floor itself does not count
@example(text="x\na\n\tb\n\tc", lo=0, width=9, reach=40)  # a tab indents as a space does, last line or not
def test_a_piece_is_cut_where_the_line_by_line_reading_cuts_it(text: str, lo: int, width: int, reach: int) -> None:
    """The cut found by one regular expression is the reference's, in every case: no newline,
    only indented lines, a newline at the text's end, the search reaching back no further than
    _PEM_REACH (made small here to be reached)."""
    from journal_index.redaction import pieces as module

    hi = min(len(text), lo + width)
    lo = min(lo, hi)
    kept = module._PEM_REACH
    module._PEM_REACH = reach  # type: ignore[misc]
    try:
        assert module._cut_before(text, lo, hi) == _cut_line_by_line(text, lo, hi, reach)
    finally:
        module._PEM_REACH = kept  # type: ignore[misc]

def test_yaml_secret_across_a_piece_boundary() -> None:
    block = "apiVersion: v1\nkind: Secret\ndata:\n" + "".join(f"  k{i}: c2VjcmV0dmFsdWU{i:05d}\n" for i in range(40))
    filler = "ordinary line\n" * ((R.PIECE_SIZE - 300) // 14)
    out = redact(filler + block + filler)
    assert "c2VjcmV0dmFsdWU" not in out


def test_a_region_of_a_long_text_is_redacted_with_its_multiline_secrets_whole() -> None:
    from journal_index.redact import redact_region

    pem = ("-----BEGIN OPENSSH PRIVATE KEY-----\n"
           + "\n".join("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" for _ in range(30))
           + "\n-----END OPENSSH PRIVATE KEY-----\n")
    text = "intro line\n" * 3000 + pem + "outro line\n" * 3000
    body = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW"
    middle = text.index(pem) + len(pem) // 2
    for start, end in [(middle, middle + 10), (middle - 5000, middle), (middle, len(text))]:
        region = redact_region(text, start, end)
        assert body not in region
    assert redact_region(text, 0, len(text)) == redact(text)
    plain = redact_region(text, 100, 200)
    assert "intro line" in plain and len(plain) < 10_000


def test_set_resolution_picks_the_first_rule_in_table_order() -> None:
    """At every candidate, the anchored Set and a plain try of every rule in order agree."""
    table = R.engine().full
    checked = 0
    for case in POSITIVES + NEGATIVES:
        for text, _ in _contexts(f"prefix {case['text']} and after").values():
            buf = text.encode("utf-8", "surrogatepass")
            pos = 0
            while True:
                s, e = table.find(buf, pos, len(buf))
                if s < 0:
                    break
                first = next((i for i in range(len(table.rules)) if table.single(i).match(buf, s)), None)
                won = table.resolve(buf, s, e, len(buf))
                assert first is not None and won is not None and won[0] == first, (text, s)
                checked += 1
                pos = s + 1
    assert checked > 500


def test_secret_spans_are_what_redact_replaces() -> None:
    from journal_index.redact import secret_spans

    for case in POSITIVES + NEGATIVES:
        for text, _ in _contexts(case["text"]).values():
            spans = secret_spans(text)
            assert spans == sorted(spans)
            assert all(a < b <= c for (a, b, _), (c, _, _) in zip(spans, spans[1:], strict=False))
            masked: list[str] = []
            last = 0
            for s, e, kind in spans:
                assert 0 <= s < e <= len(text) and kind in R.KINDS
                masked += (text[last:s], f"[REDACTED:{kind}]")
                last = e
            masked.append(text[last:])
            assert "".join(masked) == redact(text), case["id"]
    text = "é " * 3 + "password=Xy7" + "😀" * 2 + " token: " + "a1B2c3D4e5"
    spans = secret_spans(text)
    assert [text[s:e] for s, e, _ in spans] == ["Xy7" + "😀" * 2, "a1B2c3D4e5"]
    assert secret_spans("") == [] and secret_spans("nothing to see") == []


def test_secret_spans_of_a_long_text_are_in_characters() -> None:
    """Spans of a text scanned in pieces (with margins) count characters, not UTF-8 bytes."""
    from journal_index.redact import secret_spans

    filler = "naïve café ☕ line with 😀 words\n" * (R.PIECE_SIZE // 40)
    secrets = ["ghp_" + "x1Y2" * 9, "sk_live_" + "Ab3d" * 6, "hf_" + "Zz9q" * 8]
    text = "".join(filler + f"key {v} end\n" for v in secrets) + filler
    assert len(text) > 3 * R.PIECE_SIZE
    assert [(text[s:e], kind) for s, e, kind in secret_spans(text)] == [
        (secrets[0], "github_token"), (secrets[1], "stripe_secret_key"), (secrets[2], "huggingface_token")
    ]


def test_a_secret_cut_across_two_parts_of_one_entry_is_redacted() -> None:
    """Streaming splits text into blocks; a key split over two of them is still one key."""
    from journal_index.text.entry_text import redact_parts

    key = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    text = redact_parts([f"here is the token {key[:14]}", f"{key[14:]} and more words"])
    assert key[:14] not in text and key[14:] not in text
    assert "[REDACTED:" in text and "here is the token" in text and "and more words" in text
    assert redact_parts(["plain words", "more plain words"]) == "plain words\nmore plain words"


# --- precision on real transcripts -------------------------------------------------------------

# Test-runner output, code and prose of real sessions that hold no secret (issue 19): each came
# back with a password or token marker, erasing test names from the index.
NOT_SECRETS = [
    "--- PASS: TestFormatCheckpointOutput_Default (0.00s)",
    "=== RUN   TestExplain\n    --- PASS: TestExplain_MutualExclusivity/manual-commit (0.55s)\nPASS\nok  \tentire/cli",
    "PASS: tests/unit_test.sh",
    "      verdict: pass ? 'pass' : 'fail',",
    '    verdict: anyPassed ? "pass" : "fail",',
    '{"pass": true}',
    "pass: 3, fail: 0, skipped: 1",
    "The request failed with an expired OpenAI token: pi-coding-agent asked for a new one.",
    "I'll skip core changes and do a docs-only pass: I\u2019ll locate the triage guide first.",
    '"code-grader:test-pass": "Tests pass but the refactored code has a subtle race condition",',
    '\tPostHogAPIKey = "phc_development_key"',
    "examples/red-team/suites/llm10-unbounded-consumption.eval.yaml:16:  target: llm",
    "      --insecure-http-auth   Allow plain-HTTP auth (local testing only)",
    # An eval tool's verdicts in TypeScript: fields set from expressions and variables.
    "return {\n  pass: score >= threshold,\n  score,\n}",
    "  pass: !hasErrors,",
    "  pass: score>=0.5,",
    '  pass: verdict === "pass",',
    "  pass: isValid,",
    "  apiKey: opts.apiKey!,",
    "The token: 4096 max, then it is cut",
    # Codex sessions on the same eval tool: modes, local placeholders, CSS, shell, jq, configs.
    "LOCAL_OPENAI_PROXY_API_KEY=local-proxy LOCAL_OPENAI_PROXY_MODEL=gpt-5",
    '"apiKey": "ollama",',
    "permissions:\n  contents: read\n  id-token: write\n",
    "#   GH_TOKEN: ghp_xxx",
    'export GH_TOKEN="github_pat_xxxx"',
    "  --pass: #34d399;\n  --warn: #facc15;",
    'docker run -v "$PWD:/workspace" agentv',
    ': "${APP_PASSWORD:?Set APP_PASSWORD environment variable}"',
    "jq '.results[] | {id: .test_id, pass: .pass, score: .score}'",
    "            Authorization: headers.Authorization ?? null,",
    "     * Used for CLI --api-key flag.",
    '        "x-secret": "!op read \'op://vault/item/secret\'"',
    "Quality rerun is still blocked by expired provider auth: `401 Provided authentication token is expired`.",
    "                apiKey: apiKey!,",
    "- Frontend auth: /frontend/src/pages/auth/AuthProvider.tsx, /frontend/src/pages/auth/api.ts",
    "- Integration tests pass: `TestGetBranchCheckpoints_OnFeatureBranch`",
    "\t// Examples that would pass: `x := 5`, `return err`",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_test_output_code_and_prose_are_no_secrets(text: str) -> None:
    for wrapped, _ in _contexts(text).values():
        assert redact(wrapped) == wrapped


# The same words next to a value that is one: the exceptions above must not open a hole.
STILL_SECRETS = [
    ("DB_PASS: Xy7pq2Lm", "Xy7pq2Lm"),
    ("ADMIN_PASS=4epBQS^087fZ", "4epBQS^087fZ"),
    ("pass: hunter2", "hunter2"),
    ("password: correct-horse-battery-staple", "correct-horse-battery-staple"),
    ("password: pi-coding-agent", "pi-coding-agent"),  # a YAML line: the name opens it
    ("token: write-Ab3x", "write-Ab3x"),  # mixed case and digits: no mode's name
    ("api_key: e3b0c44298fc1c149afbf4c8996fb924", "e3b0c44298fc1c149afbf4c8996fb924"),
    ('{"user": "admin", "pass": "s3cr3t-Pa55"}', "s3cr3t-Pa55"),
    ("curl -u admin:4sqJeiuE!51n3Q https://ci.example.com", "4sqJeiuE!51n3Q"),
    ("tool deploy --token WczkGFiAl2ES7PqFYyuKhGeb --region eu", "WczkGFiAl2ES7PqFYyuKhGeb"),
    ("password: hunter", "hunter"),
    ("password: Xy7+abc", "Xy7+abc"),
    ("password: 40971234", "40971234"),
    ("password=abc==", "abc=="),
    ('passphrase = "correct horse battery staple orange piano"', "correct horse battery staple orange piano"),
    ("The wifi password: 84736251 is on the fridge", "84736251"),
    ("ftp user: bob, ftp pass: s3cr3tX", "s3cr3tX"),
]


@pytest.mark.parametrize("text,secret", STILL_SECRETS)
def test_secrets_beside_the_exceptions_are_still_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text)


def _real_transcript_redactions() -> collections.Counter[str]:
    """Markers in the texts the indexer makes of every shared real Claude Code and Codex
    transcript (which hold no live secret: their source replaced them with `REDACTED`)."""
    from journal_index.formats import claude, codex
    from journal_index.text.entry_text import compose

    fired: collections.Counter[str] = collections.Counter()
    for fmt, folder in ((claude, "claude-code"), (codex, "codex")):
        for path in agent_journals(folder):
            offset = 0
            for line in path.read_bytes().split(b"\n"):
                entry = fmt.parse_line(line, offset)
                offset += len(line) + 1
                if isinstance(entry, Entry):
                    texts = compose(entry, None)
                    fired.update(re.findall(r"\[REDACTED:([a-z0-9_]+)\]", texts.full + "\n" + texts.light))
    return fired


def test_real_transcripts_are_barely_redacted() -> None:
    """False positives on real sessions: before issue 19, 48 markers here (42 `password` for Go
    test names); the goal is at most 10."""
    fired = _real_transcript_redactions()
    print(f"\nredactions on the shared real transcripts: {sum(fired.values())} {dict(fired)}")
    assert sum(fired.values()) <= 10, fired


def test_go_test_names_stay_searchable(tmp_path: Path) -> None:
    """The real transcript with Go test output, indexed: the results that list passing tests are
    found by a test's name, and read back with it."""
    from journal_index.formats import claude
    from tests.agent_homes import cli_json, index_real_home, place_claude

    line = b"--- PASS: TestExplain_MutualExclusivity"
    journal = next(p for p in agent_journals("claude-code") if line in p.read_bytes())
    outputs, offset = set(), 0
    for raw in journal.read_bytes().split(b"\n"):
        entry = claude.parse_line(raw, offset)
        offset += len(raw) + 1
        if isinstance(entry, Entry) and line in raw:
            outputs.add(entry.entry_id)
    assert outputs
    _home, env, _placed = index_real_home(tmp_path, place_claude, [journal])
    found = cli_json(env, "search", "TestExplain_MutualExclusivity", "--scope", "global", "--limit", "50")
    hits = {r["entryId"] for r in found["results"]} & outputs
    assert hits, "no test output was found by the name of a test it ran"
    read = cli_json(env, "read", sorted(hits)[0], "--scope", "global")
    assert "PASS: TestExplain_MutualExclusivity" in json.dumps(read)
    assert "[REDACTED:password]" not in json.dumps(read)


# --- invisible characters inside a secret ------------------------------------------------------

INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202e", "\u2060", "\u2063",
             "\u2066", "\u2069", "\ufeff", "\u00ad", "\u034f", "\ufe0f"]


@pytest.mark.parametrize("char", INVISIBLE, ids=lambda c: f"U+{ord(c):04X}")
def test_an_invisible_character_inside_a_secret_hides_nothing(char: str) -> None:
    """Every corpus secret with an invisible character in its middle (and one in a key name) is
    redacted whole: neither half survives, and the span covers the character."""
    from journal_index.redact import secret_spans

    for case in POSITIVES:
        secret = case["secret"]
        if "\n" in secret:
            continue
        mid = len(secret) // 2
        evasive = secret[:mid] + char + secret[mid:]
        text = case["text"].replace(secret, evasive)
        out = redact(text)
        assert secret[:mid] not in out and secret[mid:] not in out, (case["id"], out)
        at = text.index(evasive)
        assert any(s <= at and at + len(evasive) <= e for s, e, _ in secret_spans(text)), case["id"]
    assert "[REDACTED:password]" in redact(f"pass{char}word=BRsk29!64fY5")


def test_an_invisible_character_between_words_still_separates_them() -> None:
    assert redact("see\u200bAKIATRXHZA6ERHSRXWZR") == "see\u200b[REDACTED:aws_access_key_id]"
    assert redact("plain\u200btext\u202ewith\u00adinvisibles") == "plain\u200btext\u202ewith\u00adinvisibles"


def test_an_evasive_key_is_no_term_and_is_printed_nowhere(tmp_path: Path) -> None:
    """A pi journal whose messages hold an AWS key and a GitHub token with zero-width and bidi
    characters inside: indexed, searched and read through the CLI."""
    import subprocess
    import sys

    from tests.helpers import vocabulary

    aws = ("AKIATRXHZA6E", "RHSRXWZQ")
    ghp = ("ghp_Zq8Lw3Rt6Yp1Mx4N", "v7Kb2Hd5Gf9Js0Ac3Ee6")
    folder = tmp_path / "sessions" / "--home-dev-app--"
    folder.mkdir(parents=True)
    base = {"parentId": None, "timestamp": "2026-10-20T10:00:00.000Z"}
    lines = [
        {"type": "session", "version": 3, "id": "sess-zw", "timestamp": "2026-10-20T09:59:00.000Z",
         "cwd": "/home/dev/app"},
        {"type": "message", "id": "u1", **base, "message": {"role": "user", "content": [
            {"type": "text", "text": f"my key is {aws[0]}\u200b{aws[1]} please check lyrebird"}]}},
        {"type": "message", "id": "u2", **base, "message": {"role": "user", "content": [
            {"type": "text", "text": f"token {ghp[0]}\u202e\u2060{ghp[1]} for lyrebird"}]}},
    ]
    (folder / "s.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    db = tmp_path / "index.db"

    def run(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "journal_index", "--db", str(db), "--sessions",
                               str(tmp_path / "sessions"), *args], capture_output=True, timeout=60, cwd="/")
        assert done.returncode == 0, done.stderr
        return (done.stdout + done.stderr).decode("utf-8", "replace")

    printed = [run("index"), run("search", "lyrebird", "--scope", "global"),
               run("search", "lyrebird", "--scope", "global", "--json"), run("read", "u1"), run("read", "u2", "--json"),
               run("redact", str(folder / "s.jsonl"))]
    everything = "\n".join(printed)
    assert everything.count("[REDACTED:aws_access_key_id]") >= 2 and "[REDACTED:github_token]" in everything
    for piece in (*aws, *ghp):
        assert piece not in everything
    store = open_store(str(db))
    try:
        terms = vocabulary(store)
    finally:
        store.close()
    assert "lyrebird" in terms
    for piece in (*aws, *ghp):
        assert not {t for t in terms if piece.lower()[:8] in t or t in piece.lower() and len(t) >= 6}, piece
