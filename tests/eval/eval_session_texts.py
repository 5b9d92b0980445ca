# ruff: noqa: E501  (file contents and command output are data: their lines stay as a tool would print them)
"""What happens in the authored eval sessions (see make_eval_sessions.py): files, outputs, turns.

Everything here is invented for the eval: the user (Ines), her colleagues, the `ledgerline`
service and its `infra` repo. File contents are written to look like real project files so the
search has the same kind of noise it meets in real journals.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LL = "/home/ines/work/ledgerline"
INFRA = "/home/ines/work/infra"
HOME = "/home/ines"


# ---------------------------------------------------------------------------------------------
# files of the ledgerline repo (as first read)

README_V1 = """# ledgerline

Invoicing and payment reconciliation for mid-size finance teams. Django 5 + DRF for the API,
Celery for PDFs, webhooks and reminders, Postgres 16, Redis 7.

## Layout

- `ledgerline/` — project package (settings, urls, celery app)
- `billing/` — invoices, payments, Stripe client and webhook handling
- `customers/` — accounts, contacts, tax ids
- `reports/` — month-end exports (CSV, DATEV, XLSX)
- `deploy/` — Dockerfile and the k8s manifests used by CI (prod values live in the infra repo)
- `web/` — the Vue front end (own README)

## Running locally

    cp .env.example .env
    docker compose up -d postgres redis
    uv sync
    uv run python manage.py migrate
    uv run python manage.py runserver
    uv run celery -A ledgerline worker -l info

Tests: `uv run pytest -q` (needs the compose services). Lint: `uv run ruff check .`.

## Environments

- Staging: https://staging.ledgerline.dev (deployed from `main` on every merge)
- Production: https://app.ledgerline.io
- Error tracking: Sentry, project `ledgerline-api` (DSN in the `ledgerline-sentry` secret)

## Release process

Deploys go out on Tuesdays after the 14:00 standup. Tag `vYYYY.MM.N`, the pipeline builds the
image, runs migrations as a pre-deploy job and rolls the api and worker deployments. Anything
touching `billing/migrations/` needs a review from the migrations owner (see CODEOWNERS) before
it is merged; long-running migrations are announced in #ledgerline-ops a day ahead.

## Support

On-call rota and runbooks are in the infra repo (`docs/runbooks/`). Customer-facing incidents
go to #support-escalations with the invoice or customer id.
"""

SETTINGS_BASE = '''"""Settings shared by every environment. Environment files only override what differs."""

from pathlib import Path

import environ

env = environ.Env()
BASE_DIR = Path(__file__).resolve().parent.parent.parent
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

SECRET_KEY = env("DJANGO_SECRET_KEY")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "django_celery_beat",
    "customers",
    "billing",
    "reports",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "ledgerline.middleware.RequestIdMiddleware",
]

ROOT_URLCONF = "ledgerline.urls"
WSGI_APPLICATION = "ledgerline.wsgi.application"

DATABASES = {
    "default": {
        **env.db("DATABASE_URL"),
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
        "OPTIONS": {"application_name": "ledgerline-api"},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env("REDIS_URL", default="redis://localhost:6379/1"),
        "TIMEOUT": 300,  # five minutes; exchange rates and tax tables refresh through celery beat
        "KEY_PREFIX": "ll:v1",
    }
}

# Sessions live in the database so a Redis flush does not log finance users out mid-close.
SESSION_ENGINE = "django.contrib.sessions.backends.db"
SESSION_COOKIE_AGE = 60 * 60 * 12  # 12 hours: finance users keep the app open all day
SESSION_SAVE_EVERY_REQUEST = False
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SECURE = True

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "billing.auth.ApiKeyAuthentication",
    ],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.CursorPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_THROTTLE_RATES": {"api_key": "1200/hour", "anon": "60/hour"},
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "Europe/Berlin"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# Celery (worker processes and queues are set on the command line, see deploy/k8s/worker.yaml)
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="redis://localhost:6379/2")
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 300
CELERY_TASK_SOFT_TIME_LIMIT = 240
CELERY_TASK_ROUTES = {
    "billing.pdf.*": {"queue": "pdf"},
    "billing.webhooks.*": {"queue": "webhooks"},
}

# Stripe: the API version is pinned; the dashboard default is ignored.
STRIPE_SECRET_KEY = env("STRIPE_SECRET_KEY", default="")
STRIPE_WEBHOOK_SECRET = env("STRIPE_WEBHOOK_SECRET", default="")
STRIPE_API_VERSION = "2024-06-20"

# Error tracking
SENTRY_DSN = env("SENTRY_DSN", default="")
SENTRY_TRACES_SAMPLE_RATE = env.float("SENTRY_TRACES_SAMPLE_RATE", default=0.05)

INVOICE_PDF_TEMPLATE = "billing/invoice.html"
INVOICE_DUE_DAYS = 14
DUNNING_REMINDER_DAYS = [3, 10, 30]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "ledgerline.logging.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {"weasyprint": {"level": "WARNING"}, "fontTools": {"level": "ERROR"}},
}
'''

CODEOWNERS_V1 = """# Ledgerline code owners. The last matching pattern wins.
*                            @ines
/billing/                    @ines @jonas
/customers/                  @ines
/reports/                    @jonas
/web/                        @lea
/deploy/                     @marek
# Schema changes: every migrations folder gets one reviewer who knows the prod data sizes.
/**/migrations/              @tomasz
"""

PYPROJECT_V1 = """[project]
name = "ledgerline"
version = "2026.5.1"
requires-python = ">=3.11,<3.12"
dependencies = [
    "django>=5.0,<5.1",
    "djangorestframework>=3.15",
    "django-environ>=0.11",
    "django-filter>=24.2",
    "django-celery-beat>=2.6",
    "celery[redis]>=5.4",
    "psycopg[binary]>=3.1",
    "stripe>=10.0",
    "weasyprint>=62",
    "sentry-sdk[django,celery]>=2.3",
    "whitenoise>=6.6",
    "gunicorn>=22",
]

[dependency-groups]
dev = ["pytest>=8", "pytest-django>=4.8", "factory-boy>=3.3", "freezegun>=1.5", "ruff>=0.4", "responses>=0.25"]

[tool.pytest.ini_options]
DJANGO_SETTINGS_MODULE = "ledgerline.settings.test"
addopts = "-ra --strict-markers"
markers = ["slow: needs the compose services and takes more than a second"]

[tool.ruff]
target-version = "py311"
line-length = 110

[tool.ruff.lint]
select = ["E", "F", "I", "B", "UP", "DJ"]
"""

DOCKERFILE_V1 = """# syntax=docker/dockerfile:1.7
FROM python:3.11-slim AS build
RUN pip install --no-cache-dir uv==0.4.18
WORKDIR /app
COPY pyproject.toml uv.lock ./
RUN uv sync --frozen --no-dev --no-install-project
COPY . .
RUN uv run python manage.py collectstatic --noinput

FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends libpango-1.0-0 libpangoft2-1.0-0 \\
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app /app
ENV PATH="/app/.venv/bin:$PATH" DJANGO_SETTINGS_MODULE=ledgerline.settings.prod
USER 10001
CMD ["gunicorn", "ledgerline.wsgi", "-b", "0.0.0.0:8000", "-w", "4", "--timeout", "60"]
"""

CELERY_PY = '''import os

from celery import Celery
from celery.signals import setup_logging

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ledgerline.settings.prod")

app = Celery("ledgerline")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def _use_django_logging(**kwargs):
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)


app.conf.beat_schedule = {
    "refresh-exchange-rates": {"task": "billing.tasks.refresh_exchange_rates", "schedule": 3600},
    "send-dunning-reminders": {"task": "billing.tasks.send_dunning_reminders", "schedule": 86400},
    "nightly-pdf-batch": {"task": "billing.pdf.render_pending", "schedule": 86400},
}
'''

WORKER_YAML_V1 = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: ledgerline-worker
  labels: {app: ledgerline, component: worker}
spec:
  replicas: 2
  selector:
    matchLabels: {app: ledgerline, component: worker}
  template:
    metadata:
      labels: {app: ledgerline, component: worker}
    spec:
      containers:
        - name: worker
          image: registry.ledgerline.io/ledgerline:latest
          args: ["celery", "-A", "ledgerline", "worker", "-l", "info",
                 "--concurrency=4", "-Q", "default,pdf,webhooks"]
          envFrom:
            - secretRef: {name: ledgerline-env}
          resources:
            requests: {cpu: 500m, memory: 512Mi}
            limits: {memory: 1Gi}
"""

