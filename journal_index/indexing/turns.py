"""Each question linked to its turn's reply as its journal is indexed (migration 0012).

A turn starts at a user entry and lasts until the next one. Its reply is the last assistant
entry of the turn that is not a call; an assistant entry is a call when some entry (its
result) links to it, which may only be known a block or a pass later, even after the user
spoke again. The question's row holds the reply's rowid (``entries.reply``), so the ranking
reads it in one lookup; the journal's row holds its last user entry (``files.open_turn``),
whose turn the next lines may still extend.

One :class:`TurnLinks` per pass over a journal, given each block's rows in file order inside
the block's transaction, before they are inserted: a question's reply goes into its row as it
is written (a row grown by an update later would split its full page), and only a question of
an earlier block is updated. It holds the assistant entries that are not calls of the open turn
and of the turns before it that a result may still reach (:data:`LINK_WINDOW`); only when the
earliest one it knows of turns out to be a call does it ask the index for the one before (rows
a resumed pass did not read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from journal_index.data import index_sql
from journal_index.data.store import Store
from journal_index.indexing.extract import EntryRow
from journal_index.text.call_lookback import LINK_WINDOW


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
    """The turns of one journal a block may still change, and the writes that keep each
    question's reply current."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.turns: list[_Turn] = []  # in file order; the last one is open
        self.loaded = False  # False: what the index holds is read before the next block

    def start_over(self) -> None:
        """The journal is new, or indexed again from byte 0: no turn yet."""
        self.turns, self.loaded = [], True

    def forget(self) -> None:
        """What was written was rolled back: read it again from the index before the next block."""
        self.turns, self.loaded = [], False

    def link(self, file_id: int, rows: Sequence[EntryRow], first_rowid: int) -> tuple[list[int | None], int | None]:
        """A block's rows, about to be inserted with rowids from ``first_rowid`` on: the reply
        to write in each of them (None but for questions), and the last question among them
        (the journal's new open turn), or None. Questions of earlier blocks are updated here."""
        if not self.loaded:
            self._load(file_id)
        self._drop_unreachable(rows[0].offset)
        block_calls = {row.link_offset for row in rows if row.link_offset is not None}
        opened = None
        for i, row in enumerate(rows):
            if row.link_offset is not None:
                self._called(file_id, row.link_offset, block_calls)
            if row.kind == "user":
                opened = first_rowid + i
                self.turns.append(_Turn(opened, row.offset, None))
            elif row.kind == "assistant" and self.turns:
                self.turns[-1].replies.append((row.offset, first_rowid + i))
        replies: list[int | None] = [None] * len(rows)
        for turn in self.turns:
            if turn.question >= first_rowid:
                replies[turn.question - first_rowid] = turn.reply
            elif turn.reply != turn.stored:
                index_sql.set_reply(self.store, turn.question, turn.reply)
            turn.stored = turn.reply
        return replies, opened

    def _load(self, file_id: int) -> None:
        start = index_sql.open_turn(self.store, file_id)
        self.turns = []
        if start is not None:
            turn = _Turn(start.question, start.offset, start.reply)
            if start.reply is not None and start.reply_offset is not None:
                turn.replies.append((start.reply_offset, start.reply))
                turn.earlier = True
            self.turns.append(turn)
        self.loaded = True

    def _drop_unreachable(self, offset: int) -> None:
        """Forget the ended turns whose replies lie too far back for a result from ``offset``
        on to link to (they are written already)."""
        low = offset - LINK_WINDOW
        if len(self.turns) > 1 and (not self.turns[0].replies or self.turns[0].replies[-1][0] < low):
            self.turns = [t for t in self.turns[:-1] if t.replies and t.replies[-1][0] >= low] + self.turns[-1:]

    def _called(self, file_id: int, offset: int, block_calls: set[int]) -> None:
        """An entry links to the one at ``offset``: that one is a call, never a reply."""
        for turn in reversed(self.turns):
            if turn.offset < offset:
                self._demote(file_id, turn, offset, block_calls)
                return
        # A turn that ended before this pass (or no turn: the journal's first lines).
        start = index_sql.turn_before(self.store, file_id, offset)
        if start is not None and start.reply_offset == offset:
            found = index_sql.last_reply_before(self.store, file_id, start.offset, offset, block_calls)
            index_sql.set_reply(self.store, start.question, found[1] if found is not None else None)

    def _demote(self, file_id: int, turn: _Turn, offset: int, block_calls: set[int]) -> None:
        for i in range(len(turn.replies) - 1, -1, -1):
            if turn.replies[i][0] == offset:
                del turn.replies[i]
                if i == 0 and turn.earlier:  # the one before it is in rows this pass did not read
                    found = index_sql.last_reply_before(self.store, file_id, turn.offset, offset, block_calls)
                    if found is not None:
                        turn.replies.insert(0, found)
                    turn.earlier = found is not None
                return
