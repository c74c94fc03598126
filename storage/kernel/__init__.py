"""What every layer of the store imports: settings, errors, records, the input gate,
shards, scoring and small helpers."""
