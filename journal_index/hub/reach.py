"""One open connection to the hub, for the commands and the agent tool alike."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from journal_index.hub import shares as registry
from journal_index.hub.connection import HubError, connect, failure_line, hub_url, is_hub_failure


@contextmanager
def hub_connection(given: str | None, check: bool = True) -> Iterator[tuple[Any, str]]:
    """An open connection to the hub (its schema checked) and its URL; any failure is one line
    (a HubError): ``given``, else $JOURNAL_INDEX_HUB, else the hub saved with the shares."""
    from journal_index.hub.schema import check_schema

    url = hub_url(given, registry.load().hub)
    conn = connect(url)
    try:
        if check:
            check_schema(conn)
        yield conn, url
    except Exception as exc:
        if is_hub_failure(exc):
            raise HubError(failure_line(exc, url)) from None
        raise
    finally:
        try:
            conn.close()
        except Exception:
            pass
