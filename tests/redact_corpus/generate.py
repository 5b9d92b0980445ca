"""Write positives.jsonl and negatives.jsonl: the redaction corpus (run once; output is committed).

    python tests/redact_corpus/generate.py

Every value is fake: drawn from a seeded generator in the shape of the real thing. A positive
case names the value that must vanish (``secret``), the name that must survive (``key``, for
name=value shapes) and the kind expected. A negative case must come back unchanged.
"""

from __future__ import annotations

import base64
import json
import random
import string
from pathlib import Path

HERE = Path(__file__).resolve().parent
R = random.Random(20261129)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def rnd(alphabet: str, n: int) -> str:
    while True:
        s = "".join(R.choice(alphabet) for _ in range(n))
        # Random shapes always mix classes; retry the rare draw that does not.
        if alphabet not in (ALNUM, B64, B64URL) or (
            any(c.isdigit() for c in s) and any(c.isupper() for c in s) and any(c.islower() for c in s)
        ):
            return s


def pw() -> str:
    return rnd(ALNUM, R.randint(6, 12)) + R.choice("!#%^*_-+@") + rnd(string.digits, 2) + rnd(ALNUM, 3)


def b64(n: int) -> str:
    return base64.b64encode(R.randbytes(n)).decode()


def uuid() -> str:
    h = rnd(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


def pem_body(lines: int) -> list[str]:
    return [b64(48) for _ in range(lines)] + [b64(R.randint(10, 40))]


positives: list[dict[str, str]] = []
negatives: list[dict[str, str]] = []


def pos(kind: str, text: str, secret: str, key: str = "") -> None:
    case = {"id": f"P{len(positives) + 1:03d}", "kind": kind, "text": text, "secret": secret}
    if key:
        case["key"] = key
    positives.append(case)


def neg(category: str, text: str) -> None:
    negatives.append({"id": f"N{len(negatives) + 1:03d}", "category": category, "text": text})


# --- name = value, in the shapes of shell, .env, JSON, YAML, TOML, code -------------------------
for template, key in [
    ("DB_PASSWORD={v}", "DB_PASSWORD"),
    ("export PGPASSWORD='{v}'", "PGPASSWORD"),
    ('{{"user": "admin", "password": "{v}"}}', "password"),
    ("password: {v}", "password"),
    ('password = "{v}"', "password"),
    ('  db_password: "{v}"', "db_password"),
    ("MYSQL_PWD={v} mysql -u root", "MYSQL_PWD"),
    ("passwd={v}", "passwd"),
    ("passphrase = '{v}'", "passphrase"),
    ("Server=db;Database=app;User Id=sa;Password={v};", "Password"),
    ("ADMIN_PASS={v}", "ADMIN_PASS"),
    ('redisPassword := "{v}"', "redisPassword"),
    ('$password = "{v}";', "password"),
    ("--password={v}", "password"),
    ('{{\\"password\\": \\"{v}\\"}}', "password"),
    ("    'PASSWORD': '{v}',", "PASSWORD"),
    ("<password>{v}</password> or password => '{v}'", "password"),
]:
    v = pw()
    pos("password", template.format(v=v), v, key)

for template, key, kind in [
    ("JWT_SECRET={v}", "JWT_SECRET", "secret"),
    ('"client_secret": "{v}"', "client_secret", "client_secret"),
    ("app_secret: {v}", "app_secret", "secret"),
    ('WEBHOOK_SECRET="{v}"', "WEBHOOK_SECRET", "secret"),
    ("AZURE_CLIENT_SECRET={v}", "AZURE_CLIENT_SECRET", "client_secret"),
    ("client-secret: {v}", "client-secret", "client_secret"),
    ("SECRET_KEY_BASE={v}", "SECRET_KEY_BASE", "api_key"),
]:
    v = rnd(HEX, 48) if "JWT" in key or "BASE" in key else rnd(B64URL, 32)
    if key == "SECRET_KEY_BASE":
        template, key, kind = "DJANGO_SECRET_KEY={v}", "DJANGO_SECRET_KEY", "api_key"
    pos(kind, template.format(v=v), v, key)

for template, key, kind, v in [
    ("GITLAB_TOKEN={v}", "GITLAB_TOKEN", "token", rnd(ALNUM, 26)),
    ('"access_token": "{v}"', "access_token", "token", rnd(B64URL, 40)),
    ("refresh_token: {v}", "refresh_token", "token", rnd(ALNUM, 48)),
    ("X-Auth-Token: {v}", "X-Auth-Token", "token", rnd(HEX, 40)),
    ("auth_token = '{v}'", "auth_token", "token", rnd(ALNUM, 32)),
    ("TWILIO_AUTH_TOKEN={v}", "TWILIO_AUTH_TOKEN", "token", rnd(HEX, 32)),
    ("VAULT_TOKEN=s.{v}", "VAULT_TOKEN", "token", rnd(ALNUM, 24)),
    ("CLOUDFLARE_API_TOKEN={v}", "CLOUDFLARE_API_TOKEN", "token", rnd(B64URL, 40)),
    ("//registry.npmjs.org/:_authToken={v}", "_authToken", "token", uuid()),
    ("PRIVATE-TOKEN: {v}", "PRIVATE-TOKEN", "token", rnd(B64URL, 20) + "9x"),
    ("DOPPLER_TOKEN={v}", "DOPPLER_TOKEN", "token", rnd(ALNUM, 44)),
    ("PULUMI_ACCESS_TOKEN={v}", "PULUMI_ACCESS_TOKEN", "token", rnd(ALNUM, 40)),
    ('"identitytoken": "{v}"', "identitytoken", "token", rnd(B64URL, 60)),
    ('"SessionToken": "{v}"', "SessionToken", "token", rnd(B64, 120)),
    ("aws_session_token = {v}", "aws_session_token", "aws_session_token", rnd(B64, 200)),
    ("OPENAI_API_KEY={v}", "OPENAI_API_KEY", "api_key", rnd(ALNUM, 40)),
    ('"apiKey": "{v}"', "apiKey", "api_key", rnd(ALNUM, 32)),
    ("x-api-key: {v}", "x-api-key", "api_key", rnd(ALNUM, 40)),
    ("DD_API_KEY={v}", "DD_API_KEY", "api_key", rnd(HEX, 32)),
    ("DD_APP_KEY={v}", "DD_APP_KEY", "api_key", rnd(HEX, 40)),
    ("DD-APPLICATION-KEY: {v}", "DD-APPLICATION-KEY", "api_key", rnd(HEX, 40)),
    ("HEROKU_API_KEY={v}", "HEROKU_API_KEY", "api_key", uuid()),
    ("CF_API_KEY={v}", "CF_API_KEY", "api_key", rnd(HEX, 37)),
    ('api_key: "{v}"', "api_key", "api_key", rnd(ALNUM, 40)),
    ("Ocp-Apim-Subscription-Key: {v}", "Ocp-Apim-Subscription-Key", "api_key", rnd(HEX, 32)),
    ("encryption_key = {v}", "encryption_key", "api_key", b64(32)),
    ('"private_key": "0x{v}"', "private_key", "private_key", rnd(HEX, 64)),
    ("PrivateKey = {v}", "PrivateKey", "private_key", b64(32)),
    ('"auth": "basic deploy:{v}"', "auth", "auth", pw()),
    ("auth = {v}", "auth", "auth", b64(24)),
    ("credentials: ci:{v}", "credentials", "credentials", pw()),
    ("CREDS={v}", "CREDS", "credentials", b64(30)),
    ("aws_secret_access_key = {v}", "aws_secret_access_key", "aws_secret_access_key", rnd(B64, 40)),
    ('"SecretAccessKey": "{v}"', "SecretAccessKey", "aws_secret_access_key", rnd(B64, 40)),
    ("AWS_SECRET_ACCESS_KEY={v}", "AWS_SECRET_ACCESS_KEY", "aws_secret_access_key", rnd(B64, 40)),
]:
    pos(kind, template.format(v=v), v, key)

# A .env file as a write tool's JSON arguments (escaped newlines), and a TOML table.
v1, v2 = pw(), rnd(ALNUM, 40)
pos("password", json.dumps({"path": ".env", "content": f"DEBUG=1\nDB_PASSWORD={v1}\nDB_HOST=db\n"}), v1, "DB_PASSWORD")
pos("token", f'[tool.poetry.http-basic.private]\nusername = "ci"\ntoken = "{v2}"\n', v2, "token")


# --- provider tokens ---------------------------------------------------------------------------
def akia() -> str:
    return R.choice(["AKIA", "ASIA"]) + rnd(string.ascii_uppercase + "234567", 16)


for template in [
    "AWS_ACCESS_KEY_ID={v}",
    "the key id is {v}, rotate it",
    '"AccessKeyId": "{v}"',
    "aws_access_key_id = {v}",
]:
    v = akia()
    pos("aws_access_key_id", template.format(v=v), v)
for template in ["token is {v}", "export AWS_SESSION_TOKEN={v}"]:
    v = R.choice(["FwoGZXIvYXdzE", "IQoJb3JpZ2luX2VjE"]) + rnd(B64, 180)
    pos("aws_session_token", template.format(v=v), v)
for p in ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]:
    v = p + rnd(ALNUM, 36)
    pos(
        "github_token",
        R.choice(
            ["GH_TOKEN used: {v}", "git clone https://{v}@github.com/o/r.git", "echo {v} | gh auth login --with-token"]
        ).format(v=v),
        v,
    )
