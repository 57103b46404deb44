-- FTS5's own index, readable row by row (issue 28, no slow first minute). Until the RAM lexicon
-- (storage/lexicon.py) is built or loaded, recall scored its words with FTS5's bm25(), which
-- reads every matching row's size (100k memories: 50-300 ms a query). This read-only view lists
-- each term's occurrences (document, column) straight from the index, so the lexicon can score
-- only the query's terms with the same BM25 in numpy. It stores nothing: an fts5vocab table is
-- a view over memory_fts, encrypted like it, and shows only what memory_fts holds.
CREATE VIRTUAL TABLE memory_fts_instance USING fts5vocab(memory_fts, instance);