WEBHOOKS_V1 = '''"""Stripe webhook intake: verify, record, hand off to a task."""

import logging

import stripe
from celery import shared_task
from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpResponse, HttpResponseBadRequest
from django.views.decorators.csrf import csrf_exempt

from billing.handlers import HANDLERS
from billing.models import ProcessedWebhookEvent

log = logging.getLogger(__name__)


@csrf_exempt
def stripe_webhook(request):
    try:
        event = stripe.Webhook.construct_event(
            request.body, request.headers.get("Stripe-Signature", ""), settings.STRIPE_WEBHOOK_SECRET
        )
    except (ValueError, stripe.error.SignatureVerificationError):
        return HttpResponseBadRequest()
    handle_event.delay(event["id"], event["type"], event["data"]["object"])
    return HttpResponse(status=202)


@shared_task(bind=True, max_retries=3, default_retry_delay=60, queue="webhooks")
def handle_event(self, event_id, event_type, payload):
    handler = HANDLERS.get(event_type)
    if handler is None:
        return "ignored"
    try:
        with transaction.atomic():
            ProcessedWebhookEvent.objects.create(event_id=event_id, event_type=event_type)
            handler(payload)
    except IntegrityError:
        log.info("stripe event %s already processed", event_id)
        return "duplicate"
    except stripe.error.APIConnectionError as exc:
        raise self.retry(exc=exc)
    return "ok"
'''

MODELS_WEBHOOK_SNIPPET = '''class ProcessedWebhookEvent(models.Model):
    """One row per Stripe event we handled. Stripe delivers at least once, so the unique
    event_id is what turns a redelivery into a no-op (the insert fails inside the handler's
    transaction and nothing else is written)."""

    event_id = models.CharField(max_length=255, unique=True)
    event_type = models.CharField(max_length=100)
    processed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "processed_webhook_events"
        indexes = [models.Index(fields=["processed_at"])]


[212 more lines in file. Use offset=160 to continue.]'''

STRIPE_CLIENT = '''import stripe
from django.conf import settings


def client() -> stripe.StripeClient:
    return stripe.StripeClient(
        settings.STRIPE_SECRET_KEY,
        stripe_version=settings.STRIPE_API_VERSION,
        max_network_retries=2,
    )


def subscription_id(invoice: dict) -> str | None:
    return invoice.get("subscription")
'''

# ---------------------------------------------------------------------------------------------
# infra repo

RUNBOOK_WORKERS = """# Runbook: ledgerline celery workers

Owner: platform (Marek). Last reviewed 2026-03.

## What runs where

The `ledgerline-worker` deployment consumes three queues: `default` (reminders, exchange rates,
exports), `pdf` (invoice and statement rendering) and `webhooks` (Stripe events). Beat runs as a
separate single-replica deployment; never scale it above one, or scheduled jobs run twice.

Each pod starts one Celery main process that forks a pool of child processes. The size of the
pool is the `--concurrency` flag in the deployment args; it is the number of tasks a pod works
on at the same time. More processes means more throughput for the PDF queue, but every child
holds its own Django database connection, its own copy of the WeasyPrint font tables once it has
rendered a PDF, and its own Stripe HTTP session. Memory per pod grows with the pool.

## Symptoms and first checks

- Queue backlog growing: `celery -A ledgerline inspect active` on a worker pod, then the
  `ledgerline_queue_length` panel. A long `pdf` queue after the nightly batch is normal until
  about 03:30.
- Pods restarting: `kubectl -n ledgerline describe pod <pod>`; look at Last State. Exit code 137
  means the kernel killed the container, usually at the memory limit.
- Tasks stuck in `retry`: webhook tasks retry on Stripe connection errors; a burst of retries
  during a Stripe incident is expected and drains on its own.
- Database errors: each child keeps a connection for CONN_MAX_AGE seconds; through pgbouncer the
  limit that matters is the pool size per database and user, not Postgres max_connections.

## Knobs

| knob | where | notes |
|---|---|---|
| pool size | `--concurrency` in worker args | processes per pod |
| recycling | `--max-tasks-per-child` | a child exits after N tasks and a fresh one is forked |
| memory | `resources.limits.memory` | kill threshold for the whole pod |
| prefetch | `CELERY_WORKER_PREFETCH_MULTIPLIER` | keep at 1 with acks_late |
| time limits | `CELERY_TASK_TIME_LIMIT` / soft limit | hard kill after 300 s |
| retries | per task (`max_retries`, backoff) | see billing/webhooks.py |

Changing any of these is a normal PR to this repo; Argo syncs it within five minutes. Announce
changes to pool size in #ledgerline-ops because they change how many database connections the
workers open.

## Restarting safely

`kubectl -n ledgerline rollout restart deploy/ledgerline-worker` drains gracefully: the main
process stops taking tasks, waits for running ones (up to the hard time limit) and exits. Tasks
are acked late, so a task that was killed mid-run is delivered again; all tasks must be
idempotent. PDF rendering checks for an existing file before rendering.

## Escalation

If the backlog keeps growing for more than an hour outside the nightly batch, page the
on-call engineer. For anything involving payments state, involve billing (Ines, Jonas).
"""

PGBOUNCER_V1 = """[databases]
ledgerline = host=pg-main.db.svc port=5432 dbname=ledgerline
ledgerline_reports = host=pg-main.db.svc port=5432 dbname=ledgerline application_name=reports

[pgbouncer]
listen_addr = 0.0.0.0
listen_port = 6432
auth_type = scram-sha-256
auth_file = /etc/pgbouncer/userlist.txt
pool_mode = transaction
max_client_conn = 400
default_pool_size = 20
reserve_pool_size = 5
reserve_pool_timeout = 3
server_idle_timeout = 300
log_connections = 0
log_disconnections = 0
stats_period = 60
"""

INFRA_WORKER_YAML_V1 = WORKER_YAML_V1.replace("image: registry.ledgerline.io/ledgerline:latest",
                                              "image: registry.ledgerline.io/ledgerline:2026.5.3")

HELM_VALUES_V1 = """# values for the ledgerline chart in production
image:
  repository: registry.ledgerline.io/ledgerline
  tag: 2026.5.3
api:
  replicas: 3
  gunicornWorkers: 4
ingress:
  host: app.ledgerline.io
  stagingHost: staging.ledgerline.dev
errorTracking:
  provider: sentry
  dsnSecret: ledgerline-sentry
  tracesSampleRate: 0.05
"""


# ---------------------------------------------------------------------------------------------
# the sessions


@dataclass
class Script:
    cwd: str
    start: str
    play: Callable[[Any], None]


def s1_onboarding(j: Any) -> None:
    j.user("first day back on ledgerline after the reorg. give me a quick tour: read the README, "
           "ledgerline/settings/base.py, CODEOWNERS and pyproject.toml and tell me what I need to know")
    j.tool("read", {"path": "README.md"}, README_V1, text="Reading the four files.")
    j.tool("read", {"path": "ledgerline/settings/base.py"}, SETTINGS_BASE)
    j.tool("read", {"path": "CODEOWNERS"}, CODEOWNERS_V1)
    j.tool("read", {"path": "pyproject.toml"}, PYPROJECT_V1)
    j.assistant(
        "Quick tour of ledgerline as it stands:\n\n"
        "- **Stack**: Django 5 + DRF, Celery on Redis, Postgres 16. Python 3.11 only (`requires-python = "
        "\">=3.11,<3.12\"`, ruff targets py311).\n"
        "- **Logins**: sessions are DB-backed and last 12 hours (`SESSION_COOKIE_AGE = 60 * 60 * 12`), not "
        "refreshed on every request.\n"
        "- **Stripe**: pinned to API version `2024-06-20` in settings; the dashboard default is ignored.\n"
        "- **Migrations**: CODEOWNERS gives every `migrations/` folder to @tomasz, so Tomasz reviews all "
        "schema changes.\n"
        "- **Releases**: deploys go out on Tuesdays after the 14:00 standup; migrations run as a pre-deploy job.\n"
        "- **Environments**: staging is https://staging.ledgerline.dev, prod https://app.ledgerline.io; errors "
        "go to Sentry (project `ledgerline-api`).\n"
        "- **Cache**: Redis, 5 minute default timeout, key prefix `ll:v1`.")
    j.user("invoice PDFs come out as blank pages on staging (just the table lines, no text) but render fine "
           "on my laptop. can you look?")
    j.tool("bash", {"command": "kubectl -n ledgerline-staging logs deploy/ledgerline-worker --since=2h "
                               "| grep -i -E 'weasyprint|fontconfig' | tail -n 6"},
           "Fontconfig error: Cannot load default config file: No such file: (null)\n"
           "{\"level\": \"WARNING\", \"logger\": \"weasyprint\", \"msg\": \"Ignored `font-family: Inter, "
           "sans-serif` at 12:3, no usable font found.\"}\n"
           "{\"level\": \"WARNING\", \"logger\": \"weasyprint\", \"msg\": \"Ignored `font-family: Inter, "
           "sans-serif` at 12:3, no usable font found.\"}\n"
           "{\"level\": \"INFO\", \"logger\": \"billing.pdf\", \"msg\": \"rendered invoice INV-7731 (0 glyphs)\"}\n"
           "Fontconfig error: Cannot load default config file: No such file: (null)\n"
           "{\"level\": \"INFO\", \"logger\": \"billing.pdf\", \"msg\": \"rendered invoice INV-7732 (0 glyphs)\"}\n",
           thinking="Blank text but table borders present: fonts missing in the container, not a template bug.")
    j.tool("read", {"path": "deploy/Dockerfile"}, DOCKERFILE_V1)
    j.tool("edit", {"path": "deploy/Dockerfile",
                    "oldText": "libpango-1.0-0 libpangoft2-1.0-0 \\",
                    "newText": "libpango-1.0-0 libpangoft2-1.0-0 fontconfig fonts-dejavu-core fonts-inter \\"},
           "Successfully replaced text in deploy/Dockerfile.",
           text="The runtime stage is `python:3.11-slim` with Pango but no fonts and no fontconfig at all.")
    j.assistant(
        "Found it: the slim runtime image has Pango but not a single font file, and fontconfig cannot even "
        "load its config. WeasyPrint lays out the page, draws the table borders, and every text run ends up "
        "with zero glyphs (`rendered invoice INV-7731 (0 glyphs)`). Your laptop has system fonts, so it "
        "works there. I added `fontconfig fonts-dejavu-core fonts-inter` to the runtime stage of "
        "`deploy/Dockerfile`; the next staging build should render text again.")
    j.user("ok. how are the celery workers set up?")
    j.tool("read", {"path": "ledgerline/celery.py"}, CELERY_PY, text="Reading the Celery app and the worker manifest.")
    j.tool("read", {"path": "deploy/k8s/worker.yaml"}, WORKER_YAML_V1)
    j.assistant(
        "One Celery app (`ledgerline/celery.py`) with beat jobs for exchange rates (hourly), dunning "
        "reminders and the nightly PDF batch. The worker deployment runs 2 replicas, each with "
        "`--concurrency=4` prefork processes consuming `default,pdf,webhooks`, memory limit 1Gi. Tasks are "
        "acked late with prefetch 1.")
    j.user("and the stripe webhook task: how many retries does it get when our handler fails?")
    j.tool("read", {"path": "billing/webhooks.py"}, WEBHOOKS_V1)
    j.assistant(
        "`handle_event` retries 3 times, one minute apart (`max_retries=3, default_retry_delay=60`), and only "
        "on `stripe.error.APIConnectionError`; any other exception fails the task right away. Duplicate "
        "deliveries are caught by the unique `ProcessedWebhookEvent` insert.")


