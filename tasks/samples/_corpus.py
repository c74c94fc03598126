"""The sample conversations' templates and word lists, read once from ``corpus.json``.

A script turn is [speaker code, template]. Speaker codes: "u" the namespace's user (or
the delegating agent in a sub-agent session), "u0".."u3" members of a group, "a" the
assistant, "t:<tool>" a tool. Templates are filled with `str.format_map` from ``slots``,
so they hold no literal braces. A topic is one scripted conversation: a session takes a
prefix of its ``turns``, then one of its ``final`` endings; ``followup`` continues it on a
later day.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

Turn = tuple[str, str]


@dataclass(frozen=True)
class Topic:
    """One scripted conversation: a session takes a prefix of `turns`, then `final`."""

    title: str | None
    turns: tuple[Turn, ...]
    followup: tuple[Turn, ...] = ()
    final: tuple[tuple[Turn, ...], ...] = ()


def _turns(raw: list[list[str]]) -> tuple[Turn, ...]:
    return tuple((code, template) for code, template in raw)


def _topic(raw: dict[str, Any]) -> Topic:
    return Topic(
        title=raw["title"],
        turns=_turns(raw["turns"]),
        followup=_turns(raw.get("followup", [])),
        final=tuple(_turns(ending) for ending in raw.get("final", [])),
    )


def _topics(raw: list[dict[str, Any]]) -> tuple[Topic, ...]:
    return tuple(_topic(t) for t in raw)


_DATA: dict[str, Any] = json.loads(
    resources.files("tasks.samples").joinpath("corpus.json").read_text(encoding="utf-8")
)

SLOTS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _DATA["slots"].items()}
TEAM: tuple[str, ...] = tuple(_DATA["team"])
ALICE = _topics(_DATA["alice"])
BOB = _topics(_DATA["bob"])
BOB_SUBAGENT = _topics(_DATA["bob_subagent"])
ATLAS = _topics(_DATA["atlas"])
FOREIGN: dict[str, tuple[Topic, ...]] = {k: _topics(v) for k, v in _DATA["foreign"].items()}
QUICK: dict[str, tuple[Topic, ...]] = {k: _topics(v) for k, v in _DATA["quick"].items()}
BULK_SENTENCES: tuple[str, ...] = tuple(_DATA["bulk_sentences"])
BULK_WORDS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _DATA["bulk_words"].items()}
