"""Checks of what a command was given, made before anything runs (and before Prefect loads:
this module imports none of the pipeline)."""

from __future__ import annotations

import fsspec

from storage.kernel.errors import InputError
from storage.kernel.settings import Settings


def check_transcripts(settings: Settings, url: str) -> None:
    """Refuse a transcripts URL that names nothing, before anything is loaded or run."""
    fs, root = fsspec.core.url_to_fs(url, **settings.storage_options)
    if not fs.exists(root):
        raise InputError(
            f"no such folder or file: {url}; give a folder, a *.jsonl file or "
            "s3://bucket/prefix of transcripts"
        )