def s2_stripe(j: Any) -> None:
    j.user("stripe dashboard nags that 2024-06-20 won't get the new invoice fields. upgrade us to "
           "2025-03-31.basil and tell me what breaks")
    j.tool("grep", {"pattern": "STRIPE_API_VERSION|stripe_version", "path": "."},
           "ledgerline/settings/base.py:121: STRIPE_API_VERSION = \"2024-06-20\"\n"
           "billing/client.py:8:         stripe_version=settings.STRIPE_API_VERSION,\n"
           "billing/tests/test_client.py:14:     assert c._requestor._options.stripe_version == "
           "settings.STRIPE_API_VERSION")
    j.tool("read", {"path": "billing/client.py"}, STRIPE_CLIENT)
    j.tool("edit", {"path": "ledgerline/settings/base.py", "oldText": "STRIPE_API_VERSION = \"2024-06-20\"",
                    "newText": "STRIPE_API_VERSION = \"2025-03-31.basil\""},
           "Successfully replaced text in ledgerline/settings/base.py.")
    j.tool("bash", {"command": "uv run pytest -q billing -k stripe"},
           "..F.F....                                                                [100%]\n"
           "=================================== FAILURES ===================================\n"
           "____________________ test_invoice_paid_links_subscription _____________________\n"
           "billing/tests/test_handlers.py:88: in test_invoice_paid_links_subscription\n"
           "    assert inv.subscription_id == \"sub_1Pq\"\n"
           "E   AssertionError: assert None == 'sub_1Pq'\n"
           "_______________________ test_client_subscription_lookup _______________________\n"
           "billing/tests/test_client.py:31: in test_client_subscription_lookup\n"
           "    assert subscription_id(fixture(\"invoice_basil.json\")) == \"sub_1Pq\"\n"
           "E   AssertionError: assert None == 'sub_1Pq'\n"
           "=========================== short test summary info ============================\n"
           "FAILED billing/tests/test_handlers.py::test_invoice_paid_links_subscription - AssertionError\n"
           "FAILED billing/tests/test_client.py::test_client_subscription_lookup - AssertionError\n"
           "2 failed, 7 passed in 1.84s\n\n\nCommand exited with code 1",
           error=True)
    j.tool("edit", {"path": "billing/client.py",
                    "oldText": "    return invoice.get(\"subscription\")",
                    "newText": "    details = (invoice.get(\"parent\") or {}).get(\"subscription_details\") or {}\n"
                               "    return details.get(\"subscription\") or invoice.get(\"subscription\")"},
           "Successfully replaced text in billing/client.py.",
           text="With basil the invoice no longer carries `subscription` at the top level; it moved under "
                "`parent.subscription_details`. Reading it from there, with the old field as fallback.")
    j.tool("bash", {"command": "uv run pytest -q billing -k stripe"},
           ".........                                                                [100%]\n9 passed in 1.71s\n")
    j.assistant("We're now pinned to Stripe API version `2025-03-31.basil`. The only break was the subscription "
                "link on invoices (moved to `parent.subscription_details`); `subscription_id()` reads the new "
                "place and falls back to the old field for events created before the switch. 9 stripe tests pass.")
    j.user("also 3 retries is not enough when stripe has a bad minute. make the webhook task retry 5 times "
           "with exponential backoff")
    j.tool("edit", {"path": "billing/webhooks.py",
                    "oldText": "@shared_task(bind=True, max_retries=3, default_retry_delay=60, queue=\"webhooks\")",
                    "newText": "@shared_task(bind=True, max_retries=5, retry_backoff=True, retry_backoff_max=600,\n"
                               "             retry_jitter=True, queue=\"webhooks\")"},
           "Successfully replaced text in billing/webhooks.py.")
    j.assistant("Webhook tasks now retry up to 5 times with exponential backoff and jitter, capped at 10 minutes "
                "between attempts (`max_retries=5, retry_backoff=True, retry_backoff_max=600`).")
    j.user("what happens if stripe sends us the same event twice? does the retry make that worse?")
    j.tool("read", {"path": "billing/models.py", "offset": 148, "limit": 12}, MODELS_WEBHOOK_SNIPPET)
    j.assistant("Nothing bad: every handled event is recorded in `processed_webhook_events` with a unique "
                "`event_id`, inside the same transaction as the handler. A redelivery (or our own retry after a "
                "crash) fails that insert with an IntegrityError, the transaction rolls back and the task returns "
                "\"duplicate\" without touching invoices again.")


SETTINGS_SESSION_SLICE = '''# Sessions live in the database so a Redis flush does not log finance users out mid-close.
SESSION_ENGINE = "django.contrib.sessions.backends.db"
SESSION_COOKIE_AGE = 60 * 60 * 12  # 12 hours: finance users keep the app open all day
SESSION_SAVE_EVERY_REQUEST = False
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SECURE = True

[97 more lines in file. Use offset=70 to continue.]'''


def s3_security(j: Any) -> None:
    j.user("security review notes from Hanna are in. 12 hour sessions are too long for finance data: cut logins "
           "to 8 hours. and Tomasz moved to the payments team, Priya reviews migrations from now on. update "
           "settings and CODEOWNERS")
    j.tool("read", {"path": "ledgerline/settings/base.py", "offset": 63, "limit": 7}, SETTINGS_SESSION_SLICE)
    j.tool("edit", {"path": "ledgerline/settings/base.py",
                    "oldText": "SESSION_COOKIE_AGE = 60 * 60 * 12  # 12 hours: finance users keep the app open all day",
                    "newText": "SESSION_COOKIE_AGE = 60 * 60 * 8  # 8 hours (security review 2026-05, Hanna)"},
           "Successfully replaced text in ledgerline/settings/base.py.")
    j.tool("edit", {"path": "CODEOWNERS", "oldText": "/**/migrations/              @tomasz",
                    "newText": "/**/migrations/              @priya"},
           "Successfully replaced text in CODEOWNERS.")
    j.tool("bash", {"command": "uv run pytest -q -k 'session or login'"},
           "......                                                                   [100%]\n6 passed in 0.92s\n")
    j.assistant("Logins now expire after 8 hours (`SESSION_COOKIE_AGE = 60 * 60 * 8`), and @priya owns every "
                "`migrations/` folder in CODEOWNERS, so Priya is the required reviewer for migrations. The session "
                "and login tests pass.")
    j.user("does SESSION_SAVE_EVERY_REQUEST matter here? someone in the review asked")
    j.assistant("With `SESSION_SAVE_EVERY_REQUEST = False` the expiry is fixed from login: the cookie age counts "
                "from when the session was created (or last modified), so an active user is still logged out when "
                "the age runs out. Setting it to True would make it a sliding window, at the price of a session "
                "write on every request. The review asked for a hard cap, so leaving it False is what they want.")
    j.user("one more: deploys move to Thursdays, the Tuesday slot clashes with the finance close. put it in the "
           "README")
    j.tool("edit", {"path": "README.md", "oldText": "Deploys go out on Tuesdays after the 14:00 standup.",
                    "newText": "Deploys go out on Thursdays after the 14:00 standup (moved from Tuesday: it clashed "
                               "with the finance close)."},
           "Successfully replaced text in README.md.")
    j.assistant("README updated: releases now ship on Thursdays after the 14:00 standup.")


