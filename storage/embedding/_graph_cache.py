"""The local model's ONNX graph, built once per machine and kept in a cache folder.

Building the graph from the packaged weights takes 0.7 s (`_bert_onnx`), most of a CLI
search's start-up: a command that embeds one query would pay it on every call. The built
bytes go to ``<cache>/all-MiniLM-L6-v2-<key>.onnx``, where the key covers the published
weights' digests and this builder's source, so a changed builder or model never reads an
old graph. A sidecar ``.sha256`` guards against a damaged file, which is rebuilt; a folder
that cannot be written costs the build, never the search.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/archivist``, else ``~/.cache/archivist``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "archivist"


def cache_key(parts: Iterable[str], builder: Path) -> str:
    """A digest of the weights' published digests and the builder's source."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
    digest.update(builder.read_bytes())
    return digest.hexdigest()[:16]


def cached_graph(path: Path, build: Callable[[], bytes]) -> bytes:
    """The graph at ``path`` if it is intact, else ``build()``, stored there for next time."""
    kept = _read(path)
    if kept is not None:
        return kept
    graph = build()
    _write(path, graph)
    return graph


def _read(path: Path) -> bytes | None:
    sidecar = path.with_suffix(".sha256")
    try:
        graph, expected = path.read_bytes(), sidecar.read_text().strip()
    except OSError:
        return None
    if hashlib.sha256(graph).hexdigest() != expected:
        log.warning("%s is damaged; rebuilding it", path)
        return None
    return graph


def _write(path: Path, graph: bytes) -> None:
    """Graph first, then its digest, each by rename: a reader sees both whole or no match."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for target, data in (
            (path, graph),
            (path.with_suffix(".sha256"), hashlib.sha256(graph).hexdigest().encode()),
        ):
            partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
            partial.write_bytes(data)
            os.replace(partial, target)
    except OSError as exc:
        log.warning("cannot keep the model graph in %s (%s); it is rebuilt per process", path, exc)
