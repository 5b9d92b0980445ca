"""The index side: passes over journals, one journal's pass and the writer, reading blocks from a
cursor, a block's rows and terms, worker processes, the backfill lease, the background indexer,
junk journals, and what the index holds.
"""
