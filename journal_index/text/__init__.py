"""Text both sides share: an entry's text, the index and query forms of words, where a result's
call is, lines too long to hold whole, rendering for people and models, the redacting output
sink.
"""
