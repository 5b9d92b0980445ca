"""What ``--since``/``--until`` (and the tool's ``since``/``until``) accept: the one parser.

A bound is a moment in epoch milliseconds. The accepted forms:

* ``30m``, ``3h``, ``2d``, ``1w``: that long before now;
* ``today``, ``yesterday``: the local midnight that began that day (for either bound, so
  ``--since yesterday --until today`` is all of yesterday);
* ``2026-09-01``: a local day — its first millisecond as a start, its last as an end;
* an ISO-8601 time (``2026-09-01T14:30:00Z``; without a zone it is local time).

"Now" is :func:`journal_index.config.now_ms`, which tests fix with ``JOURNAL_INDEX_NOW``.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta

from journal_index.config import now_ms

TIME_EXAMPLE = ("2d, 3h, 30m, 1w (that long ago), today or yesterday (local midnight), "
                "2026-09-01 (a local day) or 2026-09-01T14:30:00Z (an ISO-8601 time)")

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_AGO = re.compile(r"^(\d{1,6})([mhdw])$")
_UNIT_MS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}


class TimeBoundError(ValueError):
    """A time the parser cannot read; the message lists the accepted forms."""


def _local_midnight(day: date) -> int:
    # Combined with the local zone of that day: a day after a DST change still starts at 00:00.
    return int(datetime.combine(day, time(0, 0)).astimezone().timestamp() * 1000)


def parse_time_bound(value: str, *, end: bool) -> int:
    """The moment (epoch ms) ``value`` names; ``end`` makes a bare day mean its last millisecond."""
    text = value.strip()
    now = now_ms()
    ago = _AGO.match(text)
    if ago:
        return now - int(ago.group(1)) * _UNIT_MS[ago.group(2)]
    if text in ("today", "yesterday"):
        today = datetime.fromtimestamp(now / 1000).date()  # the local date of "now"
        return _local_midnight(today if text == "today" else today - timedelta(days=1))
    try:
        if _DAY.match(text):
            day = date.fromisoformat(text)
            if not end:
                return _local_midnight(day)
            moment = datetime.combine(day, time(23, 59, 59, 999000)).astimezone()
        else:
            moment = datetime.fromisoformat(text)
    except ValueError:
        raise TimeBoundError(f"cannot read the time {value!r}; use {TIME_EXAMPLE}") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return int(moment.timestamp() * 1000)
