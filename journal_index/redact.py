"""Secret redaction: one linear-time pass over a table of named patterns.

Every hit becomes ``[REDACTED:<kind>]`` where ``kind`` names the pattern that fired, never
anything taken from the secret. For ``name = value`` shapes only the value is replaced, so the
name stays searchable.

Engine: RE2 (``google-re2``), chosen by measurement (``benchmarks/redact_bench.py``). It runs
in time linear in the input whatever the pattern or the text; one alternation of this table in
Python's ``re`` (or ``regex``) crawls on ordinary text and backtracks without end on hostile
lines. RE2 finds where a match starts, and an anchored RE2 ``Set`` tells which rules match
there; Python's ``re``, anchored at that start, then gives the winner's groups (see ``_Table``).
RE2 runs on the UTF-8 bytes of the text in Latin-1 mode: its wrapper re-encodes a ``str`` on
every call, which would make a text with many hits quadratic. Every pattern is ASCII and every
secret span starts and ends next to an ASCII byte, so spans never split a multi-byte character.

Patterns may not use look-around or back-references (RE2 has neither). Whatever a pattern
cannot say is checked in Python on the (rare) match: placeholders, code, prose, provider ids.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import re2


@dataclass(frozen=True, slots=True)
class Hit:
    kind: str
    start: int  # in the output text: the span of the ``[REDACTED:kind]`` marker
    end: int


# ---------------------------------------------------------------------------------------------
# Pattern table
# ---------------------------------------------------------------------------------------------

# A rule's regex marks the secret with groups named v, v2, v3, v4 (alternative spellings: double
# quoted, single quoted, backticked, bare) or pem; without such a group the whole match is secret.
# ``check`` names the Python-side validation run on a match (see _CHECKS).


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    regex: str
    check: str = "token"
    # kv-shaped rules: on rejection, the value is still scanned for prefixed tokens.
    rescan: bool = False


# PEM private keys, with real newlines or the literal "\n" escapes of a JSON string. With an END
# marker the block is taken whole; without one (a truncated `head key.pem`) the body is taken as
# far as it looks like base64. Bodies never hold "--", which ends the first branch at END.
_PEM_HEAD = r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
_PEM_END = r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
PEM = _PEM_HEAD + r"(?:(?:[^-]|-[^-])*" + _PEM_END + r"|(?:[A-Za-z0-9+/=:,. \t\r\n\\]|-[A-Za-z0-9 \t+/])*)"

# Quotes may be JSON-escaped once or more (tool arguments are JSON inside JSON).
_QUOTE = r"""\\{0,4}["']"""
# The value of a name=value pair. Ordered: a PEM block first, then quoted forms (which may hold
# spaces), then a bare word. Quoted values stop at a backslash so `\"` and `\n` end them.
_VALUE = (
    r"(?:(?:" + _QUOTE + r")?(?P<pem>" + PEM + r")"
    r"|\\{0,4}\"(?P<v>[^\"\\\r\n]+)"
    r"|\\{0,4}'(?P<v2>[^'\\\r\n]+)"
    r"|`(?P<v3>[^`\r\n]+)"
    r"|(?P<v4>[^ \t\r\n\f\v\"'`\\,;&(){}\[\]]+))"
)
# Between a key name and its value: an optional closing quote or bracket, a Python/TS type
# annotation, then one of = : := => ==.
_SEP = (
    r"(?:" + _QUOTE + r")?\]?[ \t]*"
    r"(?::[ \t]*(?:str|string|String|SecretStr|Optional\[str\]|str \| None)[ \t]*)?"
    r"(?P<sep>=>|:=|==|=|:)[ \t]*"
)
# Short key words must start a name segment (`DB_PASS`, not `bypass`); RE2 has no look-behind,
# so the guard consumes the character before.
_SEG = r"(?:(?m:^)|[^A-Za-z]|\\[nrt])"
# A command-line flag starts a word: `curl -u`, not `llm10-unbounded` (a file name with "-u" in it).
_FLAG_START = r"(?:(?m:^)|[ \t'\"=(]|\\[nrt])"


def _kv(kind: str, key: str, check: str = "kv") -> Rule:
    return Rule(kind, r"(?P<key>(?i:" + key + r"))" + _SEP + _VALUE, check, rescan=True)


def _tok(kind: str, regex: str, check: str = "token") -> Rule:
    if regex.startswith(r"\b") and "(?P<" not in regex:
        # Inside a JSON string a token often follows an escape (`…\nghp_…`), where \b fails.
        regex = r"(?:\\[nrt]|\b)(?P<v>" + regex[2:] + ")"
    return Rule(kind, regex, check)


_FLAG_VALUE = (
    r"""(?:"(?P<v>[^"\r\n]+)|'(?P<v2>[^'\r\n]+)"""
    r"""|(?P<v4>[^ \t\r\n\f\v"'`\\;&|<>()-][^ \t\r\n\f\v"'`\\;&|<>()]*))"""
)
# A command line on one line, up to the flag (no pipe or separator in between).
_CMDLINE = r"[^\n|;&]*?[ \t]"

RULES: Final[tuple[Rule, ...]] = (
    # Multi-line and structural shapes first: they start earliest, and on a tie the first wins.
    _tok("private_key", PEM),
    # A YAML `data:`/`stringData:` line (accepted only inside a `kind: Secret` document), with
    # real or JSON-escaped newlines. The block of lines under it is found in Python (_k8s_block):
    # matched here, every `data:` line nested in a block would rescan the rest of it.
    Rule("kubernetes_secret_data", r"(?m:^)[ \t]*(?:- )?(?:data|stringData):[ \t]*\r?\n", "k8s"),
    Rule("kubernetes_secret_data", r"(?:(?m:^)|\\n)[ \t]*(?:- )?(?:data|stringData):[ \t]*\\n", "k8s"),
    Rule("kubernetes_secret_data", r"\\{0,4}\"(?:data|stringData)\\{0,4}\"[ \t]*:[ \t]*\{(?P<blk>[^{}]*)\}", "k8s"),
    _tok("docker_config_auth", r"\\{0,4}\"auth\\{0,4}\"[ \t]*:[ \t]*\\{0,4}\"(?P<v>[A-Za-z0-9+/]{8,}={0,2})"),
    _tok("azure_connection_string", r"(?i:AccountKey|SharedAccessKey)=(?P<v>[A-Za-z0-9+/]{20,}={0,2})"),
    _tok("azure_sas_token", r"[?&;](?:sig|SharedAccessSignature)=(?P<v>[A-Za-z0-9%+/=_-]{16,})"),
    Rule(
        "url_query_secret",
        r"[?&](?P<key>(?i:signature|x-amz-signature|x-amz-security-token|"
        r"x-goog-signature|key|api_?key|apikey|access_?token|token|client_secret|password|secret|"
        r"private_token|auth))=(?P<v4>[^& \t\r\n\f\v#\"'<>\\]+)",
        "query",
        rescan=True,
    ),
    _tok("sentry_dsn", r"://(?P<v>[0-9a-f]{32})(?::(?P<v2>[0-9a-f]{32}))?@[A-Za-z0-9.-]*sentry"),
    Rule("url_password", r"://[^ \t\r\n\f\v:/@\"'<>\\\[]*:(?P<v4>[^ \t\r\n\f\v/@\"'<>\\]+)@", "kv", rescan=True),
    Rule(
        "authorization_header",
        r"(?i:(?:proxy-)?authorization)(?:"
        + _QUOTE
        + r")?[ \t]*[:=][ \t]*(?:"
        + _QUOTE
        + r")?(?:(?P<scheme>[A-Za-z][A-Za-z0-9-]{1,30})[ \t]+)?(?P<v4>[A-Za-z0-9._~+/=:-]{8,})",
        "authz",
    ),
    _tok("bearer_token", r"\b(?i:bearer)[ \t]+(?P<v>[A-Za-z0-9._~+/-]{16,}=*)", "bearer"),
    _tok(
        "netrc_password",
        r"\bmachine(?:[ \t\r\n]|\\n)+[^ \t\r\n\f\v]+(?:(?:[ \t\r\n]|\\n)+login(?:[ \t\r\n]|\\n)+"
        r"[^ \t\r\n\f\v\\]+)?(?:[ \t\r\n]|\\n)+password(?:[ \t\r\n]|\\n)+(?P<v>[^ \t\r\n\f\v\\]+)",
        "kvtoken",
    ),
    # Command lines: passwords given as flags.
    _tok(
        "mysql_password",
        r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mysqlsh|mariadb|"
        r"mariadb-dump)\b" + _CMDLINE + r"-p(?:'(?P<v2>[^'\r\n]+)|\"(?P<v>[^\"\r\n]+)|(?P<v4>[^ \t\r\n\f\v'\"]+))",
        "kvtoken",
    ),
    _tok("sshpass_password", r"\bsshpass\b" + _CMDLINE + r"-p[ \t]*" + _FLAG_VALUE, "kvtoken"),
    _tok("redis_password", r"\bredis-cli\b" + _CMDLINE + r"(?:-a|--pass)[ \t]+" + _FLAG_VALUE, "kvtoken"),
    _tok(
        "registry_password",
        r"\b(?:docker|podman|nerdctl|buildah|skopeo|helm|oras)(?:[ \t]+registry)?"
        r"[ \t]+login\b" + _CMDLINE + r"-p[ \t]+" + _FLAG_VALUE,
        "kvtoken",
    ),
    _tok(
        "basic_auth_credentials",
        _FLAG_START + r"(?:-u|--user|--proxy-user)[ \t=]*[\"']?[^ \t\r\n\f\v:\"'$\[]+:"
        r"(?P<v>[^ \t\r\n\f\v\"']+)",
        "userpass",
    ),
    Rule(
        "secret_flag",
        r"(?:(?m:^)|[ \t'\"])--?(?:[A-Za-z0-9]+-)*(?P<key>(?i:password|passwd|pass|passphrase|"
        r"token|secret|api-?key|access-key|secret-key|private-key|client-secret|auth))[ \t]+" + _FLAG_VALUE,
        "flag",
        rescan=True,
    ),
    # Provider tokens with a recognisable shape. Placed before the name=value rules so that, on a
    # tie, the specific kind wins; a name=value match starting earlier takes the value anyway.
    _tok("anthropic_api_key", r"\bsk-ant-(?:api|admin|oat|ort|sid)[0-9]{2}-[A-Za-z0-9_-]{20,}"),
    _tok("openai_api_key", r"\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}"),
    _tok("openai_api_key", r"\bsk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"),
    _tok("stripe_secret_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    _tok("stripe_webhook_secret", r"\bwhsec_[A-Za-z0-9+/=]{24,}"),
    _tok("sk_api_key", r"\bsk-[A-Za-z0-9_-]{32,}"),
    _tok("aws_access_key_id", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    _tok("aws_session_token", r"\b(?:FwoGZXIvYXdz|IQoJb3JpZ2lu|IQoDYXdz)[A-Za-z0-9+/=]{60,}"),
    _tok("github_token", r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    _tok("github_fine_grained_pat", r"\bgithub_pat_[A-Za-z0-9_]{50,}"),
    _tok("gitlab_token", r"\bgl(?:pat|ptt|dt|rt|cbt|soat|oas|imt|ft|ffct|agent|ws)-[A-Za-z0-9_-]{20,}"),
    _tok("gitlab_runner_token", r"\bGR1348941[A-Za-z0-9_-]{20,}"),
    _tok("slack_token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}"),
    _tok("slack_app_token", r"\bxapp-[0-9]-[A-Za-z0-9-]{10,}"),
    _tok("slack_webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9/_+-]{20,})"),
    _tok("discord_webhook", r"discord(?:app)?\.com/api/webhooks/[0-9]{5,30}/(?P<v>[A-Za-z0-9_-]{30,})"),
    _tok("discord_bot_token", r"\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}"),
    _tok("telegram_bot_token", r"(?:\\[nrt]|\b|bot)(?P<v>[0-9]{8,10}:AA[A-Za-z0-9_-]{30,})"),
    _tok("google_api_key", r"\bAIza[A-Za-z0-9_-]{35}"),
    _tok("google_oauth_client_secret", r"\bGOCSPX-[A-Za-z0-9_-]{24,}"),
    _tok("google_oauth_token", r"\bya29\.[A-Za-z0-9_-]{20,}"),
    _tok("google_oauth_token", r"\b1//0[A-Za-z0-9_-]{40,}"),
    _tok("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}"),
    _tok("npm_token", r"\bnpm_[A-Za-z0-9]{36}"),
    _tok("pypi_token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    _tok("twilio_api_key", r"\bSK[0-9a-fA-F]{32}\b"),
    _tok("sendgrid_api_key", r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
    _tok("mailgun_api_key", r"\bkey-[0-9a-f]{32}\b"),
    _tok("mailchimp_api_key", r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),
    _tok("azure_ad_client_secret", r"\b[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}"),
    _tok("databricks_token", r"\bdapi[0-9a-f]{32}(?:-[0-9])?"),
    _tok("digitalocean_token", r"\bdo[por]_v1_[0-9a-f]{64}"),
    _tok("heroku_api_key", r"\bHRKU-[A-Za-z0-9_-]{20,}"),
    _tok("vault_token", r"\bhv[sbr]\.[A-Za-z0-9_-]{20,}"),
    _tok("doppler_token", r"\bdp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{20,}"),
    _tok("pulumi_token", r"\bpul-[0-9a-f]{40}"),
    _tok("linear_api_key", r"\blin_(?:api|oauth)_[A-Za-z0-9]{32,}"),
    _tok("sentry_token", r"\bsntry[su]_[A-Za-z0-9+/=_-]{30,}"),
    _tok("shopify_token", r"\bshp(?:at|ca|pa|ss)_[0-9a-fA-F]{32}"),
    _tok("square_token", r"\b(?:EAAA[A-Za-z0-9_-]{60,}|sq0(?:atp|csp|idp)-[A-Za-z0-9_-]{20,})"),
    _tok("cloudflare_origin_ca_key", r"\bv1\.0-[0-9a-f]{24}-[0-9a-f]{146}"),
    _tok("grafana_token", r"\b(?:glc_[A-Za-z0-9+/=]{32,}|glsa_[A-Za-z0-9]{32}_[0-9a-fA-F]{8})"),
    _tok("age_secret_key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}"),
    _tok("jwt", r"\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
    # name = value: the value goes, the name stays.
    Rule(
        "xml_secret",
        r"<(?P<key>[A-Za-z_.:-]{0,40}(?i:password|passwd|secret|token|api_?key|access_?key|"
        r"private_?key))>(?P<v>[^<\r\n]+)</",
        "kv",
        rescan=True,
    ),
    _kv("aws_secret_access_key", r"aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key"),
    _kv("aws_session_token", r"aws_?session_?token|x-amz-security-token"),
    _kv("client_secret", r"client[_.-]?secret"),
    _kv("private_key", r"private[_.-]?key"),
    _kv(
        "api_key",
        r"(?:api|access|secret|signing|encryption|encrypt|master|account|app|application|auth|"
        r"consumer|license|service|storage|shared[_.-]?access|subscription|webhook|deploy|admin|jwt|hmac)"
        r"[_.-]?key",
    ),
    _kv("password", r"pass(?:word|wd|phrase)|" + _SEG + r"(?:pass|pwd)"),
    _kv("token", r"token"),
    _kv("secret", r"secret"),
    _kv("auth", _SEG + r"auth", "weak"),
    _kv("credentials", r"credentials?|" + _SEG + r"creds?", "weak"),
    # Last resort for unknown providers: a lowercase prefix, an underscore and a long random tail
    # (`prj_…`), checked in Python for mixed case and digits and against provider message ids.
    _tok("prefixed_token", r"\b[a-z][a-z0-9]{1,11}_[A-Za-z0-9]{32,}", "generic"),
)

KINDS: Final[frozenset[str]] = frozenset(r.kind for r in RULES) | {"bearer_token", "basic_auth"}

# ---------------------------------------------------------------------------------------------
# Python-side checks (run only on matches)
# ---------------------------------------------------------------------------------------------

_MARK = "[REDACTED:"
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


Match = re.Match[bytes]  # on the UTF-8 bytes of the text


def _txt(x: str | bytes | None) -> str:
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    try:
        return x.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return x.decode("utf-8", "replace")  # a context window cut inside a character


def _slice(m: Match, s: int, e: int) -> str:
    return _txt(m.string[max(0, s) : e])


_VALUE_NAMES: Final = frozenset({"pem", "v", "v2", "v3", "v4"})


def _value(m: Match) -> tuple[str, int, int] | None:
    """Which value spelling matched, and its span.

    The value group closes last in every rule, so ``lastgroup`` names it, except in sentry_dsn
    where an optional second key (v2) follows the first (v).
    """
    name = m.lastgroup
    if name not in _VALUE_NAMES:
        return None
    if name == "v2" and "v" in m.re.groupindex and m.start("v") >= 0:
        name = "v"
    s, e = m.span(name)
    return name, s, e


def _group(m: Match, name: str) -> str | None:
    if name not in m.re.groupindex:
        return None
    x = m.group(name)
    return None if x is None else _txt(x)


_NAME_REV = re.compile(r"[A-Za-z0-9_.-]{0,80}")  # matched on the reversed text before a key word


def _name_before(head: str) -> str:
    """The key-name characters that end ``head`` (`NEXT_PAGE_` before `TOKEN`)."""
    m = _NAME_REV.match(head[::-1])
    return head[len(head) - m.end() :] if m else ""


_SECRET_WORD = re.compile(r"pass|pwd|secret|token|key|auth|cred")
# Key words whose full name may be harmless (`PWD`, `next_page_token`): only these look back.
_DENY_WORDS: Final = frozenset({"token", "pwd"})


def _kv_ok(m: Match, weak: bool) -> bool:
    found = _value(m)
    if found is None:
        return False
    name, s, e = found
    if name == "pem":
        return True
    v = _slice(m, s, e)
    if _is_placeholder(v) or _ENV_NAME.match(v) or _FILE_PATH.match(v):
        return False  # ... or `apiKey: "OPENAI_API_KEY"`, which names an environment variable
    if name != "v4" and v[0].isspace():
        return False  # `grep 'password=' dir`: the quote closes the name, it opens no value
    key = _group(m, "key")
    password_name = key is not None and re.search(r"(?i:pass|pwd)", key) is not None
    if name != "v4" and _SENTENCE.match(v) and (not password_name or v.count(" ") >= 7):
        # `"test-pass": "Tests pass but the code has a race"`; a passphrase of six or seven
        # words (diceware) is one.
        return False
    sep = _group(m, "sep")
    if sep == "==" and not _secret_like(v):
        return False  # `if token == "def":` compares with a literal of the program
    ks = m.start("key") if key is not None else -1
    if key is not None and _not_a_password_name(m, key, ks, sep, v, name):
        return False
    if key is not None and _LOWER_WORDS.match(v) and not password_name:
        return False  # `API_KEY=local-proxy`, `id-token: write`
    if key is not None and _slice(m, ks - 82, ks).endswith("${" + _name_before(_slice(m, ks - 80, ks))):
        return False  # `${APP_PASSWORD:?Set it}`, `${TOKEN:-none}`: a shell expansion, its message or default
    if key is not None and key.strip("_.-$ \t'\"\n").lower() in _DENY_WORDS:
        # Judge the whole name (`NEXT_PAGE_TOKEN`), not only the matched word.
        full = (_name_before(_slice(m, ks - 80, ks)) + key).lower()
        if full.strip().lstrip("_.-$") in _NAME_DENY:
            return False
    if name == "v4":
        # A bare value may be code rather than a literal: f(x), obj.attr, a variable named like
        # the key, a type annotation, or the next key of a run (`token: token:`).
        low = v.lower()
        if _slice(m, e, e + 1) in ("(", "[") or _DOTTED.match(v.rstrip("!?")) or low in _CODE_WORDS:
            return False
        if _IDENT.match(v.rstrip(":=!?")) and _SECRET_WORD.search(low):
            return False
        if (v[0] in "!." and _IDENT.match(v[1:])) or _COMPARISON.match(v) or (
                _IDENT.match(v) and _OPERATOR_AFTER.match(_slice(m, e, e + 6))):
            return False  # `ok: !hasErrors`, `pass: .pass` (jq), `pass: score >= min`: an expression
        ss, se = m.span("sep") if sep is not None else (-1, -1)
        if ss > 0 and _IDENT.match(v) and _slice(m, ss - 1, ss) == " " and _slice(m, se, se + 1) == " ":
            return False  # `apiKey = model ? …`: spaced assignment of a variable, as in code
        if sep == ":" and (_SLUG.match(v) or (v.isdigit() and not password_name)):
            nxt = _slice(m, e, e + 2)
            if nxt[:1] == " " and nxt[1:].isalpha():
                return False  # `secret: handled by the agent`: a sentence goes on after the word
            # "password: hunter" is YAML only when the name opens the line; in a sentence it is prose.
            if low in _PROSE or ks < 0:
                return False
            head = _slice(m, ks - 200, ks)
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
    before = _slice(m, ks - 40, ks + at)
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
    found = _value(m)
    return found is not None and not _is_placeholder(_slice(m, found[1], found[2]))


def _check_flag(m: Match) -> bool:
    found = _value(m)
    if found is None:
        return False
    v = _slice(m, found[1], found[2])
    if _is_placeholder(v):
        return False
    # "use the --token flag", "pass --password when asked": prose, not a command line; and a
    # help listing (`--insecure-http-auth   Allow plain-HTTP auth`): a sentence goes on.
    word = v.rstrip(".,;:!?")  # `Used for CLI --api-key flag.`
    if found[0] == "v4" and _WORD.match(word):
        nxt = _slice(m, found[2], found[2] + 2)
        return not (word.lower() in _PROSE or word != v or (nxt[:1] == " " and nxt[1:].isalpha()))
    return True


def _check_userpass(m: Match) -> bool:
    v = _group(m, "v") or ""
    return not (v.isdigit() or _is_placeholder(v))  # -u 1000:1000 is uid:gid


def _check_query(m: Match) -> bool:
    v = _group(m, "v4") or ""
    if _is_placeholder(v):
        return False
    if (_group(m, "key") or "").lower() in ("key", "signature", "auth"):
        return _secret_like(v) and len(v) >= 16
    return True


def _check_authz(m: Match) -> bool:
    v = _group(m, "v4") or "x"
    if _group(m, "scheme") is None and _DOTTED.match(v):
        return False  # `Authorization: headers.Authorization ?? null`: code
    return not _is_placeholder(v)


def _check_bearer(m: Match) -> bool:
    v = _group(m, "v") or ""
    return not _is_placeholder(v) and any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def _check_token(m: Match) -> bool:
    v = _txt(m.group(0))
    # Documentation shapes: sk-xxxxxxxx…, AKIAIOSFODNN7EXAMPLE.
    return "EXAMPLE" not in v and "xxxxxx" not in v.lower() and len(set(v)) > 6


def _check_generic(m: Match) -> bool:
    s, e = m.span("v")
    v = _slice(m, s, e)
    prefix, _, tail = v.partition("_")
    if prefix in _ID_PREFIXES:
        return False
    if any(c in "+/=_.-" for c in _slice(m, s - 1, s) + _slice(m, e, e + 1)):
        return False  # a fragment of a longer base64/base64url blob
    upper = sum(c.isupper() for c in tail)
    lower = sum(c.islower() for c in tail)
    digits = sum(c.isdigit() for c in tail)
    return upper >= 2 and lower >= 2 and digits >= 2


_K8S_KIND = re.compile(r"""(?:\\n|\b)kind\\{0,4}["']?\s*:\s*\\{0,4}["']?Secret\b""")
_K8S_YAML_LINE = re.compile(r"([ \t]+(?:- )?[\w.-]+:[ \t]*)(.*)")
_K8S_JSON_VALUE = re.compile(r"""\\{0,4}"(?:[^"\\]|\\[^"\\])*\\{0,4}"\s*:\s*\\{0,4}"((?:[^"\\]|\\u[0-9a-fA-F]{4})+)""")
_LINE_SPLIT = re.compile(r"(\r?\n|\\n)")


# The lines of a YAML data block: each starts with a blank and ends in a newline (the last may
# not), so the loop is unambiguous and linear in Python's re too.
_K8S_BLOCK = re.compile(rb"(?:[ \t][^\r\n]*\r?\n)*(?:[ \t][^\r\n]*)?")
_K8S_BLOCK_ESCAPED = re.compile(rb"(?:[ \t](?:[^\r\n\\]|\\[^n])*\\n)*")


def _k8s_block(m: Match) -> tuple[int, int, int]:
    """Start and end of the data block a k8s match heads, and where the whole shape ends."""
    if "blk" in m.re.groupindex:  # JSON: the object is in the match
        return m.start("blk"), m.end("blk"), m.end()
    rx = _K8S_BLOCK_ESCAPED if m.group(0).endswith(b"\\n") else _K8S_BLOCK
    block = rx.match(m.string, m.end(), m.endpos)
    end = m.end() if block is None else block.end()
    return m.end(), end, end


def _k8s_spans(m: Match, bs: int, be: int, stop: int) -> list[tuple[int, int]] | None:
    """Spans of the values in a Secret's data/stringData block, or None if this is no Secret."""
    s = m.start()
    if not _K8S_KIND.search(_slice(m, s - 4000, stop + 4000)):
        return None
    buf = m.string
    found: list[tuple[int, int]] = []
    if _txt(m.group(0)).lstrip("\\").startswith('"'):
        blk = _txt(buf[bs:be])
        for v in _K8S_JSON_VALUE.finditer(blk):
            if _K8S_KIND.search(v.group(0)):
                continue  # `"kind": "Secret"` is evidence, not data (see below)
            a = bs + _blen(blk[: v.start(1)])
            found.append((a, a + _blen(v.group(1))))
        return found or None
    # The block ends at the first line indented no deeper than the `data:` line.
    header = _txt(buf[s:bs]).replace("\\n", "\n").rsplit("\n", 2)[-2]
    indent = len(header) - len(header.lstrip(" \t"))
    pos = bs
    for line in _LINE_SPLIT.split(_txt(buf[bs:be])):
        if line.strip() and line not in ("\n", "\r\n", "\\n"):
            if len(line) - len(line.lstrip(" \t")) <= indent:
                break
            kv = _K8S_YAML_LINE.match(line)
            value = kv.group(2).rstrip() if kv else ""
            # (The `kind: Secret` line itself is evidence, not data: redacted, the next pass
            # would find no Secret and judge the block again as ordinary text.)
            if kv and value not in ("", "|", ">", "|-", ">-") and _MARK not in value and not _K8S_KIND.search(line):
                a = pos + _blen(kv.group(1))
                found.append((a, a + _blen(value)))
        pos += _blen(line)
    return found or None


def _blen(s: str) -> int:
    return len(s.encode("utf-8", "surrogatepass"))


_CHECKS: Final[dict[str, Callable[[Match], bool]]] = {
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

# ---------------------------------------------------------------------------------------------
# Engine
# ---------------------------------------------------------------------------------------------

# A scan finds candidates, then judges each. The finder is the table as one capture-free RE2
# program: a DFA, linear in the text, that says where the next match starts and ends. Which rule
# won there (the first in table order that matches at that start) is asked of an RE2 Set
# anchored at the start; that rule alone, in Python's re, then gives the groups the checks read.
# RE2 could extract the groups itself, but over a 75-rule program that costs ~15 µs a match.

_GROUP_NAME = re.compile(r"\(\?P<\w+>")
_TOK_HEAD = r"(?:\\[nrt]|\b)(?P<v>"  # the head _tok gives a \b-anchored token
_KV_TAIL = _SEP + _VALUE  # the tail every _kv rule shares


def _plain(regex: str) -> str:
    return _GROUP_NAME.sub("(?:", regex)


def _finder_pattern(rules: Sequence[Rule]) -> str:
    """The table as one capture-free alternation, runs of rules with a common head or tail
    factored: ``H(?:a|b)`` for ``Ha|Hb`` and ``(?:a|b)T`` for ``aT|bT``.

    Factoring keeps leftmost-first priority (the first rule in table order still wins) and
    shrinks the DFA that RE2 builds lazily; its states, not the scan itself, dominate the cost
    of a first pass over new text (benchmarks/redact_bench.py).
    """
    parts: list[str] = []
    i = 0
    while i < len(rules):
        j = i + 1
        if rules[i].regex.startswith(_TOK_HEAD):
            while j < len(rules) and rules[j].regex.startswith(_TOK_HEAD):
                j += 1
            bodies = "|".join(_plain(r.regex[len(_TOK_HEAD) : -1]) for r in rules[i:j])
            parts.append(r"(?:\\[nrt]|\b)(?:" + bodies + ")")
        elif rules[i].regex.endswith(_KV_TAIL):
            while j < len(rules) and rules[j].regex.endswith(_KV_TAIL):
                j += 1
            keys = "|".join(_plain(r.regex[: -len(_KV_TAIL)]) for r in rules[i:j])
            parts.append("(?:" + keys + ")" + _plain(_KV_TAIL))
        else:
            parts.append(f"(?:{_plain(rules[i].regex)})")
        i = j
    return "|".join(parts)


def _re2_options() -> Any:
    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1  # bytes in, byte offsets out; patterns are ASCII
    opts.max_mem = 64 << 20  # room for the DFA so it never falls back to the slow NFA
    opts.log_errors = False
    return opts


_CONTEXT: Final = 256  # bytes before a match that a verdict may read (look-backs use ≤ 200)
_CACHE_SIZE: Final = 4096


class _Table:
    """One ordered list of rules, compiled: a finder, an anchored Set, and each rule alone."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        # Leftmost-first, as the table reads: a match ends where the winner's does. (Leftmost-
        # longest would go on to the longest match, to the end of the line for `mysql -pa -pa…`,
        # once per candidate.)
        self._finder = re2._re2.RE2(_finder_pattern(self.rules).encode(), _re2_options())
        if not self._finder.ok():
            raise ValueError("redaction rules do not compile in RE2")
        self._set: Any = None  # built on the first match found (text without candidates never needs it)
        # Python-side patterns compile on first use: a short-lived CLI process redacting a few
        # excerpts should not pay for the ~75 patterns a long indexing pass ends up using.
        self._single: list[re.Pattern[bytes] | None] = [None] * len(self.rules)
        # Verdicts by context (see Engine._matches); bounded, cleared when full.
        self.verdicts: dict[tuple[int, bytes], tuple[int, int, int, list[tuple[str, list[tuple[int, int]]]]]] = {}

    def find(self, buf: bytes, pos: int, end: int) -> tuple[int, int]:
        """The next match at or after ``pos``: where it starts and where the winner's ends."""
        found: tuple[int, int] = self._finder.Match(re2._Anchor.UNANCHORED, buf, pos, end)[0]
        return found

    def single(self, i: int) -> re.Pattern[bytes]:
        """Rule ``i`` alone, in Python's re."""
        rx = self._single[i]
        if rx is None:
            rx = self._single[i] = re.compile(self.rules[i].regex.encode("ascii"))
        return rx

    def resolve(self, buf: bytes, s: int, e: int, end: int) -> tuple[int, Match] | None:
        """The winning rule at ``s`` (the first in table order that matches) and its match.

        The Set sees buf[s:e + 2]: rules before the winner match nowhere at s, and the winner
        fits, with the byte after for a closing \\b; the cut may only add rules, which their own
        match then turns away.
        """
        if self._set is None:
            self._set = re2._re2.Set(re2._Anchor.ANCHOR_START, _re2_options())
            for rule in self.rules:
                self._set.Add(_plain(rule.regex).encode())
            if not self._set.Compile():
                raise ValueError("redaction rules do not compile in an RE2 Set")
        for i in sorted(self._set.Match(buf[s : e + 2])):
            one = self.single(i).match(buf, s, end)
            if one is not None:
                return i, one
        return None


class Engine:
    """The rule table compiled once: RE2 finds, Python judges. ``cache`` keeps verdicts by context."""

    def __init__(self, cache: bool = True) -> None:
        self.cache = cache
        self.full = _Table(RULES)
        self._tokens: _Table | None = None
        self._k8s_plain: tuple[bytes, int] | None = None  # the last data block that was no Secret
        self.disagreements = 0  # finder and resolver differing (should stay 0; tests check)

    @property
    def tokens(self) -> _Table:
        """The provider-token rules alone, for rescanning a rejected value (built on first use)."""
        if self._tokens is None:
            self._tokens = _Table([r for r in RULES if r.check in ("token", "generic")])
        return self._tokens

    def _matches(self, buf: bytes, pos: int, end: int, table: _Table) -> list[tuple[str, list[tuple[int, int]]]]:
        """(kind, secret spans) left to right, non-overlapping."""
        out: list[tuple[str, list[tuple[int, int]]]] = []
        verdicts = table.verdicts
        while pos < end:
            s, e = table.find(buf, pos, end)
            if s < 0:
                break
            # A verdict depends only on the text from _CONTEXT before the match to just past it
            # (k8s verdicts, which look further, are never stored). Hostile input repeats the
            # same candidate over and over (`token: token: …`); the cache makes that cheap.
            lo = max(0, s - _CONTEXT)
            key = (s - lo, buf[lo : e + 2])  # where the match starts within the window matters
            cached = verdicts.get(key) if self.cache else None
            if cached is None:
                stop, advance, found, cacheable = self._judge(buf, s, e, end, table)
                if cacheable and self.cache:
                    if len(verdicts) >= _CACHE_SIZE:
                        verdicts.clear()
                    verdicts[key] = (s, stop, advance, found)
            else:
                at, stop, advance, found = cached
                if at != s:  # the same verdict, found at another offset
                    d = s - at
                    stop, advance = stop + d, advance + d
                    found = [(k, [(a + d, b + d) for a, b in sp]) for k, sp in found]
            mark = _marker_in(buf, s, stop)
            if mark is not None:
                # The match reaches into an earlier [REDACTED:kind]. Text before the marker is
                # judged as if it ended there, as a second pass over this output would see it.
                if mark[0] > s:
                    out += self._matches(buf, s, mark[0], table)
                pos = max(mark[1], s + 1)
                continue
            out += found
            pos = advance if advance > s else s + 1
        return out

    def _judge(
        self, buf: bytes, s: int, e: int, end: int, table: _Table
    ) -> tuple[int, int, list[tuple[str, list[tuple[int, int]]]], bool]:
        """The candidate at ``s``: where its match ends, where to resume, what to redact, and
        whether the verdict may be cached."""
        won = table.resolve(buf, s, e, end)
        if won is None:
            self.disagreements += 1
            return s, s + 1, [], False
        rule, one = table.rules[won[0]], won[1]
        if rule.check == "k8s":
            return self._judge_k8s(buf, rule, one)
        found = _accept(rule, one)
        if found is not None:
            if rule.rescan and table is self.full and len(found[1]) == 1 and found[1][0][1] - found[1][0][0] >= 20:
                # `STRIPE_KEY=sk_live_…`: name the provider when the value is exactly its token
                # (every provider token is at least 20 characters long).
                vs, ve = found[1][0]
                named = self._matches(buf, vs, ve, self.tokens)
                if len(named) == 1 and named[0][1] == [(vs, ve)]:
                    found = named[0]
            return one.end(), one.end(), [found], True
        inner = []
        if rule.rescan and table is self.full:
            value = _value(one)
            if value is not None:
                # A rejected value may still hold a provider token: scan just that span with
                # the token rules (no name=value rules, so no nesting; still linear).
                inner = self._matches(buf, value[1], value[2], self.tokens)
        return one.end(), one.end(), inner, True

    def _judge_k8s(
        self, buf: bytes, rule: Rule, one: Match
    ) -> tuple[int, int, list[tuple[str, list[tuple[int, int]]]], bool]:
        """A Kubernetes data block: its values if it sits in a Secret. Never cached: the check
        reads 4000 bytes around the block. A block that is no Secret is ordinary text: the scan
        goes on from its first line."""
        plain = self._k8s_plain
        yaml = "blk" not in one.re.groupindex
        if yaml and plain is not None and plain[0] is buf and one.start() < plain[1]:
            # A `data:` line inside a block already found to be no Secret: its own block ends no
            # later, so its window holds no `kind: Secret` either. (Else hostile `data:\n data:\n
            # data:…` would judge the rest of the block once per line.)
            return one.end(), one.end(), [], False
        bs, be, stop = _k8s_block(one)
        spans = _k8s_spans(one, bs, be, stop)
        if spans is None:
            if yaml:
                self._k8s_plain = (buf, be)
            return bs, bs, [], False
        return stop, stop, [(rule.kind, spans)], False

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, kind) of every secret in ``text``, in characters, sorted, disjoint.

        A text with invisible characters (zero-width, bidi controls, soft hyphens) is scanned
        twice: as it is, where such a character may separate two words, and without them, so
        ``AKIA\\u200b…`` (a zero-width space inside) is a key. Spans of the second scan are
        mapped back to ``text`` and cover the whole key, the invisible characters inside it
        included; overlapping spans of the two scans are one secret.
        """
        if text.isascii() and "\\u" not in text:
            return self._visible_spans(text)
        visible, runs = _without_invisible(text)
        if not runs[0]:
            return self._visible_spans(text)
        found = self._visible_spans(text) + [
            (_original(s, runs), _original(e - 1, runs) + 1, kind)
            for s, e, kind in self._visible_spans(visible)
        ]
        found.sort()
        merged: list[tuple[int, int, str]] = []
        for s, e, kind in found:
            if merged and s < merged[-1][1]:
                ms, me, mkind = merged[-1]
                merged[-1] = (ms, max(me, e), mkind)
            else:
                merged.append((s, e, kind))
        return merged

    def _visible_spans(self, text: str) -> list[tuple[int, int, str]]:
        n = len(text)
        if n <= PIECE_SIZE:  # most texts: one piece, no margins
            buf = text.encode("utf-8", "surrogatepass")
            return self._piece_spans(text, buf, 0, 0, len(buf), text.isascii())
        out: list[tuple[int, int, str]] = []
        ascii_only = text.isascii()
        for lo, hi in _pieces(text):
            # Each piece is scanned with some text either side, which matches may not enter but
            # checks may read (`kind: Secret` above a `data:` block, the start of a line).
            m_lo, m_hi = max(0, lo - _MARGIN), min(n, hi + _MARGIN)
            before = text[m_lo:lo].encode("utf-8", "surrogatepass")
            body = text[lo:hi].encode("utf-8", "surrogatepass")
            buf = before + body + text[hi:m_hi].encode("utf-8", "surrogatepass")
            out += self._piece_spans(text, buf, m_lo, len(before), len(before) + len(body), ascii_only)
        return out

    def _piece_spans(
        self, text: str, buf: bytes, origin: int, start: int, end: int, ascii_only: bool
    ) -> list[tuple[int, int, str]]:
        """Secrets in buf[start:end], where buf holds text from character ``origin`` on."""
        out: list[tuple[int, int, str]] = []
        # Byte offsets become character offsets walking forward; spans never split a character
        # (each starts and ends next to an ASCII byte).
        b_at, c_at = 0, origin
        last = start
        for kind, found in self._matches(buf, start, end, self.full):
            for s, e in sorted(found) if len(found) > 1 else found:
                if s < last:
                    continue
                if ascii_only:
                    cs, ce = origin + s, origin + e
                else:
                    cs = c_at + len(buf[b_at:s].decode("utf-8", "surrogatepass"))
                    ce = cs + len(buf[s:e].decode("utf-8", "surrogatepass"))
                    b_at, c_at = e, ce
                out.append((cs, ce, kind))
                last = e
        return out

    def redact(self, text: str, want_hits: bool = False) -> tuple[str, list[Hit]]:
        """The text with each secret span masked, and (if wanted) where the markers went."""
        spans = self.spans(text)
        if not spans:
            return text, []
        out: list[str] = []
        hits: list[Hit] = []
        last = size = 0  # size: characters written so far
        for s, e, kind in spans:
            marker = f"[REDACTED:{kind}]"
            out += (text[last:s], marker)
            size += s - last
            if want_hits:
                hits.append(Hit(kind, size, size + len(marker)))
            size += len(marker)
            last = e
        out.append(text[last:])
        return "".join(out), hits


_MARKER = re.compile(rb"\[REDACTED:[a-z0-9_]*\]")

# Characters that show nothing, or only reorder what is shown: inside a token they hide it from
# every pattern while a terminal or an editor shows it whole. Soft hyphen, combining grapheme
# joiner, Arabic letter mark, Hangul fillers, Khmer and Mongolian invisibles, zero-width space,
# (non-)joiners and marks, bidi embeddings, overrides and isolates, word joiner and invisible
# operators, deprecated format controls, variation selectors, the byte-order mark. In JSON
# text (tool arguments, a journal line) they may be escapes: `\u200b` hides a key as well.
_INVISIBLE_CHARS = (
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0]"
)
_INVISIBLE_ESCAPE = (
    r"\\{1,4}u(?i:00ad|034f|061c|115f|1160|17b[45]|180[b-f]|200[b-f]|202[a-e]|206[0-46-9a-f]|3164|fe0[0-9a-f]|feff|ffa0)"
)
_INVISIBLE_CHAR = re.compile(_INVISIBLE_CHARS)  # one class alone: a fast test for the usual "none"
_INVISIBLE_ESCAPED = re.compile(_INVISIBLE_ESCAPE)
_INVISIBLE_RUN = re.compile(f"{_INVISIBLE_CHARS}+|(?:{_INVISIBLE_ESCAPE})+")


def _without_invisible(text: str) -> tuple[str, tuple[list[int], list[int]]]:
    """``text`` without its invisible characters, and where they were: for each run of them,
    the position in the visible text where it stood (how many visible characters precede it)
    and how many characters all runs so far removed."""
    at: list[int] = []
    total: list[int] = []
    if not _INVISIBLE_CHAR.search(text) and ("\\u" not in text or not _INVISIBLE_ESCAPED.search(text)):
        return text, (at, total)
    pieces: list[str] = []
    last = gone = 0
    for m in _INVISIBLE_RUN.finditer(text):
        pieces.append(text[last : m.start()])
        at.append(m.start() - gone)
        gone += m.end() - m.start()
        total.append(gone)
        last = m.end()
    if not at:
        return text, (at, total)
    pieces.append(text[last:])
    return "".join(pieces), (at, total)


def _original(i: int, runs: tuple[list[int], list[int]]) -> int:
    """Where visible character ``i`` sits in the original text."""
    at, total = runs
    k = bisect.bisect_right(at, i)
    return i + (total[k - 1] if k else 0)


def _marker_in(buf: bytes, s: int, e: int) -> tuple[int, int] | None:
    """The first earlier ``[REDACTED:kind]`` overlapping ``[s, e)``, if any.

    A match that reaches into a marker would redact it again (`://[REDACTED:github_token]@`
    looks like user:password@, `[REDACTED:password] :x` like a key), breaking idempotence.
    """
    i = buf.find(b"[REDACTED:", max(0, s - 40), e)
    while i != -1:
        m = _MARKER.match(buf, i)
        if m is not None and m.end() > s:
            return m.span()
        i = buf.find(b"[REDACTED:", i + 1, e)
    return None


def _accept(rule: Rule, m: Match) -> tuple[str, list[tuple[int, int]]] | None:
    if not _CHECKS[rule.check](m):
        return None
    kind = rule.kind
    value = _value(m)
    if value is None:
        return kind, [m.span()]
    if value[0] == "pem":
        kind = "private_key"
    secret = [(value[1], value[2])]
    if value[0] == "v" and "v2" in m.re.groupindex and m.start("v2") >= 0:
        secret.append(m.span("v2"))  # sentry_dsn: public and secret key
    if rule.kind == "authorization_header":
        scheme = (_group(m, "scheme") or "").lower()
        kind = {"bearer": "bearer_token", "basic": "basic_auth"}.get(scheme, kind)
    return kind, secret


# ---------------------------------------------------------------------------------------------
# Pieces: texts over 1 MiB are scanned in line-aligned pieces
# ---------------------------------------------------------------------------------------------

PIECE_SIZE: Final = 1 << 20
_MARGIN: Final = 8192  # context read on either side of a piece (look-backs, `kind: Secret`)
_PEM_REACH: Final = 1 << 16  # how far past a cut we look for the END of a PEM block


def _pieces(text: str, size: int = PIECE_SIZE) -> Iterator[tuple[int, int]]:
    """Line-aligned (start, end) pieces of about ``size`` characters.

    A cut never falls inside a PEM private-key block, nor before an indented line (the body of a
    YAML `data:` block or a netrc entry), so every multi-line secret is seen whole.
    """
    n = len(text)
    start = 0
    while n - start > size:
        cut = _cut_before(text, start, start + size)
        if cut <= start:
            nl = text.find("\n", start + size)
            if nl == -1:
                break
            cut = nl + 1
        begin = text.rfind("-----BEGIN", start, cut)
        if begin != -1 and "PRIVATE KEY" in text[begin : begin + 80] and text.find("-----END", begin, cut) == -1:
            end = text.find("-----END", cut, cut + _PEM_REACH)
            if end != -1:
                nl = text.find("\n", end)
                cut = n if nl == -1 else nl + 1
        yield start, cut
        start = cut
    if start < n:
        yield start, n


def _cut_before(text: str, lo: int, hi: int) -> int:
    """The last line start in (lo, hi] that does not begin with whitespace, else any line start."""
    nl = text.rfind("\n", lo, hi)
    first = nl
    floor = max(lo, hi - _PEM_REACH)
    while nl > floor:
        if nl + 1 < len(text) and text[nl + 1] not in " \t":
            return nl + 1
        nl = text.rfind("\n", lo, nl)
    return first + 1 if first != -1 else lo


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------

_ENGINE: Engine | None = None  # compiled on first use, so importing the package stays cheap


def engine() -> Engine:
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = Engine()
    return _ENGINE


def redact_with_hits(text: str) -> tuple[str, list[Hit]]:
    """Redacted text and the hits, as spans of the ``[REDACTED:kind]`` markers in it."""
    return engine().redact(text, want_hits=True)


def redact_region(text: str, start: int, end: int) -> str:
    """``text[start:end]`` redacted, grown outward to safe cut points.

    For showing part of a long text (an excerpt) without redacting all of it: the region
    widens to line starts where :func:`_pieces` would cut, so no multi-line secret (a PEM
    block, a YAML ``data:`` block) is cut in two and half of it missed.
    """
    if start <= 0 and end >= len(text):
        return redact(text)
    lo, hi = 0, len(text)
    for a, b in _pieces(text, 4096):
        if b <= start:
            lo = b
        elif a >= end:
            hi = a
            break
    return redact(text[lo:hi])


def secret_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every secret in ``text``: the characters :func:`redact` replaces.

    Sorted and disjoint; ``text[start:end]`` becomes ``[REDACTED:kind]``.
    """
    return engine().spans(text)


def redact(text: str) -> str:
    """The text with every secret replaced by ``[REDACTED:<kind>]``."""
    return engine().redact(text)[0]