def s4_infra(j: Any) -> None:
    j.user("celery workers on prod keep getting OOMKilled since the nightly PDF batch went live, pods restart "
           "every 40 minutes or so. dmesg on the node says: Memory cgroup out of memory: Killed process 48211 "
           "(celery) total-vm:1843212kB, anon-rss:1048120kB")
    j.tool("bash", {"command": "kubectl -n ledgerline describe pod -l component=worker | grep -A6 'Last State'"},
           "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n"
           "      Started:      Wed, 27 May 2026 18:02:11 +0000\n      Finished:     Wed, 27 May 2026 18:41:57 +0000\n"
           "    Ready:          True\n    Restart Count:  9\n--\n    Last State:     Terminated\n"
           "      Reason:       OOMKilled\n      Exit Code:    137\n      Started:      Wed, 27 May 2026 18:09:40 +0000\n"
           "      Finished:     Wed, 27 May 2026 18:47:03 +0000\n    Ready:          True\n    Restart Count:  8\n")
    j.tool("read", {"path": "docs/runbooks/celery-workers.md"}, RUNBOOK_WORKERS)
    j.tool("read", {"path": "k8s/ledgerline/worker.yaml"}, INFRA_WORKER_YAML_V1)
    j.assistant(
        "The pods die at the 1Gi limit, and they die gradually rather than on one big task. That is the "
        "prefork pool never being recycled: each child that renders a PDF keeps WeasyPrint's font and image "
        "caches for the rest of its life, so after a few hundred invoices every child sits at ~250 MB and "
        "four of them plus the main process cross 1Gi. Fix: `--max-tasks-per-child=200` so a child is "
        "replaced after 200 tasks and its memory returned, plus a 2Gi limit for headroom. With recycling in "
        "place the pods can run 8 processes instead of 4, which also clears the nightly pdf backlog sooner.",
        thinking="Restart every ~40 min, rss climbing: leak-like growth per child, classic for long-lived "
                 "prefork children with caches.")
    j.tool("edit", {"path": "k8s/ledgerline/worker.yaml",
                    "oldText": "\"--concurrency=4\", \"-Q\", \"default,pdf,webhooks\"]",
                    "newText": "\"--concurrency=8\", \"--max-tasks-per-child=200\",\n"
                               "                 \"-Q\", \"default,pdf,webhooks\"]"},
           "Successfully replaced text in k8s/ledgerline/worker.yaml.")
    j.tool("edit", {"path": "k8s/ledgerline/worker.yaml", "oldText": "limits: {memory: 1Gi}",
                    "newText": "limits: {memory: 2Gi}"},
           "Successfully replaced text in k8s/ledgerline/worker.yaml.")
    j.user("8 processes × 2 pods plus the api — does pgbouncer cope?")
    j.tool("read", {"path": "k8s/pgbouncer/pgbouncer.ini"}, PGBOUNCER_V1)
    j.assistant("`default_pool_size = 20` per database/user pair. Workers alone can now ask for 16 server "
                "connections and the 3 api pods run 4 gunicorn workers each, so at peak we'd need ~28 and "
                "queue in pgbouncer. Raising the pool to 40 keeps us well under Postgres' 100.")
    j.tool("edit", {"path": "k8s/pgbouncer/pgbouncer.ini", "oldText": "default_pool_size = 20",
                    "newText": "default_pool_size = 40"},
           "Successfully replaced text in k8s/pgbouncer/pgbouncer.ini.")
    j.user("while we're here: the sentry bill doubled. marek wants us to self-host GlitchTip on the infra "
           "cluster, it speaks the sentry protocol. switch ledgerline to it. and staging moves to "
           "stg.ledgerline.io, we're dropping the .dev zone")
    j.tool("read", {"path": "helm/ledgerline/values-prod.yaml"}, HELM_VALUES_V1)
    j.tool("edit", {"path": "helm/ledgerline/values-prod.yaml",
                    "oldText": "errorTracking:\n  provider: sentry\n  dsnSecret: ledgerline-sentry",
                    "newText": "errorTracking:\n  provider: glitchtip  # self-hosted, https://glitchtip.internal.ledgerline.io\n"
                               "  dsnSecret: ledgerline-glitchtip"},
           "Successfully replaced text in helm/ledgerline/values-prod.yaml.")
    j.tool("edit", {"path": "helm/ledgerline/values-prod.yaml", "oldText": "stagingHost: staging.ledgerline.dev",
                    "newText": "stagingHost: stg.ledgerline.io"},
           "Successfully replaced text in helm/ledgerline/values-prod.yaml.")
    j.assistant(
        "Done:\n- workers: `--concurrency=8 --max-tasks-per-child=200`, memory limit 2Gi\n"
        "- pgbouncer: `default_pool_size = 40`\n"
        "- error tracking: ledgerline now reports to our self-hosted GlitchTip "
        "(https://glitchtip.internal.ledgerline.io); the Sentry SDK stays, only the DSN secret changes to "
        "`ledgerline-glitchtip`\n- staging host: https://stg.ledgerline.io\n\n"
        "Argo will sync within five minutes; I'd post the pool-size change in #ledgerline-ops as the runbook asks.")


MODELS_INVOICE = '''import datetime as dt
from decimal import Decimal

from django.db import models, transaction
from django.utils import timezone

from customers.models import Customer


class InvoiceStatus(models.TextChoices):
    DRAFT = "draft"
    OPEN = "open"
    PAID = "paid"
    VOID = "void"
    UNCOLLECTIBLE = "uncollectible"


class Invoice(models.Model):
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="invoices")
    number = models.CharField(max_length=32, blank=True, db_index=True)
    status = models.CharField(max_length=16, choices=InvoiceStatus.choices, default=InvoiceStatus.DRAFT)
    currency = models.CharField(max_length=3, default="EUR")
    issued_at = models.DateTimeField(null=True, blank=True)
    due_at = models.DateTimeField(null=True, blank=True)
    subtotal = models.DecimalField(max_digits=14, decimal_places=2, default=Decimal("0"))
    tax = models.DecimalField(max_digits=14, decimal_places=2, default=Decimal("0"))
    total = models.DecimalField(max_digits=14, decimal_places=2, default=Decimal("0"))
    stripe_invoice_id = models.CharField(max_length=255, blank=True, null=True, unique=True)
    subscription_id = models.CharField(max_length=255, blank=True, null=True)
    pdf = models.FileField(upload_to="invoices/%Y/%m/", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-issued_at", "-id"]
        indexes = [models.Index(fields=["customer", "status"]), models.Index(fields=["due_at"])]

    def __str__(self) -> str:
        return self.number or f"draft-{self.pk}"

    def issue(self) -> None:
        # TODO: number assignment is a max()+1 over the table, racy under concurrent issuing
        with transaction.atomic():
            last = Invoice.objects.select_for_update().exclude(number="").order_by("-id").first()
            seq = int(last.number.rsplit("-", 1)[1]) + 1 if last else 1
            self.number = f"INV-{seq}"
            self.status = InvoiceStatus.OPEN
            self.issued_at = timezone.now()
            self.due_at = self.issued_at + dt.timedelta(days=14)
            self.save()


class InvoiceLine(models.Model):
    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="lines")
    description = models.CharField(max_length=500)
    quantity = models.DecimalField(max_digits=12, decimal_places=3, default=Decimal("1"))
    unit_price = models.DecimalField(max_digits=14, decimal_places=4)
    tax_rate = models.DecimalField(max_digits=5, decimal_places=4, default=Decimal("0.19"))
    period_start = models.DateField(null=True, blank=True)
    period_end = models.DateField(null=True, blank=True)

    @property
    def amount(self) -> Decimal:
        return (self.quantity * self.unit_price).quantize(Decimal("0.01"))


class Payment(models.Model):
    invoice = models.ForeignKey(Invoice, on_delete=models.PROTECT, related_name="payments")
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    received_at = models.DateTimeField()
    method = models.CharField(max_length=32)
    reference = models.CharField(max_length=255, blank=True)
    stripe_payment_intent = models.CharField(max_length=255, blank=True, null=True, unique=True)


class CreditNote(models.Model):
    invoice = models.ForeignKey(Invoice, on_delete=models.PROTECT, related_name="credit_notes")
    number = models.CharField(max_length=32, blank=True)
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    reason = models.CharField(max_length=255)
    issued_at = models.DateTimeField(default=timezone.now)


class DunningReminder(models.Model):
    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="reminders")
    level = models.PositiveSmallIntegerField()
    sent_at = models.DateTimeField(auto_now_add=True)
    channel = models.CharField(max_length=16, default="email")
'''

