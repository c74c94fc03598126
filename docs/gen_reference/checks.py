"""What a hand-written page may name: variables that a setting reads, commands that exist,
files of the repository.

A page that names ``ARCHIVIST_SYNC__WINDOW``, ``archivist serch`` or ``storage/config.py``
has drifted from the code; the hook reports it, and ``mkdocs build --strict`` fails.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from gen_reference import cli
from storage.kernel.settings.variables import known_variables

# A variable, and whether it ends in a wildcard (`ARCHIVIST_QUEUE__*`, `..._PRIME_…`).
_VARIABLE = re.compile(r"\bARCHIVIST_[A-Z0-9_]*(\*|…)?")
# Misspelled on purpose, to show the warning a typo gets.
_EXAMPLES = frozenset({"ARCHIVIST_SYNC__WINDOW_HOUR"})
_FENCED = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_INLINE = re.compile(r"`([^`\n]+)`")
# A path in the repository, in code: `storage/kernel/inputs.py`, `bench/data/eval/`.
_PATH = re.compile(r"^(?:deployments|flows|serving|storage|tasks|bench|tests|docs)/[\w./-]*$")
_ROOT = Path(__file__).resolve().parents[2]
_COMMAND = re.compile(r"(?<![\w./-])(?:\.venv/bin/)?archivist((?: [a-z][a-z-]*(?![\w:/.-])){1,2})")


@functools.cache
def _variables() -> frozenset[str]:
    return frozenset(known_variables())


def problems(markdown: str) -> list[str]:
    """A line for each unknown variable or command the page names."""
    return _unknown_variables(markdown) + _unknown_commands(markdown) + _missing_paths(markdown)


def _unknown_variables(markdown: str) -> list[str]:
    known = _variables()
    found = []
    for match in _VARIABLE.finditer(markdown):
        name = match.group(0).rstrip("*…")
        if match.group(1):
            ok = any(variable.startswith(name) for variable in known)
        else:
            ok = name in known or name in _EXAMPLES or name == "ARCHIVIST_"
        if not ok:
            found.append(f"{match.group(0)} is not a variable any setting reads")
    return sorted(set(found))


def _unknown_commands(markdown: str) -> list[str]:
    fenced = [m.group(0) for m in _FENCED.finditer(markdown)]
    inline = _INLINE.findall(_FENCED.sub("", markdown))
    tree = cli.names()
    found = []
    for snippet in fenced + inline:
        for match in _COMMAND.finditer(snippet):
            words = match.group(1).split()
            if words[0] not in tree:
                found.append(f"`archivist {words[0]}` is not a command")
            elif tree[words[0]] and len(words) > 1 and words[1] not in tree[words[0]]:
                found.append(f"`archivist {' '.join(words)}` is not a command")
    return sorted(set(found))


def _missing_paths(markdown: str) -> list[str]:
    found = []
    for snippet in _INLINE.findall(_FENCED.sub("", markdown)):
        path = snippet.split(":")[0].rstrip("/")  # flows/x.py:function
        if _PATH.match(path) and "*" not in path and not (_ROOT / path).exists():
            found.append(f"`{snippet}` is not a file or folder of the repository")
    return sorted(set(found))