for _ in range(2):
    v = "github_pat_" + rnd(ALNUM, 22) + "_" + rnd(ALNUM, 59)
    pos("github_fine_grained_pat", f"fine-grained PAT {v} expires in 30 days", v)
for p in ["glpat-", "glptt-", "gldt-"]:
    v = p + rnd(B64URL, 20)
    pos("gitlab_token", f"curl --header 'PRIVATE: {v}' https://gitlab.example.com/api/v4/projects", v)
v = "GR1348941" + rnd(B64URL, 20)
pos("gitlab_runner_token", f"gitlab-runner register --registration-token {v}", v)
for p in ["xoxb-", "xoxp-", "xoxa-"]:
    v = p + rnd(string.digits, 12) + "-" + rnd(string.digits, 13) + "-" + rnd(ALNUM, 24)
    pos("slack_token", f"slack token in the config: {v}", v)
v = "xapp-1-A" + rnd(string.digits, 10) + "-" + rnd(string.digits, 13) + "-" + rnd(HEX, 64)
pos("slack_app_token", f"SLACK_APP={v}", v)
for _ in range(2):
    v = f"T{rnd(string.ascii_uppercase + string.digits, 8)}/B{rnd(string.ascii_uppercase, 8)}/{rnd(ALNUM, 24)}"
    pos("slack_webhook", f'curl -X POST -d \'{{"text":"hi"}}\' https://hooks.slack.com/services/{v}', v)
