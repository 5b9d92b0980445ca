"""Each question linked to its turn's reply as its journal is indexed (migration 0012).

A turn starts at a user entry and lasts until the next one. Its reply is the last assistant
entry of the turn that is not a call; an assistant entry is a call when some entry (its
result) links to it, which may only be known a block or a pass later. The question's row holds
the reply's rowid (``entries.reply``), so the ranking reads it in one lookup; the journal's row
holds its last user entry (``files.open_turn``), whose turn the next lines may still extend.

One :class:`TurnLinks` per pass over a journal, fed each committed block's rows in file order
(inside the block's transaction, after its rows are inserted). It holds the open turn's
assistant entries that are not calls so far; only when the earliest one it knows of turns out
to be a call does it ask the index for the one before (the rows a resumed pass did not read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from journal_index.data import index_sql
from journal_index.data.store import Store
from journal_index.indexing.extract import EntryRow


@dataclass
class _Turn:
    question: int  # rowid of the user entry that opened it
    offset: int
    stored: int | None  # the reply its row holds
    # (offset, rowid) of its assistant entries not known to be calls, in file order
    replies: list[tuple[int, int]] = field(default_factory=list)
    # whether the index may hold such an entry before replies[0] that the list does not
    earlier: bool = False

    @property
    def reply(self) -> int | None:
        return self.replies[-1][1] if self.replies else None


class TurnLinks:
    """The open turn of one journal, and the writes that keep its question's reply current."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.turn: _Turn | None = None
        self.loaded = False  # False: what the index holds is read before the next block

    def start_over(self) -> None:
        """The journal is new, or indexed again from byte 0: no turn yet."""
        self.turn, self.loaded = None, True

    def forget(self) -> None:
        """What was written was rolled back (or written by another process): read it again."""
        self.turn, self.loaded = None, False

    def add(self, file_id: int, rows: Sequence[EntryRow], first_rowid: int) -> int | None:
        """Link a block's rows (their rowids follow ``first_rowid``). Returns the last user
        entry among them (the journal's new open turn), or None."""
        if not self.loaded:
            self._load(file_id)
        opened = None
        for i, row in enumerate(rows):
            if row.link_offset is not None:
                self._called(file_id, row.link_offset)
            if row.kind == "user":
                if self.turn is not None:
                    self._store(self.turn)
                opened = first_rowid + i
                self.turn = _Turn(opened, row.offset, None)
            elif row.kind == "assistant" and self.turn is not None:
                self.turn.replies.append((row.offset, first_rowid + i))
        if self.turn is not None:
            self._store(self.turn)
        return opened

    def _load(self, file_id: int) -> None:
        start = index_sql.open_turn(self.store, file_id)
        self.turn = None
        if start is not None:
            self.turn = _Turn(start.question, start.offset, start.reply)
            if start.reply is not None and start.reply_offset is not None:
                self.turn.replies.append((start.reply_offset, start.reply))
                self.turn.earlier = True
        self.loaded = True

    def _called(self, file_id: int, offset: int) -> None:
        """An entry links to the one at ``offset``: that one is a call, never a reply."""
        turn = self.turn
        if turn is None:
            return  # no question yet
        if offset <= turn.offset:
            self._called_before(file_id, offset)
            return
        for i in range(len(turn.replies) - 1, -1, -1):
            if turn.replies[i][0] == offset:
                del turn.replies[i]
                if i == 0 and turn.earlier:
                    found = index_sql.last_reply_before(self.store, file_id, turn.offset, offset)
                    if found is not None:
                        turn.replies.insert(0, found)
                    turn.earlier = found is not None
                return

    def _called_before(self, file_id: int, offset: int) -> None:
        """A late result: it answers a call of a turn that has ended (the user spoke meanwhile).
        When that call was its turn's reply, the reply is the entry before it that is no call."""
        start = index_sql.turn_before(self.store, file_id, offset)
        if start is None or start.reply_offset != offset:
            return
        found = index_sql.last_reply_before(self.store, file_id, start.offset, offset)
        index_sql.set_reply(self.store, start.question, found[1] if found is not None else None)

    def _store(self, turn: _Turn) -> None:
        if turn.reply != turn.stored:
            index_sql.set_reply(self.store, turn.question, turn.reply)
            turn.stored = turn.reply
