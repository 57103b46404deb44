-- What one assistant read, newest first (`kept agents reads NAME`, VaultAPI.agent_reads): an
-- index by agent and time, so the list does not scan every memory's reads.
CREATE INDEX memory_read_agent ON memory_read(agent, at);
