"""The local model's built graph is kept between processes, checked, and never required."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from storage.embedding import LocalEmbedder, preload

TEXTS = ["Should I buy new shoes before the race?", "what footwear should I get for running"]

SECOND_PROCESS = """
import sys
from pathlib import Path
from storage.embedding import LocalEmbedder
from storage.embedding import preload
vectors = LocalEmbedder(threads=1, cache_dir=Path(sys.argv[1])).embed(sys.argv[2:])
print("onnx imported:", "onnx" in sys.modules)
print(" ".join(f"{v:.6f}" for v in vectors[0][:4]))
"""


@dataclass(frozen=True)
class Kept:
    """The float32 graph as a first process keeps it: its folder, and the vectors of
    ``TEXTS`` that process got from the graph it built (in memory, before writing it)."""

    folder: Path
    vectors: np.ndarray

    def copy_to(self, folder: Path) -> None:
        """The kept files into ``folder`` as written: their sizes and modification times
        copied too (``copy2``), so the sidecar matches them without a read."""
        for file in self.folder.iterdir():
            shutil.copy2(file, folder / file.name)


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kept]:
    """Built once for the tests that load, damage or replace a kept graph: each changes a
    copy of its own (``Kept.copy_to``). A build took 0.8 s of CPU, and five tests built it
    to the same bytes only to start from it."""
    folder = tmp_path_factory.mktemp("kept")
    yield Kept(folder, LocalEmbedder(threads=1, cache_dir=folder).embed(TEXTS))
    shutil.rmtree(folder)


def graphs(folder: Path) -> list[Path]:
    return sorted(folder.glob("all-MiniLM-L6-v2-*.onnx"))


def alias(folder: Path) -> Path:
    """Another path to ``folder``: a model this process has not loaded yet (one is kept
    per graph and folder), so the files are read again."""
    link = folder.with_name(f"{folder.name}-alias")
    link.symlink_to(folder, target_is_directory=True)
    return link


@pytest.mark.parametrize("touched", [False, True], ids=["as written", "touched"])
def test_a_second_process_loads_the_kept_graph_without_building_it(
    kept: Kept, tmp_path: Path, *, touched: bool
) -> None:
    kept.copy_to(tmp_path)
    [graph] = graphs(tmp_path)
    weights = graph.with_suffix(".data")  # mapped by ONNX Runtime, not copied
    assert graph.stat().st_size < 1_000_000 and weights.stat().st_size > 80_000_000
    assert graph.with_suffix(".sha256").is_file()
    if touched:  # as after a copy: the stat differs, so the digest is checked, and matches
        later = weights.stat().st_mtime_ns + 10**10
        os.utime(weights, ns=(later, later))

    done = subprocess.run(
        [sys.executable, "-c", SECOND_PROCESS, str(tmp_path), *TEXTS],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    imported, head = done.stdout.splitlines()
    assert imported == "onnx imported: False"  # building the graph needs onnx; loading does not
    assert np.allclose([float(v) for v in head.split()], kept.vectors[0][:4], atol=1e-6)


def test_a_damaged_graph_is_rebuilt(
    kept: Kept, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kept.copy_to(tmp_path)
    [graph] = graphs(tmp_path)
    weights = graph.with_suffix(".data")
    data = bytearray(weights.read_bytes())
    data[-1000] ^= 0xFF
    weights.write_bytes(bytes(data))

    with caplog.at_level(logging.WARNING):
        again = LocalEmbedder(threads=2, cache_dir=alias(tmp_path)).embed(TEXTS)

    assert "is damaged; rebuilding it" in caplog.text
    assert np.abs(again - kept.vectors).max() < 1e-5  # the graph as built
    assert weights.read_bytes() != bytes(data)  # the rebuilt weights replaced the damaged


def test_a_graph_kept_whole_by_an_earlier_version_is_replaced_silently(
    kept: Kept, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    kept.copy_to(tmp_path)
    [graph] = graphs(tmp_path)
    graph.with_suffix(".data").unlink()  # the earlier layout: one file, weights inside,
    graph.write_bytes(b"graph with its weights inside")  # and a sidecar of three fields
    graph.with_suffix(".sha256").write_text("0123abcd 29 1700000000000000000\n")

    with caplog.at_level(logging.WARNING):
        vectors = LocalEmbedder(threads=4, cache_dir=alias(tmp_path)).embed(TEXTS)

    assert vectors.shape == (2, 384)
    assert "damaged" not in caplog.text
    assert graph.with_suffix(".data").stat().st_size > 80_000_000


def test_a_folder_that_cannot_be_written_costs_the_build_not_the_search(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING):
        vectors = LocalEmbedder(threads=1, cache_dir=blocked / "cache").embed(TEXTS)
    assert vectors.shape == (2, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert "cannot keep the model graph" in caplog.text


def test_preloading_builds_the_model_in_the_background(tmp_path: Path) -> None:
    loader = preload(tmp_path, "float32")  # a folder no other test loads
    assert loader.daemon
    loader.join(timeout=120)
    assert not loader.is_alive() and len(graphs(tmp_path)) == 1  # built, and kept
    vectors = LocalEmbedder(threads=3, cache_dir=tmp_path).embed(TEXTS)
    assert vectors.shape == (2, 384)


def test_the_query_graph_is_kept_beside_the_model_and_loaded_without_building(
    tmp_path: Path,
) -> None:
    preload(tmp_path, "int8", query=True).join(timeout=120)  # a folder no other test loads
    [graph] = sorted(tmp_path.glob("all-MiniLM-L6-v2-int8-*.onnx"))
    assert graph.name.startswith("all-MiniLM-L6-v2-int8-query-")  # its query form only
    assert graph.with_suffix(".data").stat().st_size < 25_000_000  # int8: a quarter of 90 MB
    expected = LocalEmbedder(threads=5, cache_dir=tmp_path).embed_query(TEXTS[0])

    done = subprocess.run(
        [sys.executable, "-c", QUERY_PROCESS, str(tmp_path), TEXTS[0]],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    imported, head = done.stdout.splitlines()
    assert imported == "onnx imported: False"  # read from the folder, not quantised again
    assert np.allclose([float(v) for v in head.split()], expected[:4], atol=1e-6)


QUERY_PROCESS = """
import sys
from pathlib import Path
from storage.embedding import LocalEmbedder
vector = LocalEmbedder(threads=5, cache_dir=Path(sys.argv[1])).embed_query(sys.argv[2])
print("onnx imported:", "onnx" in sys.modules)
print(" ".join(f"{v:.6f}" for v in vector[:4]))
"""