MIGRATIONS_LS = """0001_initial.py
0002_invoice_currency.py
0003_payment.py
0004_invoice_pdf.py
0005_creditnote.py
0006_invoice_stripe_ids.py
0007_dunningreminder.py
0008_invoiceline_period.py
0009_auto_20250611_0912.py
0010_invoice_due_at_index.py
0011_processedwebhookevent.py
0012_payment_reference.py
0013_invoice_subscription_id.py
0014_creditnote_number.py
0015_auto_20250902_1404.py
0016_invoiceline_tax_rate_precision.py
0017_invoice_customer_status_index.py
0018_remove_invoice_legacy_number.py
0019_processedwebhookevent_index.py
0020_payment_method_length.py
0021_invoice_updated_at.py
0022_backfill_updated_at.py
0023_dunningreminder_channel.py
0024_creditnote_reason.py
0025_invoice_uncollectible.py
0026_auto_20260112_1630.py
0027_invoice_number_index.py
0028_payment_stripe_intent_unique.py
0029_auto_20260402_1011.py
0030_invoice_pdf_upload_path.py
__init__.py
"""

MIGRATION_0031 = '''from django.db import migrations, models


def backfill(apps, schema_editor):
    Invoice = apps.get_model("billing", "Invoice")
    Counter = apps.get_model("billing", "InvoiceNumberCounter")
    years = {}
    for inv in Invoice.objects.exclude(number="").order_by("issued_at", "id").iterator(chunk_size=2000):
        year = inv.issued_at.year
        years[year] = years.get(year, 0) + 1
        inv.number = f"INV-{year}-{years[year]:05d}"
        inv.save(update_fields=["number"])
    for year, value in years.items():
        Counter.objects.create(year=year, value=value)


class Migration(migrations.Migration):
    dependencies = [("billing", "0030_invoice_pdf_upload_path")]

    operations = [
        migrations.CreateModel(
            name="InvoiceNumberCounter",
            fields=[
                ("year", models.PositiveSmallIntegerField(primary_key=True, serialize=False)),
                ("value", models.PositiveIntegerField(default=0)),
            ],
            options={"db_table": "invoice_number_counters"},
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="invoice",
            constraint=models.UniqueConstraint(fields=["number"], condition=~models.Q(number=""),
                                               name="invoice_number_unique"),
        ),
    ]
'''

PYTEST_INVOICE_FAIL = """..F.FF                                                                   [100%]
=================================== FAILURES ===================================
_________________ test_invoice_number_resets_each_year[2027] __________________

    @freeze_time("2027-01-02")
    def test_invoice_number_resets_each_year(issued_invoice_2026):
        inv = InvoiceFactory()
        inv.issue()
>       assert inv.number == "INV-2027-00001"
E       AssertionError: assert 'INV-2026-00004' == 'INV-2027-00001'
E         - INV-2027-00001
E         + INV-2026-00004

billing/tests/test_invoice_number.py:41: AssertionError
___________________ test_invoice_number_no_gap_after_rollback __________________

    def test_invoice_number_no_gap_after_rollback():
        with pytest.raises(RuntimeError), transaction.atomic():
            InvoiceFactory().issue()
            raise RuntimeError("payment provider down")
        inv = InvoiceFactory()
        inv.issue()
>       assert inv.number == "INV-2026-00001"
E       AssertionError: assert 'INV-2026-00002' == 'INV-2026-00001'

billing/tests/test_invoice_number.py:58: AssertionError
________________ test_invoice_number_concurrent_issue_is_unique ________________

    @pytest.mark.django_db(transaction=True)
    def test_invoice_number_concurrent_issue_is_unique():
        numbers = issue_in_threads(8)
>       assert len(set(numbers)) == 8
E       assert 7 == 8
E        +  where 7 = len({'INV-2026-00001', 'INV-2026-00002', 'INV-2026-00003', 'INV-2026-00004', ...})

billing/tests/test_invoice_number.py:73: AssertionError
=========================== short test summary info ============================
FAILED billing/tests/test_invoice_number.py::test_invoice_number_resets_each_year[2027] - AssertionError
FAILED billing/tests/test_invoice_number.py::test_invoice_number_no_gap_after_rollback - AssertionError
FAILED billing/tests/test_invoice_number.py::test_invoice_number_concurrent_issue_is_unique - assert 7 == 8
3 failed, 3 passed in 4.12s


Command exited with code 1"""

PYTEST_BILLING_PASS = """............................................................................... [ 61%]
..................................................                               [100%]
129 passed, 2 skipped in 38.27s
"""

EXPLAIN_OUTPUT = """                                                         QUERY PLAN
-----------------------------------------------------------------------------------------------------------------------------
 Update on invoice_number_counters  (cost=0.15..8.17 rows=0 width=0) (actual time=0.061..0.062 rows=0 loops=1)
   ->  Index Scan using invoice_number_counters_pkey on invoice_number_counters  (cost=0.15..8.17 rows=1 width=10) (actual time=0.019..0.020 rows=1 loops=1)
         Index Cond: (year = 2026)
 Planning Time: 0.088 ms
 Execution Time: 0.097 ms
(5 rows)

                                                      QUERY PLAN
----------------------------------------------------------------------------------------------------------------------
 LockRows  (cost=0.15..8.18 rows=1 width=16) (actual time=0.031..0.032 rows=1 loops=1)
   ->  Index Scan using invoice_number_counters_pkey on invoice_number_counters  (cost=0.15..8.17 rows=1 width=16) (actual time=0.017..0.018 rows=1 loops=1)
         Index Cond: (year = 2026)
 Planning Time: 0.074 ms
 Execution Time: 0.049 ms
(5 rows)

 year | value | sequence_equivalent_last_value | sequence_equivalent_is_called
------+-------+--------------------------------+-------------------------------
 2025 |  8124 |                           8127 | t
 2026 |  3391 |                           3396 | t
(2 rows)
"""


