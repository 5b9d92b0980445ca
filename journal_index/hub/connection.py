"""Reaching the hub: its URL, one connection, and the one-line errors a person can act on."""

from __future__ import annotations

import logging
import os
import re
from typing import Any

from journal_index.redact import redact

HUB_ENV = "JOURNAL_INDEX_HUB"
HOST_ENV = "JOURNAL_INDEX_HOST"
URL_FORM = "a postgresql:// URL, e.g. postgresql://alice@db.example.com/journals"
CONNECT_SECONDS = 10
_PASSWORD = re.compile(r"(postgres(?:ql)?://[^:/@]+):[^@/]*@")


class HubError(Exception):
    """The hub cannot be used; the message is one line saying what is wrong and what to do."""


class PushBusy(HubError):
    """Another push from this host holds the host's push lock (a push asked not to wait)."""


def shown_url(url: str) -> str:
    """The URL as messages show it: without its password, redacted."""
    return redact(_PASSWORD.sub(r"\1:***@", url))


def hub_url(given: str | None, saved: str | None = None) -> str:
    """The hub to use: ``--hub URL``, else $JOURNAL_INDEX_HUB, else the one saved with the shares."""
    url = given or os.environ.get(HUB_ENV) or saved
    if not url:
        raise HubError(f"no hub is configured; pass --hub URL or set {HUB_ENV} ({URL_FORM})")
    if not (url.startswith("postgresql://") or url.startswith("postgres://")):
        raise HubError(f"the hub {shown_url(url)!r} is not {URL_FORM}")
    return url


def host_name() -> str:
    """This machine's name on the hub: $JOURNAL_INDEX_HOST, else the host name."""
    import socket  # here: the CLI's start-up does not pay for it

    return os.environ.get(HOST_ENV) or socket.gethostname()


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return redact(text.splitlines()[0].strip())


def quiet_driver_log() -> None:
    """psycopg logs a warning of its own when a connection is lost inside a pipeline ("error
    ignored terminating <psycopg.Pipeline [BAD]>"); with no logging set up, Python prints it to
    stderr beside our one line. Ours says it already: the warning goes to a null handler (an
    application that sets up logging still gets it through propagation)."""
    driver = logging.getLogger("psycopg")
    if not any(isinstance(h, logging.NullHandler) for h in driver.handlers):
        driver.addHandler(logging.NullHandler())


def connect(url: str) -> Any:
    """A psycopg connection to the hub (autocommit off), or a HubError saying why there is none."""
    try:
        import psycopg
    except ImportError:
        raise HubError("the hub needs psycopg; install journal-index with the hub extra: "
                       "pip install 'journal-index[hub]'") from None
    quiet_driver_log()
    try:
        return psycopg.connect(url, connect_timeout=CONNECT_SECONDS, application_name="journal-index")
    except psycopg.Error as exc:
        raise HubError(f"cannot reach the hub at {shown_url(url)}: {first_line(exc)}") from None


def is_hub_failure(exc: BaseException) -> bool:
    """Whether an error raised while using the hub is the hub's (lost connection, refused SQL)."""
    try:
        import psycopg
    except ImportError:
        return False
    return isinstance(exc, psycopg.Error)


def failure_line(exc: BaseException, url: str) -> str:
    """One line for a psycopg error met while using the hub."""
    try:
        import psycopg
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return (f"the hub at {shown_url(url)} refused this: {first_line(exc)} "
                    "(is your role a member of journal_hub_member and of a team?)")
        if isinstance(exc, psycopg.OperationalError):
            return f"lost the hub at {shown_url(url)}: {first_line(exc)}; what was pushed is kept, push again"
    except ImportError:
        pass
    return f"the hub at {shown_url(url)} failed: {first_line(exc)}"
