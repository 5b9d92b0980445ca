"""What has been written so far: bytes per category, line lengths, counts, against the size asked for."""

from __future__ import annotations

from benchmarks.corpus.mix import CATEGORIES, TARGET_MIX


class Tally:
    """Bytes written, per category and in all, line lengths and counts of notable things."""

    def __init__(self, size_bytes: int) -> None:
        self.size = size_bytes
        self.written = 0
        self.cat = dict.fromkeys(CATEGORIES, 0)
        self.lengths: list[int] = []
        self.counts: dict[str, int] = {}

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def deficit(self, cat: str) -> float:
        return TARGET_MIX[cat] * self.written - self.cat[cat]

    def remaining(self) -> int:
        return self.size - self.written
