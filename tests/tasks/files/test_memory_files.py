"""Atomic writes after a crash: a killed writer's hidden copy goes, a live writer's stays."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

from fsspec.implementations.local import LocalFileSystem

from storage.kernel.processes import host_tag
from tasks.files import atomic_write
from tests.tasks.files.writers import PausedWriter, temporaries


def test_a_write_killed_before_its_rename_leaves_a_copy_the_next_write_removes(
    tmp_path: Path,
) -> None:
    fs, folder = LocalFileSystem(), tmp_path / "alice" / "memory"
    log = folder / "2026-11-21.md"
    atomic_write(fs, str(log), b"# log\n")
    with (
        PausedWriter(log, "# log\n\nblock\n") as killed,
        PausedWriter(folder / "2026-11-22.md", "# today\n") as live,
    ):
        killed.kill()
        assert len(temporaries(folder)) == 2  # the killed one is a full hidden copy

        atomic_write(fs, str(folder / "2026-11-23.md"), b"# next run\n")

        assert [f"-{live.pid}." in name for name in temporaries(folder)] == [True]
        live.finish()  # its temporary file was left alone: the rename works
    assert temporaries(folder) == []
    assert sorted(p.name for p in folder.iterdir()) == [
        "2026-11-21.md",
        "2026-11-22.md",
        "2026-11-23.md",
    ]
    assert log.read_text() == "# log\n" and (folder / "2026-11-22.md").read_text() == "# today\n"


def test_a_temporary_whose_writer_cannot_be_checked_goes_after_an_hour(tmp_path: Path) -> None:
    folder = tmp_path / "alice"
    folder.mkdir()
    hour_ago = time.time() - 3700
    other_host = "0" * 8 if host_tag() != "0" * 8 else "1" * 8
    names = {
        "unnamed_old": f".MEMORY.md.{uuid.uuid4().hex}.tmp",  # the name before this fix
        "unnamed_new": f".MEMORY.md.{uuid.uuid4().hex}.tmp",
        "elsewhere_old": f".MEMORY.md.{other_host}-{os.getpid()}.{uuid.uuid4().hex}.tmp",
        "elsewhere_new": f".MEMORY.md.{other_host}-{os.getpid()}.{uuid.uuid4().hex}.tmp",
        "not_ours": ".MEMORY.md.notes.tmp",
    }
    for key, name in names.items():
        (folder / name).write_text("a copy\n")
        if key.endswith("_old") or key == "not_ours":
            os.utime(folder / name, (hour_ago, hour_ago))  # as a crash an hour ago left it

    atomic_write(LocalFileSystem(), str(folder / "MEMORY.md"), b"# memory\n")

    assert temporaries(folder) == sorted(
        [names["unnamed_new"], names["elsewhere_new"], names["not_ours"]]
    )
