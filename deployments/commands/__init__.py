"""The CLI's commands: a public module each, imported lazily to keep ``archivist --help`` fast."""

# What --as-of accepts: a day, or a time with or without a UTC offset (without one, the time
# is read in ARCHIVIST_TIMEZONE).
AS_OF_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S%z"]


def revealed(text: str) -> str:
    """A report as the operator sees it: each namespace pseudonym followed by its name,
    where the namespace still exists (reports themselves hold pseudonyms only)."""
    from sqlalchemy.orm import Session

    from deployments.settings_loader import load_settings
    from storage.engine import open_store
    from storage.pseudonyms import reveal

    with Session(open_store(load_settings()).engine) as session:
        return reveal(session, text)