for p in ["sk_live_", "rk_live_", "sk_test_"]:
    v = p + rnd(ALNUM, 99 if p == "sk_live_" else 24)
    pos("stripe_secret_key", f"stripe.api_key = settings.X  # was {v}", v)
v = "whsec_" + rnd(ALNUM, 32)
pos("stripe_webhook_secret", f"stripe listen prints: Ready! Your webhook signing secret is {v}", v)
for _ in range(2):
    v = "sk-proj-" + rnd(B64URL, 74) + "T3BlbkFJ" + rnd(B64URL, 74)
    pos("openai_api_key", f"client = OpenAI(api_key={v!r})", v)
v = "sk-" + rnd(ALNUM, 20) + "T3BlbkFJ" + rnd(ALNUM, 20)
pos("openai_api_key", f"old key {v}", v)
v = "sk-svcacct-" + rnd(B64URL, 80)
pos("openai_api_key", f"service account key {v}", v)
v = "sk-" + rnd(HEX, 32)
pos("sk_api_key", f"deepseek key {v}", v)
for p in ["sk-ant-api03-", "sk-ant-admin01-"]:
    v = p + rnd(B64URL, 93) + "AA"
    pos("anthropic_api_key", f'anthropic = Anthropic(api_key="{v}")', v)
for template in ["https://maps.googleapis.com/maps/api/geocode/json?address=x&key={v}", "GOOGLE maps key {v}"]:
    v = "AIza" + rnd(B64URL, 35)
    pos("google_api_key", template.format(v=v), v)
