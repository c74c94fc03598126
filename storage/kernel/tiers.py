"""The tiers a memory passes through as it ages: ``fresh``, then ``compressed`` (its text
shortened by ``memory-aging``), then ``archived`` (moved to the cold Parquet tier).

Here, in the kernel, so that a reader of counts per tier (``archivist status``) need not
load the ``memories`` table's model, and with it pgvector and numpy (0.2 s).
"""

TIERS = ("fresh", "compressed", "archived")