def s5_numbering(j: Any) -> None:
    j.user("auditors want invoice numbers that are gapless within a year and restart every january: "
           "INV-2026-00001. right now it's a global INV-<n>. design it and write the migration")
    j.tool("read", {"path": "billing/models.py"}, MODELS_INVOICE, text="Reading the current model first.")
    j.tool("bash", {"command": "ls billing/migrations"}, MIGRATIONS_LS)
    j.assistant(
        "Plan: a tiny `invoice_number_counters` table with one row per year. `Invoice.issue()` locks the "
        "row for the invoice's year (`SELECT ... FOR UPDATE`), increments it and formats "
        "`INV-{year}-{value:05d}` in the same transaction that saves the invoice. I'm deliberately not using a "
        "Postgres sequence: sequences are not transactional, so a rolled-back issue burns a number and leaves "
        "a gap, which is exactly what the auditors object to. A locked counter row only advances when the "
        "invoice commits. The cost is that issuing is serialized per year, which is fine at our volume (a few "
        "hundred invoices a day).",
        thinking="Gapless requirement rules out sequences (nextval is never rolled back). Counter row + row lock.")
    j.tool("write", {"path": "billing/migrations/0031_invoice_sequence.py", "content": MIGRATION_0031},
           f"Successfully wrote {len(MIGRATION_0031.encode())} bytes to billing/migrations/0031_invoice_sequence.py")
    j.tool("bash", {"command": "uv run pytest -q billing/tests/test_invoice_number.py -k invoice_number"},
           PYTEST_INVOICE_FAIL, error=True,
           text="Migration written; the new tests run against the old `issue()` first, to see them fail.")
    j.tool("edit", {"path": "billing/models.py",
                    "oldText": "        # TODO: number assignment is a max()+1 over the table, racy under concurrent issuing\n"
                               "        with transaction.atomic():\n"
                               "            last = Invoice.objects.select_for_update().exclude(number=\"\").order_by(\"-id\").first()\n"
                               "            seq = int(last.number.rsplit(\"-\", 1)[1]) + 1 if last else 1\n"
                               "            self.number = f\"INV-{seq}\"",
                    "newText": "        with transaction.atomic():\n"
                               "            self.issued_at = timezone.now()\n"
                               "            year = self.issued_at.year\n"
                               "            counter, _ = InvoiceNumberCounter.objects.select_for_update().get_or_create(year=year)\n"
                               "            counter.value += 1\n"
                               "            counter.save(update_fields=[\"value\"])\n"
                               "            self.number = f\"INV-{year}-{counter.value:05d}\""},
           "Successfully replaced text in billing/models.py.")
    j.tool("bash", {"command": "psql \"$DATABASE_URL\" -f scripts/explain_invoice_counter.sql"}, EXPLAIN_OUTPUT)
    j.assistant("The counter update is an index scan on the primary key, ~0.1 ms, and the row lock only "
                "blocks other issues in the same year. The comparison at the bottom also shows why a sequence "
                "would not do: on a copy of prod it would already be 3 numbers ahead of the real count for 2026 "
                "(rolled-back issues).")
    j.user("good. unrelated: let's target python 3.13 for the next release, 3.11 is getting old. bump the "
           "project and the image")
    j.tool("edit", {"path": "pyproject.toml", "oldText": "requires-python = \">=3.11,<3.12\"",
                    "newText": "requires-python = \">=3.13,<3.14\""},
           "Successfully replaced text in pyproject.toml.")
    j.tool("edit", {"path": "deploy/Dockerfile", "oldText": "FROM python:3.11-slim AS build",
                    "newText": "FROM python:3.13-slim AS build"},
           "Successfully replaced text in deploy/Dockerfile.")
    j.tool("edit", {"path": "deploy/Dockerfile", "oldText": "FROM python:3.11-slim\n",
                    "newText": "FROM python:3.13-slim\n"},
           "Successfully replaced text in deploy/Dockerfile.")
    j.assistant("Project and both Dockerfile stages now target Python 3.13 (`requires-python = \">=3.13,<3.14\"`). "
                "ruff's target-version still says py311; I'll bump it with the first 3.13-only syntax.")
    j.idle(95)
    j.compact(
        "## Goal\nGapless per-year invoice numbers (INV-YYYY-NNNNN) for the auditors\n\n"
        "## Constraints & Preferences\n- Numbers must have no gaps within a year and restart every January\n"
        "- Tests: `uv run pytest -q`\n\n"
        "## Progress\n### Done\n- [x] Migration billing/0031_invoice_sequence.py: invoice_number_counters table "
        "(one row per year), backfill of existing numbers, unique constraint on number\n"
        "- [x] Invoice.issue() locks the year's counter row (SELECT ... FOR UPDATE) and formats "
        "INV-{year}-{value:05d}\n- [x] Project and image moved to Python 3.13\n\n### In Progress\n"
        "- [ ] Rerun the invoice number tests after the model change\n\n"
        "## Key Decisions\n- **Counter row instead of a Postgres sequence**: sequences are not transactional, a "
        "rolled-back issue would leave a gap\n- **Target Python 3.13** for the next release\n\n"
        "## Next Steps\n1. Run the billing tests\n2. Check how long the backfill takes on prod-sized data\n\n"
        "## Critical Context\n- 3 tests failed against the old issue(): yearly reset, gap after rollback, "
        "concurrent uniqueness",
        read=["billing/models.py"],
        modified=["billing/migrations/0031_invoice_sequence.py", "billing/models.py", "pyproject.toml",
                  "deploy/Dockerfile"],
        tokens_before=48213)
    j.user("run the whole billing suite now")
    j.tool("bash", {"command": "uv run pytest -q billing"}, PYTEST_BILLING_PASS)
    j.assistant("All of billing passes now (129 passed, 2 skipped), including the three invoice number tests "
                "that failed before: yearly reset, no gap after a rollback, unique numbers under concurrent issuing.")


PSQL_CONNECTIONS = """ max_connections
-----------------
 100
(1 row)

  application_name  | state  | count
--------------------+--------+-------
 pgbouncer          | active |    44
 pgbouncer          | idle   |    18
 reports-exporter   | active |    21
 metabase           | idle   |    12
 psql               | active |     1
                    | idle   |     1
(6 rows)
"""

PG_LOG = """2026-06-10 02:00:03.118 UTC [61204] LOG:  connection received: host=10.42.3.17 port=51822
2026-06-10 02:00:03.120 UTC [61204] FATAL:  remaining connection slots are reserved for roles with the SUPERUSER attribute
2026-06-10 02:00:03.377 UTC [61207] LOG:  connection received: host=10.42.3.17 port=51830
2026-06-10 02:00:03.379 UTC [61207] FATAL:  remaining connection slots are reserved for roles with the SUPERUSER attribute
2026-06-10 02:00:04.902 UTC [60977] ERROR:  canceling statement due to user request
2026-06-10 02:00:04.902 UTC [60977] STATEMENT:  UPDATE "invoice_number_counters" SET "value" = 3402 WHERE "year" = 2026
2026-06-10 02:00:04.903 UTC [60977] LOG:  statement: ROLLBACK
2026-06-10 02:00:05.410 UTC [61213] FATAL:  remaining connection slots are reserved for roles with the SUPERUSER attribute
2026-06-10 02:00:07.021 UTC [60981] LOG:  statement: ROLLBACK
2026-06-10 02:00:09.655 UTC [61219] FATAL:  remaining connection slots are reserved for roles with the SUPERUSER attribute
2026-06-10 02:00:12.004 UTC [60990] LOG:  duration: 6012.771 ms  statement: COPY (SELECT * FROM reports_monthly_v) TO STDOUT
2026-06-10 02:00:15.388 UTC [60977] LOG:  statement: ROLLBACK
"""


def s6_incident(j: Any) -> None:
    j.user("prod incident last night during the 02:00 PDF batch: postgres refused connections ('remaining "
           "connection slots are reserved'), a bunch of invoices failed to issue. reporting exports run at the "
           "same time. what happened?")
    j.tool("bash", {"command": "psql \"$PROD_RO_URL\" -c 'show max_connections' -c \"select application_name, "
                               "state, count(*) from pg_stat_activity group by 1, 2 order by 3 desc\""},
           PSQL_CONNECTIONS)
    j.tool("bash", {"command": "kubectl -n db logs pg-main-0 --since-time=2026-06-10T02:00:00Z | head -n 12"},
           PG_LOG)
    j.assistant(
        "Postgres has `max_connections = 100`. Since the OOM fix the workers run 8 processes per pod and "
        "pgbouncer may open up to 40 server connections for ledgerline, and at 02:00 the reports exporter "
        "(21 connections) and Metabase (12) are also connected. Together with the reserved superuser slots "
        "that hits the ceiling, so new server connections were refused and the invoice issues in flight were "
        "rolled back. Fix on our side: go down to 6 processes per worker pod and cap the pgbouncer pool at 30, "
        "which leaves room for reporting.")
    j.tool("edit", {"path": f"{INFRA}/k8s/ledgerline/worker.yaml", "oldText": "\"--concurrency=8\"",
                    "newText": "\"--concurrency=6\""},
           f"Successfully replaced text in {INFRA}/k8s/ledgerline/worker.yaml.")
    j.tool("edit", {"path": f"{INFRA}/k8s/pgbouncer/pgbouncer.ini", "oldText": "default_pool_size = 40",
                    "newText": "default_pool_size = 30"},
           f"Successfully replaced text in {INFRA}/k8s/pgbouncer/pgbouncer.ini.")
    j.assistant("Worker pods now run `--concurrency=6` and pgbouncer `default_pool_size = 30`. Both are in the "
                "infra repo, so they go out with the next Argo sync.")
    j.user("second thing: migration 0031 locked the invoices table for 40 minutes on the staging copy of prod "
           "data. roll back the migration on staging, we'll redo the backfill in batches")
    j.tool("bash", {"command": "kubectl -n ledgerline-staging exec deploy/ledgerline-api -- python manage.py "
                               "migrate billing 0030"},
           "Operations to perform:\n  Target specific migration: 0030_invoice_pdf_upload_path, from billing\n"
           "Running migrations:\n  Rendering model states... DONE\n"
           "  Unapplying billing.0031_invoice_sequence... OK\n")
    j.assistant("Rolled back billing.0031 on staging (`migrate billing 0030`); the counter table and the unique "
                "constraint are gone there, invoice numbers are back to the old format until we re-apply. For the "
                "redo I'd split it: create the table and constraint in one migration, and backfill in batches of "
                "2000 from a management command outside the migration transaction.")


