"""The local model's ONNX graph, built once per machine and kept in a cache folder.

Building the graph from the packaged weights takes 0.7 s (`_bert_onnx`), most of a CLI
search's start-up: a command that embeds one query would pay it on every call. The built
bytes go to ``<cache>/all-MiniLM-L6-v2-<key>.onnx``, where the key covers the published
weights' digests and this builder's source, so a changed builder or model never reads an
old graph. A sidecar ``.sha256`` (digest, size, modification time) guards against a
damaged file, which is rebuilt: a file changed since it was written is read whole and
checked against the digest. A folder that cannot be written costs the build, never the
search.
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


def cached_graph(path: Path, build: Callable[[], bytes]) -> bytes | str:
    """The graph at ``path`` (its file name, which ONNX Runtime reads itself) if it is
    intact, else ``build()``'s bytes, stored there for next time."""
    if _intact(path):
        return str(path)
    graph = build()
    _write(path, graph)
    return graph


def _intact(path: Path) -> bool:
    """Whether the file is the one the sidecar describes: same size and modification time
    as written (a stat), or else the same sha256 (a full read, as after a copy)."""
    try:
        digest, size, mtime = path.with_suffix(".sha256").read_text().split()
        stat = path.stat()
        if (stat.st_size, stat.st_mtime_ns) == (int(size), int(mtime)):
            return True
        if hashlib.sha256(path.read_bytes()).hexdigest() == digest:
            return True
    except (OSError, ValueError):
        return False
    log.warning("%s is damaged; rebuilding it", path)
    return False


def _write(path: Path, graph: bytes) -> None:
    """Graph first, then its sidecar (digest, size, mtime), each by rename: a reader sees
    both whole, or a sidecar that does not match and so a rebuild."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _replace(path, graph)
        stat = path.stat()
        sidecar = f"{hashlib.sha256(graph).hexdigest()} {stat.st_size} {stat.st_mtime_ns}\n"
        _replace(path.with_suffix(".sha256"), sidecar.encode())
    except OSError as exc:
        log.warning("cannot keep the model graph in %s (%s); it is rebuilt per process", path, exc)


def _replace(target: Path, data: bytes) -> None:
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    partial.write_bytes(data)
    os.replace(partial, target)
