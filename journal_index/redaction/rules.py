"""The pattern table: each rule a named RE2-compatible regex, the kind it reports, and the check
run on its matches (see checks.py).

Patterns may not use look-around or back-references (RE2 has neither).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

# A rule's regex marks the secret with groups named v, v2, v3, v4 (alternative spellings: double
# quoted, single quoted, backticked, bare) or pem; without such a group the whole match is secret.
# ``check`` names the Python-side validation run on a match (see checks.CHECKS).


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
    # real or JSON-escaped newlines. The block of lines under it is found in Python (k8s_block):
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

# The shapes the finder factors (table.finder_pattern): the head _tok gives a \b-anchored token,
# and the tail every _kv rule shares.
TOK_HEAD: Final = r"(?:\\[nrt]|\b)(?P<v>"
KV_TAIL: Final = _SEP + _VALUE