v = "GOCSPX-" + rnd(B64URL, 28)
pos(
    "google_oauth_client_secret",
    f'{{"installed": {{"client_id": "x.apps.googleusercontent.com", "client_sec": "{v}"}}}}',
    v,
)
v = "ya29." + rnd(B64URL, 120)
pos("google_oauth_token", f"gcloud auth print-access-token\n{v}", v)
v = "1//0" + rnd(B64URL, 60)
pos("google_oauth_token", f"refresh: {v}", v)
for _ in range(2):
    v = "hf_" + rnd(ALNUM, 34)
    pos("huggingface_token", f"huggingface-cli login --token-value {v}", v)
v = "npm_" + rnd(ALNUM, 36)
pos("npm_token", f"NPM token created: {v}", v)
v = "pypi-AgEIcHlwaS5vcmc" + rnd(B64URL, 70)
pos("pypi_token", f"twine upload -u __token__ -p {v} dist/*", v)
v = "SK" + rnd(HEX, 32)
pos("twilio_api_key", f"Twilio API key sid {v}", v)
v = "SG." + rnd(B64URL, 22) + "." + rnd(B64URL, 43)
pos("sendgrid_api_key", f"sendgrid: {v}", v)
v = "key-" + rnd(HEX, 32)
pos("mailgun_api_key", f"mailgun key {v} for mg.example.com", v)
v = rnd(HEX, 32) + "-us" + str(R.randint(1, 21))
pos("mailchimp_api_key", f"mailchimp {v}", v)
v = "M" + rnd(B64URL, 23) + "." + rnd(B64URL, 6) + "." + rnd(B64URL, 27)
pos("discord_bot_token", f"client.run('{v}')", v)
v = rnd(B64URL, 68)
pos("discord_webhook", f"https://discord.com/api/webhooks/{rnd(string.digits, 18)}/{v}", v)
v = rnd(string.digits, 10) + ":AA" + rnd(B64URL, 33)
pos("telegram_bot_token", f"https://api.telegram.org/bot{v}/getMe", v)
v = b64(64)
pos(
    "azure_connection_string",
    f"DefaultEndpointsProtocol=https;AccountName=prjctstore;AccountKey={v};EndpointSuffix=core.windows.net",
    v,
)
v = b64(32)
pos(
    "azure_connection_string",
    f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={v}",
    v,
)
v = b64(32).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
pos("azure_sas_token", f"https://acct.blob.core.windows.net/c/b.txt?sv=2022-11-02&ss=b&sp=r&se=2026-12-01&sig={v}", v)
v = rnd(ALNUM, 3) + "8Q~" + rnd(B64URL + "~.", 34)
pos("azure_ad_client_secret", f"az ad app credential reset returned {v}", v)
v = "dapi" + rnd(HEX, 32)
pos("databricks_token", f"databricks token: {v}", v)
v = "dop_v1_" + rnd(HEX, 64)
pos("digitalocean_token", f"doctl auth init -t {v}", v)
v = "HRKU-" + rnd(B64URL, 60)
pos("heroku_api_key", f"heroku authorizations:create -> {v}", v)
v = "hvs." + rnd(B64URL, 90)
pos("vault_token", f"vault login {v}", v)
v = "dp.pt." + rnd(ALNUM, 43)
pos("doppler_token", f"doppler configure set token {v}", v)
v = "pul-" + rnd(HEX, 40)
pos("pulumi_token", f"pulumi login with {v}", v)
v = "lin_api_" + rnd(ALNUM, 40)
pos("linear_api_key", f"linear {v}", v)
k1 = rnd(HEX, 32)
host = f"o{rnd(string.digits, 6)}.ingest.sentry.io/{rnd(string.digits, 7)}"
pos("sentry_dsn", f'sentry_sdk.init(dsn="https://{k1}@{host}")', k1)
v = "sntrys_" + rnd(B64URL, 90)
pos("sentry_token", f"sentry-cli --auth {v}", v)
v = "shpat_" + rnd(HEX, 32)
pos("shopify_token", f"shopify admin {v}", v)
v = "sq0atp-" + rnd(B64URL, 22)
pos("square_token", f"square sandbox {v}", v)
v = "EAAA" + rnd(B64URL, 60)
pos("square_token", f"square production {v}", v)
v = "v1.0-" + rnd(HEX, 24) + "-" + rnd(HEX, 146)
pos("cloudflare_origin_ca_key", f"origin ca key {v}", v)
v = "glc_" + rnd(B64, 60)
pos("grafana_token", f"grafana cloud {v}", v)
v = "glsa_" + rnd(ALNUM, 32) + "_" + rnd(HEX, 8)
pos("grafana_token", f"service account token {v}", v)
v = "AGE-SECRET-KEY-1" + "".join(R.choice("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L") for _ in range(58))
pos("age_secret_key", f"# created: 2026-09-01\n# public key: age1{rnd('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 58)}\n{v}", v)
for _ in range(3):
    h = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    claims = json.dumps({"sub": rnd(ALNUM, 8), "iat": R.randint(1, 2**31)}).encode()
    p = base64.urlsafe_b64encode(claims).decode().rstrip("=")
    v = f"{h}.{p}.{rnd(B64URL, 43)}"
    pos("jwt", R.choice(["decode this {v} please", "Cookie: session={v}", "jwt.decode('{v}')"]).format(v=v), v)
