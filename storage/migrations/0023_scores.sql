-- Kept schema 0023 (issue 27 item 6, scores as the references define them).
-- boosted_at: when 002's scheduled booster last raised the memory's importance (the schedule
-- counts from it). conf_user / conf_usage: the 003 confidence factors (user validation, usage
-- success) the stored confidence already includes; NULL = unknown (policy.CONF_UNKNOWN), which
-- is what every confidence so far was computed with. Numbers only, no text.
ALTER TABLE memory ADD COLUMN boosted_at REAL;
ALTER TABLE memory ADD COLUMN conf_user REAL;
ALTER TABLE memory ADD COLUMN conf_usage REAL;
