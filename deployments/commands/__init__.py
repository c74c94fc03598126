"""The CLI's commands: a public module each, imported lazily to keep ``archivist --help`` fast."""