v = "prj_" + rnd(ALNUM, 40)
pos("prefixed_token", f"use my token prj_ from the password manager, I'll paste it: {v}", v)
v = "acme_" + rnd(ALNUM, 36)
pos("prefixed_token", f"the staging key is {v}", v)

# --- URLs, headers, command lines --------------------------------------------------------------
for scheme, user in [
    ("postgres", "app"),
    ("mongodb+srv", "root"),
    ("redis", ""),
    ("amqp", "guest2"),
    ("https", "deploy"),
    ("mysql", "wp"),
]:
    v = pw().replace("@", "").replace("/", "")
    pos("url_password", f"DATABASE_URL={scheme}://{user}:{v}@db.internal:5432/app", v)
for template, kind in [
    ("https://api.example.com/v1/items?api_key={v}&page=2", "url_query_secret"),
    ("GET /callback?access_token={v}&state=xyz", "url_query_secret"),
    ("https://bucket.s3.amazonaws.com/f?X-Amz-Signature={v}&X-Amz-Date=20260901", "url_query_secret"),
]:
    v = rnd(HEX, 64) if "Amz" in template else rnd(ALNUM, 40)
    pos(kind, template.format(v=v), v)
for template, kind in [
    ("Authorization: Basic {v}", "basic_auth"),
    ('curl -H "Authorization: Bearer {v}" https://api.example.com', "bearer_token"),
    ("Authorization: token {v}", "authorization_header"),
    ("Proxy-Authorization: Basic {v}", "basic_auth"),
    ('headers = {{"Authorization": "Bearer {v}"}}', "bearer_token"),
    ("authorization: Bot {v}", "authorization_header"),
    ('{{\\"authorization\\": \\"Bearer {v}\\"}}', "bearer_token"),
]:
    v = base64.b64encode(f"u:{pw()}".encode()).decode() if "Basic" in template else rnd(B64URL, 40)
    pos(kind, template.format(v=v), v)
v = rnd(ALNUM, 40)
pos("bearer_token", f"then send it as a Bearer {v} on each call", v)
for template in [
    "curl -u admin:{v} https://ci.example.com/api/json",
    "curl --user deploy:{v} -X POST https://x",
    "wget --proxy-user=me:{v} http://example.com",
]:
    v = pw()
    pos("basic_auth_credentials", template.format(v=v), v)
for template in ["mysql -u root -p{v} -h db app", "mysqldump -uroot -p'{v}' shop > shop.sql"]:
    v = pw()
    pos("mysql_password", template.format(v=v), v)
v = pw()
pos("sshpass_password", f"sshpass -p '{v}' ssh deploy@10.0.0.5", v)
v = pw()
pos("redis_password", f"redis-cli -h cache -a {v} ping", v)
v = pw()
pos("registry_password", f"docker login -u ci -p {v} registry.example.com", v)
for flag in ["--password", "--token", "--api-key", "--client-secret", "--db-password", "--auth-token"]:
    v = rnd(ALNUM, 24)
    pos("secret_flag", f"tool deploy {flag} {v} --region eu", v)
