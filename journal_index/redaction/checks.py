"""Python-side checks, run only on matches: whether a candidate is a real secret rather than a
placeholder, code, prose or a provider id, and which spans of it to redact."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final

from journal_index.redaction.groups import Match, group_text, slice_of, text_of, value_span
from journal_index.redaction.rules import Rule

# Values that stand for a secret without being one.
_PLACEHOLDERS: Final = frozenset(
    """null none nil true false undefined yes no on off empty changeme change_me change-me changeit
    placeholder redacted secret secrets password passwd pass pwd token tokens key apikey api_key value
    example sample dummy string str int integer number bool boolean any object bytes optional
    required secretstr env default na n/a tbd todo fixme xxx mask masked hidden omitted""".split()
)
# Words that follow "password:" / "--token" in prose rather than in a config.
_PROSE: Final = frozenset(
    """a an the this that these those is are was were be been being it its to of in on at by for from
    with without and or but not no if then than when where which who how what why will would should
    can could must may might do does did done has have had here there now also just only please
    again still yet so as into onto via per like field fields flag flags option options argument
    arguments parameter parameters param header headers value values variable variables setting
    settings prompt prompts manager managers reset change changed expired expires invalid missing
    required needed wrong incorrect correct length policy rules rule based auth authentication
    login logout user users see below above later first instead set get use used using enter
    entered type typed stored storage hash hashed hashing field configured configuration
    environment provided given supplied""".split()
)
# Names that end in a secret word but hold no secret (the shell's working directory, paging).
_NAME_DENY: Final = frozenset(
    "pwd oldpwd page_token next_page_token nextpagetoken pagetoken next_token nexttoken "
    "continuation_token continuationtoken sync_token synctoken cursor_token resumption_token "
    "max_token min_token".split()
)
# Message, tool-call and request ids of LLM providers, never secrets.
_ID_PREFIXES: Final = frozenset(
    "msg toolu srvtoolu call fc req resp rs run thread asst file batch msgbatch ft org proj user evt "
    "item step vs ws sess conv chatcmpl cmpl ctc ci img tool gen job task".split()
)
_CODE_WORDS: Final = frozenset(
    "await async new yield typeof this self lambda function require import return not".split()
)
_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*_[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASS|PASSWORD|PWD|AUTH|CREDENTIALS)\Z")
_NUMBERS = re.compile(r"[0-9]+(?:\.[0-9]+)+\Z")
_ALNUM = re.compile(r"[^\W_]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_.]*\Z")
_DOTTED = re.compile(r"[A-Za-z_]+(?:\.[A-Za-z_]+)+\Z")  # obj.attr; tokens like s.Ab3x carry digits
_WORD = re.compile(r"[A-Za-z]+\Z")
# Words joined by hyphens or underscores, no digits: a name (`pi-coding-agent`), not a random value.
_SLUG = re.compile(r"[A-Za-z]+(?:['’_-][A-Za-z]+)*\Z")
# A quoted value of six words or more: a message or a description (`401 Provided authentication
# token is expired`), not a passphrase.
_SENTENCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’,.;:!?-]*(?: [A-Za-z0-9][A-Za-z0-9'’,.;:!?-]*){5,}\Z")
# A name of this shape that says what it stands for (`phc_development_key`, `dummy-token`).
_DESCRIPTIVE_PARTS: Final = frozenset(
    "key keys token secret password passwd pass pwd apikey credential credentials".split()
)
_X_TAIL = re.compile(r"[_-]x{3,}\Z|x{4,}\Z")
_CSS_COLOR = re.compile(r"#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})\Z")
# A value of a few short lower-case words: a name or a mode (`local-proxy`, `ollama`, `write`),
# never an API key or a token, though it may be a password.
_LOWER_WORDS = re.compile(r"[a-z]{1,12}(?:[-_][a-z]{1,12}){0,3}\Z")
# A file path with an extension (`/frontend/src/pages/auth/AuthProvider.tsx`): no base64 has a dot.
_FILE_PATH = re.compile(r"(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w-]+\.[A-Za-z]{1,5}\Z")
_LINE_LEAD = re.compile(r"""[\s\-*#>+|0-9."'\\]*(?:export\s+|set\s+|setx\s+|env\s+)?\Z""")


def _is_placeholder(v: str) -> bool:
    low = v.lower()
    if low in _PLACEHOLDERS or "redacted" in low or "EXAMPLE" in v or "..." in v or "…" in v:
        return True
    if not _ALNUM.search(v):
        return True  # `***`, `}`, `"`: punctuation closing the surrounding code
    if _NUMBERS.match(v):
        return True  # 1.3.6.1.5.5.7.3.1, 10.0.0.1, 2.4.1: an OID, address or version
    first = v[0]
    if first in "$%<" or v.startswith(("{{", "@{", "#{")):
        return True  # $TOKEN ${API_KEY} $(cmd) %PASS% %(password)s <your-key>
    if low.startswith(("your", "<your", "my-", "my_")) and not any(c.isdigit() for c in v):
        return True
    if "xxxxxx" in low or "******" in v or "••••" in v:
        return True
    if _SLUG.match(v) and ("_" in v or "-" in v) and _DESCRIPTIVE_PARTS.intersection(re.split(r"['’_-]", low)):
        return True  # `phc_development_key`, `your-api-token`: a description of a secret
    if _X_TAIL.search(low) or _CSS_COLOR.match(v):
        return True  # `ghp_xxx`, `github_pat_xxxx`; `--pass: #34d399` is a colour
    if "op://" in low or (first == "!" and " " in v):
        return True  # a 1Password reference, `!op read …`: a command that fetches the secret
    return len(set(v)) <= 2 and len(v) >= 3  # xxxx, ****, ...., 0000


def _secret_like(v: str) -> bool:
    """Strong enough to be a credential rather than a mode or a word (for weak names like auth)."""
    if len(v) < 8:
        return False
    return any(c.isdigit() for c in v) or not v.replace("_", "").replace("-", "").isalpha()


def _at_line_start(before: str, at_text_start: bool) -> bool:
    """Whether only indentation, list or diff markers precede a name on its line.

    ``before`` is the text just before the name; JSON-escaped "\\n" counts as a line break.
    """
    i, j = before.rfind("\n"), before.rfind("\\n")
    start = max(i + 1 if i >= 0 else -1, j + 2 if j >= 0 else -1)
    if start < 0:
        if not at_text_start:
            return False
        start = 0
    return _LINE_LEAD.match(before[start:]) is not None



_NAME_REV = re.compile(r"[A-Za-z0-9_.-]{0,80}")  # matched on the reversed text before a key word


def _name_before(head: str) -> str:
    """The key-name characters that end ``head`` (`NEXT_PAGE_` before `TOKEN`)."""
    m = _NAME_REV.match(head[::-1])
    return head[len(head) - m.end() :] if m else ""


_SECRET_WORD = re.compile(r"pass|pwd|secret|token|key|auth|cred")
# Key words whose full name may be harmless (`PWD`, `next_page_token`): only these look back.
_DENY_WORDS: Final = frozenset({"token", "pwd"})


def _kv_ok(m: Match, weak: bool) -> bool:
    found = value_span(m)
    if found is None:
        return False
    name, s, e = found
    if name == "pem":
        return True
    v = slice_of(m, s, e)
    if _is_placeholder(v) or _ENV_NAME.match(v) or _FILE_PATH.match(v):
        return False  # ... or `apiKey: "OPENAI_API_KEY"`, which names an environment variable
    if name != "v4" and v[0].isspace():
        return False  # `grep 'password=' dir`: the quote closes the name, it opens no value
    key = group_text(m, "key")
    password_name = key is not None and re.search(r"(?i:pass|pwd)", key) is not None
    if name != "v4" and _SENTENCE.match(v) and (not password_name or v.count(" ") >= 7):
        # `"test-pass": "Tests pass but the code has a race"`; a passphrase of six or seven
        # words (diceware) is one.
        return False
    sep = group_text(m, "sep")
    if sep == "==" and not _secret_like(v):
        return False  # `if token == "def":` compares with a literal of the program
    ks = m.start("key") if key is not None else -1
    if key is not None and _not_a_password_name(m, key, ks, sep, v, name):
        return False
    if key is not None and _LOWER_WORDS.match(v) and not password_name:
        return False  # `API_KEY=local-proxy`, `id-token: write`
    if key is not None and slice_of(m, ks - 82, ks).endswith("${" + _name_before(slice_of(m, ks - 80, ks))):
        return False  # `${APP_PASSWORD:?Set it}`, `${TOKEN:-none}`: a shell expansion, its message or default
    if key is not None and key.strip("_.-$ \t'\"\n").lower() in _DENY_WORDS:
        # Judge the whole name (`NEXT_PAGE_TOKEN`), not only the matched word.
        full = (_name_before(slice_of(m, ks - 80, ks)) + key).lower()
        if full.strip().lstrip("_.-$") in _NAME_DENY:
            return False
    if name == "v4":
        # A bare value may be code rather than a literal: f(x), obj.attr, a variable named like
        # the key, a type annotation, or the next key of a run (`token: token:`).
        low = v.lower()
        if slice_of(m, e, e + 1) in ("(", "[") or _DOTTED.match(v.rstrip("!?")) or low in _CODE_WORDS:
            return False
        if _IDENT.match(v.rstrip(":=!?")) and _SECRET_WORD.search(low):
            return False
        if (v[0] in "!." and _IDENT.match(v[1:])) or _COMPARISON.match(v) or (
                _IDENT.match(v) and _OPERATOR_AFTER.match(slice_of(m, e, e + 6))):
            return False  # `ok: !hasErrors`, `pass: .pass` (jq), `pass: score >= min`: an expression
        ss, se = m.span("sep") if sep is not None else (-1, -1)
        if ss > 0 and _IDENT.match(v) and slice_of(m, ss - 1, ss) == " " and slice_of(m, se, se + 1) == " ":
            return False  # `apiKey = model ? …`: spaced assignment of a variable, as in code
        if sep == ":" and (_SLUG.match(v) or (v.isdigit() and not password_name)):
            nxt = slice_of(m, e, e + 2)
            if nxt[:1] == " " and nxt[1:].isalpha():
                return False  # `secret: handled by the agent`: a sentence goes on after the word
            # "password: hunter" is YAML only when the name opens the line; in a sentence it is prose.
            if low in _PROSE or ks < 0:
                return False
            head = slice_of(m, ks - 200, ks)
            before = head[: len(head) - len(_name_before(head))]
            if not _at_line_start(before, ks <= 200):
                return False
    if weak:
        return _secret_like(v)
    return True


# An expression rather than a literal: a comparison inside the value, or an operator after it.
_COMPARISON = re.compile(r"[A-Za-z_][\w.]*(?:[<>]=?|[=!]==?)[\w.\"'-]")
_OPERATOR_AFTER = re.compile(r"[ \t]+(?:[<>]=?|[=!]==?|&&|\|\||\?\??|[+*/%])[ \t]")
_TERNARY_BEFORE = re.compile(r"\?[ \t]*\\{0,4}\Z")
_VERB_BEFORE = re.compile(r"[A-Za-z]{2,} \Z")
_TALLY = re.compile(r"[0-9]+(?:/[0-9]+|%)?\Z")


def _not_a_password_name(m: Match, key: str, ks: int, sep: str | None, v: str, spelling: str) -> bool:
    """The bare word ``pass`` where it names no password: a test runner's verdict, a tally or a
    branch.

    Go, automake and TAP print ``--- PASS: TestName (0.00s)`` / ``PASS: name``: an upper-case
    PASS standing alone (not ``DB_PASS``) before a colon. ``pass: 3, fail: 0`` counts tests.
    ``ok ? 'pass' : 'fail'`` is a conditional expression, the quoted word one of its branches.
    """
    word = key.strip("_.- \t'\"\\\n")
    if word.lower() != "pass":
        return False
    at = key.find(word)
    quoted = at > 0 and key[at - 1] in "'\""
    before = slice_of(m, ks - 40, ks + at)
    alone = not before or not (before[-1].isalnum() or before[-1] == "_")
    if not quoted and _VERB_BEFORE.search(before) and (spelling == "v3" or not any(c.isdigit() for c in v)):
        # `tests pass: TestName`, ``would pass: `x := 5` ``: the verb, in prose (`ftp pass: s3cr3t`
        # still names one)
        return True
    if alone and sep == ":" and (word == "PASS" or _TALLY.match(v) or (word == "pass" and _IDENT.match(v))):
        return True  # (`pass: isValid`, `pass: ok`: a verdict's field set from a variable)
    return quoted and _TERNARY_BEFORE.search(before[:-1]) is not None


def _check_kv(m: Match) -> bool:
    return _kv_ok(m, weak=False)


def _check_weak(m: Match) -> bool:
    return _kv_ok(m, weak=True)


def _check_kvtoken(m: Match) -> bool:
    found = value_span(m)
    return found is not None and not _is_placeholder(slice_of(m, found[1], found[2]))


def _check_flag(m: Match) -> bool:
    found = value_span(m)
    if found is None:
        return False
    v = slice_of(m, found[1], found[2])
    if _is_placeholder(v):
        return False
    # "use the --token flag", "pass --password when asked": prose, not a command line; and a
    # help listing (`--insecure-http-auth   Allow plain-HTTP auth`): a sentence goes on.
    word = v.rstrip(".,;:!?")  # `Used for CLI --api-key flag.`
    if found[0] == "v4" and _WORD.match(word):
        nxt = slice_of(m, found[2], found[2] + 2)
        return not (word.lower() in _PROSE or word != v or (nxt[:1] == " " and nxt[1:].isalpha()))
    return True


def _check_userpass(m: Match) -> bool:
    v = group_text(m, "v") or ""
    return not (v.isdigit() or _is_placeholder(v))  # -u 1000:1000 is uid:gid


def _check_query(m: Match) -> bool:
    v = group_text(m, "v4") or ""
    if _is_placeholder(v):
        return False
    if (group_text(m, "key") or "").lower() in ("key", "signature", "auth"):
        return _secret_like(v) and len(v) >= 16
    return True


def _check_authz(m: Match) -> bool:
    v = group_text(m, "v4") or "x"
    if group_text(m, "scheme") is None and _DOTTED.match(v):
        return False  # `Authorization: headers.Authorization ?? null`: code
    return not _is_placeholder(v)


def _check_bearer(m: Match) -> bool:
    v = group_text(m, "v") or ""
    return not _is_placeholder(v) and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def _check_token(m: Match) -> bool:
    v = text_of(m.group(0))
    # Documentation shapes: sk-xxxxxxxx…, AKIAIOSFODNN7EXAMPLE.
    return "EXAMPLE" not in v and "xxxxxx" not in v.lower() and len(set(v)) > 6


def _check_generic(m: Match) -> bool:
    s, e = m.span("v")
    v = slice_of(m, s, e)
    prefix, _, tail = v.partition("_")
    if prefix in _ID_PREFIXES:
        return False
    if any(c in "+/=_.-" for c in slice_of(m, s - 1, s) + slice_of(m, e, e + 1)):
        return False  # a fragment of a longer base64/base64url blob
    upper = sum(c.isupper() for c in tail)
    lower = sum(c.islower() for c in tail)
    digits = sum(c.isdigit() for c in tail)
    return upper >= 2 and lower >= 2 and digits >= 2





CHECKS: Final[dict[str, Callable[[Match], bool]]] = {
    "token": _check_token,
    "kv": _check_kv,
    "weak": _check_weak,
    "kvtoken": _check_kvtoken,
    "flag": _check_flag,
    "userpass": _check_userpass,
    "query": _check_query,
    "authz": _check_authz,
    "bearer": _check_bearer,
    "generic": _check_generic,
}


def accept(rule: Rule, m: Match) -> tuple[str, list[tuple[int, int]]] | None:
    if not CHECKS[rule.check](m):
        return None
    kind = rule.kind
    value = value_span(m)
    if value is None:
        return kind, [m.span()]
    if value[0] == "pem":
        kind = "private_key"
    secret = [(value[1], value[2])]
    if value[0] == "v" and "v2" in m.re.groupindex and m.start("v2") >= 0:
        secret.append(m.span("v2"))  # sentry_dsn: public and secret key
    if rule.kind == "authorization_header":
        scheme = (group_text(m, "scheme") or "").lower()
        kind = {"bearer": "bearer_token", "basic": "basic_auth"}.get(scheme, kind)
    return kind, secret

