"""Kept storage layer: SQLCipher, keys, vectors, embedder. Never imports Qt."""