def s7_feedback(j: Any) -> None:
    j.user("feedback round. 1) support says finance teams get logged out in the middle of the monthly close "
           "with 8 hours; product agreed on 10 hours. 2) Priya is on parental leave until September, Devraj "
           "reviews migrations meanwhile. update both")
    j.tool("edit", {"path": "ledgerline/settings/base.py",
                    "oldText": "SESSION_COOKIE_AGE = 60 * 60 * 8  # 8 hours (security review 2026-05, Hanna)",
                    "newText": "SESSION_COOKIE_AGE = 60 * 60 * 10  # 10 hours: month-end close (product + security, 2026-06)"},
           "Successfully replaced text in ledgerline/settings/base.py.")
    j.tool("edit", {"path": "CODEOWNERS", "oldText": "/**/migrations/              @priya",
                    "newText": "/**/migrations/              @devraj  # Priya on leave until 2026-09"},
           "Successfully replaced text in CODEOWNERS.")
    j.assistant("Done: logins now last 10 hours (`SESSION_COOKIE_AGE = 60 * 60 * 10`), and CODEOWNERS makes "
                "@devraj the reviewer for every `migrations/` folder while Priya is away.")
    j.user("3) GlitchTip silently dropped events during last week's incident (its queue filled up), so we're "
           "going back to Sentry. restore the sentry DSN in the prod values")
    j.tool("edit", {"path": f"{INFRA}/helm/ledgerline/values-prod.yaml",
                    "oldText": "errorTracking:\n  provider: glitchtip  # self-hosted, https://glitchtip.internal.ledgerline.io\n"
                               "  dsnSecret: ledgerline-glitchtip",
                    "newText": "errorTracking:\n  provider: sentry  # back from GlitchTip 2026-06: it dropped events\n"
                               "  dsnSecret: ledgerline-sentry"},
           f"Successfully replaced text in {INFRA}/helm/ledgerline/values-prod.yaml.")
    j.assistant("Error tracking is back on Sentry (project `ledgerline-api`, secret `ledgerline-sentry`). We "
                "left GlitchTip because it dropped events when its ingest queue filled during the incident.")
    j.user("4) during stripe's outage on friday the webhook retries ran out before stripe came back (5 tries, "
           "10 minute cap). make it 8 attempts with the backoff capped at an hour")
    j.tool("edit", {"path": "billing/webhooks.py",
                    "oldText": "@shared_task(bind=True, max_retries=5, retry_backoff=True, retry_backoff_max=600,",
                    "newText": "@shared_task(bind=True, max_retries=8, retry_backoff=True, retry_backoff_max=3600,"},
           "Successfully replaced text in billing/webhooks.py.")
    j.assistant("Webhook tasks now retry up to 8 times with exponential backoff capped at one hour "
                "(`max_retries=8, retry_backoff_max=3600`), so a retry chain spans a bit over four hours.")


GREP_TODO = """billing/pdf.py:44:    # TODO: render statements with the same template as invoices
billing/handlers.py:97:    # TODO: credit notes from Stripe are logged, not stored yet
billing/tasks.py:131:    # TODO(ines): dunning level 3 should cc the account owner
customers/serializers.py:58:    # TODO: validate VAT ids against VIES (rate limits!)
reports/datev.py:12:# TODO: DATEV export ignores credit notes
reports/exports.py:203:    # TODO: stream XLSX instead of building it in memory
ledgerline/settings/prod.py:19:# TODO: drop the legacy Stripe webhook secret after the July rotation
web/src/views/InvoiceList.vue:211:      <!-- TODO: bulk actions -->"""

E2E_CONFIG = """export default {
  baseURL: process.env.E2E_BASE_URL ?? "https://stg.ledgerline.io",
  retries: 1,
  timeout: 30_000,
  projects: [{ name: "chromium" }, { name: "webkit" }],
};
"""


def s8_release(j: Any) -> None:
    j.user("release prep. first: the 3.13 image is a dead end, two of weasyprint's dependencies have no 3.13 "
           "wheels for our base image and building them from source doubles the build time. settle on python "
           "3.12")
    j.tool("edit", {"path": "pyproject.toml", "oldText": "requires-python = \">=3.13,<3.14\"",
                    "newText": "requires-python = \">=3.12,<3.13\""},
           "Successfully replaced text in pyproject.toml.")
    j.tool("edit", {"path": "deploy/Dockerfile", "oldText": "FROM python:3.13-slim AS build",
                    "newText": "FROM python:3.12-slim AS build"},
           "Successfully replaced text in deploy/Dockerfile.")
    j.tool("edit", {"path": "deploy/Dockerfile", "oldText": "FROM python:3.13-slim\n",
                    "newText": "FROM python:3.12-slim\n"},
           "Successfully replaced text in deploy/Dockerfile.")
    j.tool("edit", {"path": "pyproject.toml", "oldText": "target-version = \"py311\"",
                    "newText": "target-version = \"py312\""},
           "Successfully replaced text in pyproject.toml.")
    j.assistant("We're on Python 3.12 now: `requires-python = \">=3.12,<3.13\"`, both Dockerfile stages use "
                "`python:3.12-slim`, and ruff targets py312.")
    j.user("stripe: 2025-05-28.basil has the proration fields on invoice lines we need for the credit notes. "
           "bump the pinned version")
    j.tool("edit", {"path": "ledgerline/settings/base.py", "oldText": "STRIPE_API_VERSION = \"2025-03-31.basil\"",
                    "newText": "STRIPE_API_VERSION = \"2025-05-28.basil\""},
           "Successfully replaced text in ledgerline/settings/base.py.")
    j.tool("bash", {"command": "uv run pytest -q billing -k stripe"},
           "...........                                                              [100%]\n11 passed in 1.93s\n")
    j.assistant("Pinned Stripe API version is now `2025-05-28.basil`; the stripe tests pass (11).")
    j.user("README: with the merge queue we can deploy any weekday now, just not on Fridays. and staging moved "
           "to the EU cluster: https://staging.eu.ledgerline.io — fix the README and the e2e config")
    j.tool("edit", {"path": "README.md",
                    "oldText": "Deploys go out on Thursdays after the 14:00 standup (moved from Tuesday: it clashed "
                               "with the finance close).",
                    "newText": "Deploys go out any weekday except Friday, through the merge queue."},
           "Successfully replaced text in README.md.")
    j.tool("edit", {"path": "README.md", "oldText": "- Staging: https://staging.ledgerline.dev",
                    "newText": "- Staging: https://staging.eu.ledgerline.io (EU cluster)"},
           "Successfully replaced text in README.md.")
    j.tool("read", {"path": "web/e2e/playwright.config.ts"}, E2E_CONFIG)
    j.tool("edit", {"path": "web/e2e/playwright.config.ts", "oldText": "https://stg.ledgerline.io",
                    "newText": "https://staging.eu.ledgerline.io"},
           "Successfully replaced text in web/e2e/playwright.config.ts.")
    j.user("anything left over we should look at before tagging? check the TODOs")
    j.tool("grep", {"pattern": "TODO", "path": ".", "glob": "*.{py,vue}"}, GREP_TODO)
    j.assistant(
        "Nothing blocking. Of the TODOs, two touch this release's area: `reports/datev.py` ignores credit notes "
        "(and the new proration fields are exactly for credit notes), and `ledgerline/settings/prod.py` still "
        "has the legacy webhook secret due for the July rotation. The rest are feature wishes.\n\n"
        "Release summary: Python 3.12, Stripe `2025-05-28.basil`, deploys any weekday except Friday, staging at "
        "https://staging.eu.ledgerline.io.")


def s9_home(j: Any) -> None:
    j.user("disk is full again. clean up the old docker volumes but keep the postgres one for ledgerline")
    j.tool("bash", {"command": "docker volume ls --format '{{.Name}}' && docker system df"},
           "ledgerline_pgdata\nledgerline_redisdata\nkestrel_pgdata\nold-infra_minio\n"
           "4f1c0d2e9b7a6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1\nscratch_nodemodules\n\n"
           "TYPE            TOTAL     ACTIVE    SIZE      RECLAIMABLE\nImages          41        6         "
           "18.2GB    14.9GB (81%)\nContainers      9         2         1.1GB     1.0GB (90%)\nLocal Volumes   6"
           "         1         23.7GB    21.5GB (90%)\nBuild Cache     212       0         6.4GB     6.4GB\n")
    j.tool("bash", {"command": "docker volume rm kestrel_pgdata old-infra_minio scratch_nodemodules "
                               "4f1c0d2e9b7a6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1 && docker builder prune -f"},
           "kestrel_pgdata\nold-infra_minio\nscratch_nodemodules\n"
           "4f1c0d2e9b7a6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1\nTotal reclaimed space: 6.4GB\n")
    j.assistant("Removed the kestrel and old-infra volumes, the scratch node_modules volume and one anonymous "
                "volume, and pruned the build cache: about 27 GB back. `ledgerline_pgdata` and "
                "`ledgerline_redisdata` are untouched.")
    j.user("now set up commit signing with my ssh key")
    j.tool("bash", {"command": "git config --global gpg.format ssh && git config --global user.signingkey "
                               "~/.ssh/id_ed25519.pub && git config --global commit.gpgsign true && "
                               "git config --global --get-regexp '^(gpg|user|commit)'"},
           "gpg.format ssh\nuser.name Ines Albrecht\nuser.email ines@ledgerline.io\n"
           "user.signingkey /home/ines/.ssh/id_ed25519.pub\ncommit.gpgsign true\n")
    j.assistant("Commits are signed with `~/.ssh/id_ed25519.pub` now (`gpg.format ssh`, `commit.gpgsign true`). "
                "For GitHub to show them as verified, add the same key as a *signing* key in your GitHub settings.")


