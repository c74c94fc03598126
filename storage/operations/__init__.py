"""Work over several tables at once: ageing, privacy and purge, re-embedding, access
folding, the HNSW upkeep, status and what the serving doors read."""
