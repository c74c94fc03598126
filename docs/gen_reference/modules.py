"""The source tree as it is: each package's modules with the first sentence of their
docstring, so the architecture page cannot name a module that is gone or miss a new one."""

from __future__ import annotations

import ast
from pathlib import Path

from gen_reference.text import code, prose, table

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("deployments", "flows", "serving", "tasks", "storage")
SKIPPED = {"versions"}  # storage/migrations/versions: one module per migration


def markdown() -> str:
    """A section per package, in layer order, with a row per module and subpackage."""
    parts = []
    for layer in LAYERS:
        for package in sorted(_packages(ROOT / layer)):
            parts.append(_package(package))
    return "\n\n".join(parts) + "\n"


def _packages(folder: Path) -> list[Path]:
    found = [folder]
    for child in sorted(folder.iterdir()):
        if child.is_dir() and child.name not in SKIPPED and any(child.glob("*.py")):
            found += _packages(child)
    return found


def _package(folder: Path) -> str:
    name = folder.relative_to(ROOT).as_posix()
    rows = []
    for child in sorted(folder.iterdir()):
        if child.name == "__init__.py" or child.name.startswith("."):
            continue
        if child.suffix == ".py":
            rows.append([code(child.name), prose(_summary(child))])
        elif child.is_dir() and any(child.glob("*.py")):
            init = child / "__init__.py"
            first = init if init.exists() else sorted(child.glob("*.py"))[0]
            about = prose(_summary(first))
            if child.name in SKIPPED:
                about = "one module per migration"
            rows.append([code(child.name + "/"), about or " "])
    intro = _summary(folder / "__init__.py") if (folder / "__init__.py").exists() else ""
    heading = f"### `{name}/` {{#{name.replace('/', '-')}}}"
    listing = table(["Module", "What it is"], rows)
    return "\n\n".join(part for part in (heading, prose(intro), listing) if part)


def _summary(path: Path) -> str:
    """The first sentence (or line) of a module's docstring."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    end = first.find(". ")
    return first if end < 0 else first[: end + 1]
