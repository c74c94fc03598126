"""Word lists behind the heuristic extractor, read once from ``lexicon.toml`` beside this file.

Every list is lower-case tokens (what ``_text.TOKEN`` yields); the file says what each is for.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from typing import Any

_DATA: dict[str, Any] = tomllib.loads(
    resources.files("tasks.extraction").joinpath("lexicon.toml").read_text(encoding="utf-8")
)


def _words(name: str) -> frozenset[str]:
    return frozenset(_DATA["words"][name].split())


def _weights(table: str) -> dict[str, float]:
    return {token: float(weight) for token, weight in _DATA[table].items()}


STOPWORDS = _words("stopwords")
GENERIC_SPEAKERS = _words("generic_speakers")
NOT_ENTITIES = _words("not_entities")
FIRST_PERSON = _words("first_person")
ABBREVIATIONS = _words("abbreviations")
NUMERAL_ABBREVIATIONS = _words("numeral_abbreviations")
URGENCY = _weights("urgency")
SENTIMENT = _weights("sentiment")
NEGATIONS = _words("negations")
RISK = _words("risk")
IMPORTANCE_MARKERS = _words("importance_markers")
# Checked in the file's order, so ties resolve the same way every time.
MOODS: tuple[tuple[str, frozenset[str]], ...] = tuple(
    (mood, frozenset(words.split())) for mood, words in _DATA["moods"].items()
)
INTENSIFIERS = _words("intensifiers")
UNCERTAIN = _words("uncertain")
CERTAIN = _words("certain")
OUTCOME_CUES = _words("outcome_cues")
THREAD_CUES = _words("thread_cues")
SALIENT_CUES = _words("salient_cues")
HEDGE_CUES = _words("hedge_cues")
ANAPHORS = _words("anaphors")
WEAK_TOPICS = _words("weak_topics")


def _person_words(name: str) -> frozenset[str]:
    return frozenset(_DATA["person"][name].split())


def _person_pairs(name: str) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in _DATA["person"][name].split())


AUXILIARIES = _person_pairs("auxiliaries")
ADVERBS = _person_words("adverbs")
IRREGULAR_PAST = _person_words("irregular_past")
THIRD_PERSON = _person_pairs("third_person")
NOT_VERBS = _person_words("not_verbs")
