"""Deterministic sample conversations: the demo's transcripts and bulk benchmark data."""

from tasks.samples._bulk import generate_bulk
from tasks.samples._demo import DEMO_BAD_LINES, TranscriptFile, generate_demo, write_transcripts

__all__ = [
    "DEMO_BAD_LINES",
    "TranscriptFile",
    "generate_bulk",
    "generate_demo",
    "write_transcripts",
]