DATEV_PY = """\"\"\"DATEV export (EXTF Buchungsstapel) for the month-end hand-over to the tax accountant.

The accountant imports the file into DATEV Kanzlei-Rechnungswesen. The header line carries the
format version; DATEV rejects files whose version it does not know, so it is pinned here and
bumped only after the accountant confirms their installation reads it.
\"\"\"

import csv
import io
import logging
from dataclasses import dataclass
from decimal import Decimal

import requests
from django.conf import settings

from billing.models import Invoice, InvoiceStatus, Payment

log = logging.getLogger(__name__)

FORMAT_VERSION = 700  # EXTF 7.00
CATEGORY = 21  # Buchungsstapel
HEADER_FIELDS = ["EXTF", FORMAT_VERSION, CATEGORY, "Buchungsstapel", 13]
REVENUE_ACCOUNT = {"0.19": "8400", "0.07": "8300", "0.00": "8120"}
DEBITOR_OFFSET = 10000


@dataclass
class Row:
    amount: Decimal
    debit_credit: str
    account: str
    contra_account: str
    date: str
    reference: str
    text: str


def rows_for(invoice: Invoice) -> list[Row]:
    rows = []
    for line in invoice.lines.all():
        account = REVENUE_ACCOUNT.get(str(line.tax_rate.normalize()), "8400")
        rows.append(Row(
            amount=line.amount,
            debit_credit="S",
            account=str(DEBITOR_OFFSET + invoice.customer_id),
            contra_account=account,
            date=invoice.issued_at.strftime("%d%m"),
            reference=invoice.number,
            text=line.description[:60],
        ))
    return rows


def export_month(year: int, month: int) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=";", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(HEADER_FIELDS)
    writer.writerow(["Umsatz", "Soll/Haben", "Konto", "Gegenkonto", "Belegdatum", "Belegfeld 1", "Buchungstext"])
    invoices = Invoice.objects.filter(
        issued_at__year=year, issued_at__month=month, status__in=[InvoiceStatus.OPEN, InvoiceStatus.PAID]
    ).prefetch_related("lines")
    for invoice in invoices.iterator(chunk_size=500):
        for row in rows_for(invoice):
            writer.writerow([f"{row.amount:.2f}".replace(".", ","), row.debit_credit, row.account,
                             row.contra_account, row.date, row.reference, row.text])
    for payment in Payment.objects.filter(received_at__year=year, received_at__month=month):
        writer.writerow([f"{payment.amount:.2f}".replace(".", ","), "H",
                         str(DEBITOR_OFFSET + payment.invoice.customer_id), "1200",
                         payment.received_at.strftime("%d%m"), payment.invoice.number, payment.method])
    return buf.getvalue().encode("cp1252", errors="replace")


def upload(data: bytes, filename: str) -> None:
    \"\"\"Push the file to the accountant's SFTP bridge (HTTP front). Three attempts, then give up and
    let the ops channel know; the export stays in the bucket either way.\"\"\"
    session = requests.Session()
    for attempt in range(1, 4):
        try:
            response = session.post(settings.DATEV_BRIDGE_URL, files={"file": (filename, data)}, timeout=30)
            response.raise_for_status()
            return
        except requests.RequestException as exc:
            log.warning("datev upload attempt %s failed: %s", attempt, exc)
    log.error("datev upload gave up after 3 attempts: %s", filename)
"""

OUTDATED = """Package             Version  Latest   Type
------------------- -------- -------- -----
celery              5.4.0    5.5.3    wheel
certifi             2025.4.26 2026.4.22 wheel
django              5.0.14   5.2.3    wheel
django-celery-beat  2.6.0    2.8.1    wheel
djangorestframework 3.15.1   3.16.0   wheel
gunicorn            22.0.0   23.0.0   wheel
kombu               5.4.2    5.5.4    wheel
psycopg             3.1.19   3.2.9    wheel
redis               5.0.8    6.2.0    wheel
sentry-sdk          2.29.1   2.32.0   wheel
stripe              10.12.0  12.2.0   wheel
weasyprint          62.3     65.1     wheel
whitenoise          6.7.0    6.9.0    wheel
"""

PIP_AUDIT = """Found 2 known vulnerabilities in 2 packages
Name     Version ID                  Fix Versions
-------- ------- ------------------- ------------
django   5.0.14  PYSEC-2026-118      5.1.11,5.2.3
gunicorn 22.0.0  GHSA-hc5x-x2vx-497g 23.0.0
"""


def n1_datev(j: Any) -> None:
    j.user("the accountant says the May DATEV export had the payments booked on the wrong side. have a look at "
           "reports/datev.py")
    j.tool("read", {"path": "reports/datev.py"}, DATEV_PY)
    j.assistant("Payments are written with `H` (Haben) on the debitor account and 1200 (bank) as contra account, "
                "which is the right side for an incoming payment against a receivable. What is off is the "
                "invoice rows: `Soll/Haben` is relative to the Umsatz column's account, and we put the debitor in "
                "`Konto` with `S`. That part is fine too. The likely culprit is the amount format: we replace the "
                "decimal point with a comma but never strip a minus sign, so credit notes (negative lines) come out "
                "as `-119,00` with `S`, which DATEV books as a debit. Credit notes should be positive amounts "
                "with `H`.")
    j.tool("edit", {"path": "reports/datev.py",
                    "oldText": "            amount=line.amount,\n            debit_credit=\"S\",",
                    "newText": "            amount=abs(line.amount),\n            debit_credit=\"S\" if line.amount >= 0 else \"H\","},
           "Successfully replaced text in reports/datev.py.")
    j.tool("bash", {"command": "uv run pytest -q reports -k datev"},
           "....                                                                     [100%]\n4 passed in 0.61s\n")
    j.assistant("Negative lines are now exported as positive amounts on the H side; the four DATEV tests pass. "
                "Worth adding a credit-note case to the fixture before the June export.")


def n2_deps(j: Any) -> None:
    j.user("dependency check before the summer: what's outdated and is anything vulnerable?")
    j.tool("bash", {"command": "uv pip list --outdated"}, OUTDATED)
    j.tool("bash", {"command": "uvx pip-audit"}, PIP_AUDIT)
    j.assistant("Two advisories: Django 5.0.14 (fixed in 5.1.11 / 5.2.3) and gunicorn 22 (fixed in 23). Django "
                "5.0 is also out of upstream support, so I'd go straight to 5.2 LTS. The stripe library (10.12 vs "
                "12.2) is independent of the API version we pin in settings; upgrading the SDK does not change "
                "which API version requests use. sentry-sdk and celery are minor bumps.")
    j.user("do django 5.2 and gunicorn 23 now, leave the rest")
    j.tool("edit", {"path": "pyproject.toml", "oldText": "    \"django>=5.0,<5.1\",",
                    "newText": "    \"django>=5.2,<5.3\","},
           "Successfully replaced text in pyproject.toml.")
    j.tool("edit", {"path": "pyproject.toml", "oldText": "    \"gunicorn>=22\",", "newText": "    \"gunicorn>=23\","},
           "Successfully replaced text in pyproject.toml.")
    j.tool("bash", {"command": "uv lock --upgrade-package django --upgrade-package gunicorn && uv run pytest -q"},
           "Resolved 58 packages in 1.21s\nUpdated django v5.0.14 -> v5.2.3\nUpdated gunicorn v22.0.0 -> v23.0.0\n"
           "........................................................................ [ 38%]\n"
           "........................................................................ [ 77%]\n"
           "..........................................                               [100%]\n"
           "186 passed, 3 skipped in 52.40s\n")
    j.assistant("Django 5.2.3 and gunicorn 23.0.0 are locked and the full suite passes (186 passed).")


SESSIONS = [
    Script(LL, "2026-05-04T08:55:00.000Z", s1_onboarding),
    Script(LL, "2026-05-12T13:20:00.000Z", s2_stripe),
    Script(LL, "2026-05-15T15:45:00.000Z", n1_datev),
    Script(LL, "2026-05-20T09:05:00.000Z", s3_security),
    Script(INFRA, "2026-05-27T19:40:00.000Z", s4_infra),
    Script(LL, "2026-06-03T10:10:00.000Z", s5_numbering),
    Script(LL, "2026-06-10T14:30:00.000Z", s6_incident),
    Script(LL, "2026-06-17T08:50:00.000Z", s7_feedback),
    Script(LL, "2026-06-19T16:05:00.000Z", n2_deps),
    Script(LL, "2026-06-24T11:15:00.000Z", s8_release),
    Script(HOME, "2026-06-26T20:30:00.000Z", s9_home),
]
