"""`watch` pushes as it indexes when a hub is configured ($JOURNAL_INDEX_HUB, or the hub of the
last `hub push`) and something is shared. A hub that is down or refuses is logged once (again
only when the reason changes) and retried later; it never stops the indexer."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

from journal_index.data.store import Store
from journal_index.formats import Root
from journal_index.hub import shares as registry
from journal_index.hub.connection import (
    HUB_ENV,
    HubError,
    PushBusy,
    connect,
    failure_line,
    host_name,
    is_hub_failure,
)

# At most one push this often (a busy session appends several lines a second).
PUSH_SECONDS = float(os.environ.get("JOURNAL_INDEX_HUB_PUSH_SECONDS", "10"))


class HubPusher:
    def __init__(self, error: Callable[[str], None], info: Callable[[str], None]) -> None:
        self.error, self.info = error, info
        self.last = float("-inf")
        self.failing: str | None = None
        self.waiting = False  # another push from this host held the push lock at the last try

    def maybe_push(self, store: Store, roots: Sequence[Root]) -> None:
        if time.monotonic() - self.last < PUSH_SECONDS:
            return
        self.last = time.monotonic()
        url: str | None = None
        try:
            saved = registry.load()
            url = os.environ.get(HUB_ENV) or saved.hub
            if not saved.shares or not url:
                return
            self._push(store, roots, saved.shares, url)
        except PushBusy:
            # a manual `hub push` of this host is running: this one goes after it, on a later pass
            if not self.waiting:
                self.info("another push from this host is running; watch pushes after it")
            self.waiting = True
        except HubError as exc:
            self._failed(str(exc))
        except Exception as exc:
            if not is_hub_failure(exc):
                raise
            self._failed(failure_line(exc, url or "?"))

    def _push(self, store: Store, roots: Sequence[Root], shares: list[registry.Share], url: str) -> None:
        from journal_index.hub.push import push
        from journal_index.hub.schema import check_schema

        conn = connect(url)
        try:
            check_schema(conn)
            report = push(conn, store, shares, host_name(), roots=roots, wait=False)
        finally:
            try:
                conn.close()
            except Exception:
                pass
        if self.failing is not None:
            self.info("the hub answers again")
        self.failing = None
        self.waiting = False
        if report.entries:
            self.info(f"pushed {report.entries} entries from {report.journals} journals to the hub")

    def _failed(self, line: str) -> None:
        if line != self.failing:
            self.error(line)
        self.failing = line
