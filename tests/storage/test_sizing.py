"""The server's cache sized for the machine: a quarter of its memory, bounded."""

from __future__ import annotations

from storage.server.engine import EMBEDDED_CACHE_MB, EMBEDDED_SETTINGS
from storage.server.sizing import SERVER_CEILING_MB, machine_memory, shared_buffers

GB = 2**30


def test_a_quarter_of_the_memory_between_postgres_default_and_the_ceiling() -> None:
    assert shared_buffers(24 * GB, SERVER_CEILING_MB) == "6144MB"
    assert shared_buffers(256 * GB, SERVER_CEILING_MB) == "16384MB"
    assert shared_buffers(GB // 4, SERVER_CEILING_MB) == "128MB"
    assert shared_buffers(None, SERVER_CEILING_MB) == "16384MB"


def test_a_laptop_keeps_512mb_and_a_small_machine_a_quarter() -> None:
    assert shared_buffers(16 * GB, EMBEDDED_CACHE_MB) == "512MB"
    assert shared_buffers(GB, EMBEDDED_CACHE_MB) == "256MB"


def test_this_machine_memory_is_read_and_the_embedded_setting_follows_it() -> None:
    memory = machine_memory()
    assert memory is not None
    assert memory > 256 * 2**20
    assert EMBEDDED_SETTINGS["shared_buffers"] == shared_buffers(memory, EMBEDDED_CACHE_MB)