v = pw()
pos("netrc_password", f"machine api.github.com login octo password {v}", v)
v = pw()
pos("netrc_password", f"machine example.com\n  login me\n  password {v}\n", v)

# --- multi-line and structured secrets ---------------------------------------------------------
for header, lines in [
    ("RSA PRIVATE KEY", 10),
    ("OPENSSH PRIVATE KEY", 7),
    ("EC PRIVATE KEY", 3),
    ("PRIVATE KEY", 16),
    ("ENCRYPTED PRIVATE KEY", 8),
    ("DSA PRIVATE KEY", 6),
]:
    body = pem_body(lines)
    text = f"-----BEGIN {header}-----\n" + "\n".join(body) + f"\n-----END {header}-----"
    pos("private_key", f"$ cat key.pem\n{text}\n$ ", body[2])
body = pem_body(12)
sa = {
    "type": "service_account",
    "private_key_id": rnd(HEX, 40),
    "private_key": "-----BEGIN PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END PRIVATE KEY-----\n",
    "client_email": "x@p.iam.gserviceaccount.com",
}
pos("private_key", json.dumps(sa, indent=2), body[5])  # literal \n escapes, as in a JSON file
body = pem_body(8)
pos(
    "private_key",
    "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,"
    + rnd(HEX, 32).upper()
    + "\n\n"
    + "\n".join(body)
    + "\n-----END RSA PRIVATE KEY-----",
    body[3],
)
body = pem_body(9)
pos(
    "private_key",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(body) + "\n-----END PGP PRIVATE KEY BLOCK-----",
    body[4],
)
body = pem_body(6)
pos("private_key", "$ head -5 id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body[:4]) + "\n$ ls", body[2])
s1, s2 = b64(12), b64(18)
pos(
    "kubernetes_secret_data",
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n"
    f"  username: {b64(6)}\n  db-pass: {s1}\n",
    s1,
)
pos(
    "kubernetes_secret_data",
    f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: api\nstringData:\n  config.yaml: {s2}\n",
    s2,
)
v = b64(20)
pos("docker_config_auth", f'{{"auths": {{"ghcr.io": {{"auth": "{v}"}}}}}}', v)


# --- negatives ---------------------------------------------------------------------------------
sha = rnd(HEX, 40)
for text in [
    f"commit {sha}\nAuthor: Dev <dev@example.com>",
    f"git checkout {sha[:7]}",
    f"HEAD is now at {sha[:9]} Fix the token refresh",
    f"git show {sha}:src/auth.py",
]:
    neg("git_sha", text)
for text in [f"session {uuid()} started", f'{{"id": "{uuid()}", "parentId": "{uuid()}"}}']:
    neg("uuid", text)
neg("lockfile", f'"integrity": "sha512-{b64(64)}"')
neg("lockfile", f'hash = "sha256:{rnd(HEX, 64)}"')
neg("lockfile", f"requests==2.32.3 --hash=sha256:{rnd(HEX, 64)}")
neg("lockfile", f"FROM python:3.12-slim@sha256:{rnd(HEX, 64)}")
neg("lockfile", f'resolved "https://registry.yarnpkg.com/x/-/x-1.0.0.tgz#{rnd(HEX, 40)}"')
neg("image", f"data:image/png;base64,iVBORw0KGgo{b64(600)}")
neg("base64", f"the file decodes from {b64(300)}")
for text in [
    f'"id": "msg_01{rnd(ALNUM, 22)}"',
    f'"id": "toolu_01{rnd(ALNUM, 22)}"',
    f'"tool_call_id": "call_{rnd(ALNUM, 24)}"',
    f'"id": "fc_{rnd(HEX, 48)}"',
    f"request-id: req_011C{rnd(ALNUM, 20)}",
    f'"id": "chatcmpl-{rnd(ALNUM, 29)}"',
    f'"id": "resp_{rnd(HEX, 48)}"',
    f'"id": "msgbatch_01{rnd(ALNUM, 22)}"',
]:
    neg("provider_id", text)
for text in [
    "max_tokens: 4096",
    '"input_tokens": 1234, "output_tokens": 512',
    "total_tokens=98765",
    "cache_read_input_tokens: 2048",
    "token_count = 17",
    '"tokensBefore": 123456',
    "max_output_tokens = 8192",
]:
    neg("token_count", text)
for text in [
    "Please reset your password and try again.",
    "The token expired, so the request was rejected.",
    "Your password: must be at least 12 characters long.",
    "the password is stored hashed with argon2",
    "We rotate the API key every month.",
    "auth: the middleware checks the token first",
    "use the --token flag to pass it",
    "Enter password: ",
    "Password: ********",
    "Token: the bearer token goes in the header",
    "secret: handled by the vault agent",
]:
    neg("prose", text)
for text in [
    "password_hash = bcrypt.hashpw(pw, salt)",
    "token = get_token()",
    "def get_token(self) -> str:",
    "if not password:\n    raise ValueError",
    "self.password = password",
    'api_key = os.environ["OPENAI_API_KEY"]',
    'token = request.headers.get("Authorization")',
    "const apiKey = await getApiKey(provider);",
    "    password: str",
    "  password: string;",
    "token: Optional[str] = None",
    'password = getpass.getpass("Password: ")',
    "self.user, self.password = user, password",
    "secretName: db-credentials",
    "    secretKeyRef:\n      name: db\n      key: password",
]:
    neg("identifier", text)
for text in [
    "API_KEY=$API_KEY",
    "token: ${GITHUB_TOKEN}",
    "password: <your-password>",
    "OPENAI_API_KEY=sk-...",
    '"apiKey": "xxxxxxxxxxxxxxxx"',
    "password=changeme",
    'password: "***"',
    'curl -H "Authorization: Bearer $TOKEN" https://x',
    "Authorization: Bearer <token>",
    "postgres://user:password@localhost:5432/db",
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
    "password: {{ vault_db_password }}",
    "set TOKEN=%TOKEN%",
    '"apiKey": "LOCAL_OPENAI_API_KEY"',
    "ANTHROPIC_API_KEY=sk-ant-...",
    "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
]:
    neg("placeholder", text)
for text in [
    "password=[REDACTED:password]",
    "Authorization: Bearer [REDACTED:bearer_token]",
    "key:\n[REDACTED:private_key]",
    "DATABASE_URL=postgres://app:[REDACTED:url_password]@db/app",
]:
    neg("redacted", text)
neg("public_key", f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{b64(270)} dev@laptop")
neg("public_key", f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{b64(24)} dev@laptop")
neg("public_key", "-----BEGIN PUBLIC KEY-----\n" + "\n".join(pem_body(5)) + "\n-----END PUBLIC KEY-----")
neg("certificate", "-----BEGIN CERTIFICATE-----\n" + "\n".join(pem_body(12)) + "\n-----END CERTIFICATE-----")
neg(
    "public_key",
    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + "\n".join(pem_body(6)) + "\n-----END PGP PUBLIC KEY BLOCK-----",
)
neg("public_key", f"publishable key pk_live_{rnd(ALNUM, 24)} goes in the frontend")
neg("config", "apiVersion: v1\nkind: ConfigMap\ndata:\n  LOG_LEVEL: debug\n  WORKERS: '4'\n")
for text in [
    "docker run -p 8080:80 nginx",
    "mkdir -p /tmp/build",
    "ssh -p 2222 dev@host",
    "git log -p -3",
    "gcc -pthread main.c",
    "docker run -u 1000:1000 app",
    "git push -u origin main",
    "version=1.2.3",
    "https://github.com/prjct-io/prjct",
    "git@github.com:prjct-io/prjct.git",
    "http://localhost:5173/@fs/home/dev/app/src/main.ts",
    "color: #a1b2c3;",
    "SERVER_AUTH = '1.3.6.1.5.5.7.3.1'",
    'if token == "def":',
    "tokenizer = AutoTokenizer.from_pretrained(name)",
]:
    neg("other", text)

(HERE / "positives.jsonl").write_text("".join(json.dumps(c) + "\n" for c in positives))
(HERE / "negatives.jsonl").write_text("".join(json.dumps(c) + "\n" for c in negatives))
print(len(positives), "positives,", len({c["kind"] for c in positives}), "kinds;", len(negatives), "negatives")
