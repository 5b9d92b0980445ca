"""The optional recall by meaning (the `semantic` extra): sentence embeddings, the vectors and
their nearest entries, the background embedding, and the gated fusion with the lexical ranking.
"""
