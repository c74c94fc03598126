"""The CLI's commands: a public module each, imported lazily to keep ``archivist --help`` fast."""

# What --as-of accepts: a day, or a time with or without a UTC offset (without one, the time
# is read in ARCHIVIST_TIMEZONE).
AS_OF_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z"]
