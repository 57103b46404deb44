-- Kept schema 0024 (issue 27 item 8): an episode's outcome and the person's rating.
-- rating: -1 went badly, 0 mixed, +1 went well (NULL: not rated). Three values, not 1..5: a
-- habit's success/failure count needs a side, and a five-point scale would need a threshold
-- the person never sees; the outcome Kept infers from later turns has the same three sides.
-- outcome (0001) holds the words; outcome_by says who set it: 'person' (the window,
-- `kept episodes rate`) or 'inferred' (consolidation, from a later turn such as "it went
-- well"). An inferred outcome never overwrites the person's.
ALTER TABLE episode ADD COLUMN rating INTEGER CHECK (rating IN (-1, 0, 1));
ALTER TABLE episode ADD COLUMN outcome_by TEXT CHECK (outcome_by IN ('person', 'inferred'));
ALTER TABLE episode ADD COLUMN rated_at REAL;
CREATE INDEX episode_rated ON episode(rating) WHERE rating IS NOT NULL OR outcome_by IS NOT NULL;
