"""The episode summary: the session's most informative sentences, each told by its speaker.

Extractive and offline. Every spoken sentence with some content is a candidate; its
weight is its centrality among the session's sentences (LexRank: PageRank over the cosine
graph of their vectors, from whichever embedder the run uses) times a prior for what a
note keeps: numbers and dates, names, decisions, what the user says of themselves, the
opening request; questions weigh less. Sentences are then taken greedily by weight per
character, each passing over one too close to a sentence already taken (maximal marginal
relevance), until ``BUDGET`` characters are used, and told in the session's order:
"Mara signed up for the Leipzig half marathon on April 19th." (an English first-person
statement, rewritten), else "Aria: Keep the hills short." A decision reads "Alice decided:
...", a question "Alice asked: ...", and one thing still open, if it was not said already,
closes the summary: every sentence appears once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tasks.extraction._analysis import SPOKEN, Msg, sentences
from tasks.extraction._person import attributed, display_name
from tasks.extraction._text import (
    TOKEN,
    clip,
    dedup_key,
    is_content,
    is_question,
    leans_back,
    lowercase,
    names,
)
from tasks.extraction._types import OpenThread, Outcome

BUDGET = 650  # characters of a summary, at most
SENTENCE_CAP = 240  # a longer sentence is clipped: one must not take the whole budget
CANDIDATE_CAP = 60  # sentences embedded per session (the ones with the highest prior)
_REDUNDANT = 0.8  # a sentence this close to one already taken adds nothing
_OPENING = 0.75  # prior bonus of the first sentence the user says
_OPENING_REST = 0.25  # and of the rest of their first message
_DAMPING = 0.85
_ROUNDS = 30
_VERBS = {"decision": "decided", "agreement": "agreed"}
_CJK = ("\u3040", "\u9fff")


@dataclass
class _Sentence:
    """One candidate: where it was said, by whom, and how it would read."""

    position: int
    key: str  # the whole sentence's dedup key (``_text.dedup_key``)
    text: str
    line: str  # the sentence as the summary tells it, attribution included
    label: str  # "Name" when the line is "Name: text", else "" (it names its subject)
    prior: float


def _has_cjk(text: str) -> bool:
    return any(_CJK[0] <= ch <= _CJK[1] for ch in text)


def _substantial(sentence: str, tokens: Sequence[str]) -> bool:
    """Three words or more, two of content (or one and a number), or a CJK sentence of
    some length: "Sure, happy to help with that." says nothing a note would keep."""
    if _has_cjk(sentence):
        return len(sentence) >= 8
    content = sum(1 for t in tokens if is_content(t))
    has_number = any(ch.isdigit() for ch in sentence)
    return len(tokens) >= 3 and (content >= 2 or (content >= 1 and has_number))


def _line(text: str, name: str, outcome: str | None) -> tuple[str, str]:
    """(line, label): the sentence as a note about its speaker, or attributed."""
    line = attributed(text, name)
    if line != f"{name}: {text}":
        return line, ""
    if outcome is not None and outcome not in lowercase(text):
        return f"{name} {outcome}: {text}", ""
    return line, name


def _prior(text: str, tokens: Sequence[str], *, opening: float, outcome: bool) -> float:
    """What a note keeps: numbers, names, outcomes, the opening (``opening``: its bonus);
    questions and fragments that lean on what was said before weigh less."""
    content = sum(is_content(t) for t in tokens)
    prior = 1.0 + 0.15 * min(content, 8) / 8
    prior += 0.5 if any(ch.isdigit() for ch in text) else 0.0
    prior += 0.25 * min(2, len(set(names(text))))
    prior += 0.75 if outcome else 0.0
    prior += opening
    prior *= 0.5 if leans_back(tokens) else 1.0
    return prior * (0.6 if is_question(text) else 1.0)


def _candidates(spoken: Sequence[Msg], outcomes: Sequence[Outcome]) -> list[_Sentence]:
    decided = {dedup_key(o.content.lower()): o.type for o in outcomes if o.type in _VERBS}
    first_user = next((m.record.id for m in spoken if m.record.role == "user"), None)
    # the user's first words usually say what the session is for: its first sentence most
    openings = [_OPENING, _OPENING_REST]
    found: list[_Sentence] = []
    seen: set[str] = set()
    for msg in spoken:
        name = display_name(msg.record.speaker, msg.record.role)
        for sentence, lower in sentences(msg):
            tokens = TOKEN.findall(lower)
            key = dedup_key(lower)
            if key in seen or not _substantial(sentence, tokens):
                continue
            seen.add(key)
            text = clip(sentence, SENTENCE_CAP)
            outcome = decided.get(key)
            line, label = _line(text, name, _VERBS.get(outcome or ""))
            opening = 0.0
            if msg.record.id == first_user:
                opening = openings.pop(0) if len(openings) > 1 else openings[0]
            prior = _prior(text, tokens, opening=opening, outcome=outcome is not None)
            found.append(_Sentence(len(found), key, text, line, label, prior))
    if len(found) > CANDIDATE_CAP:
        kept = sorted(found, key=lambda s: (-s.prior, s.position))[:CANDIDATE_CAP]
        found = sorted(kept, key=lambda s: s.position)
    return found


def centrality(vectors: np.ndarray) -> np.ndarray:
    """LexRank: stationary weights of a random walk over the cosine graph, mean 1."""
    count = len(vectors)
    if count < 3:
        return np.ones(count)
    sims = np.clip(vectors @ vectors.T, 0.0, None)
    np.fill_diagonal(sims, 0.0)
    rows = sims.sum(axis=1, keepdims=True)
    walk = np.divide(sims, rows, out=np.full_like(sims, 1.0 / count), where=rows > 0)
    weights = np.full(count, 1.0 / count)
    for _ in range(_ROUNDS):
        weights = (1 - _DAMPING) / count + _DAMPING * (walk.T @ weights)
    result: np.ndarray = weights * count
    return result


def _select(found: Sequence[_Sentence], vectors: np.ndarray, budget: int) -> list[_Sentence]:
    """Greedy by weight per character, skipping redundant sentences, within the budget."""
    weights = np.array([s.prior for s in found]) * (0.5 + 0.5 * centrality(vectors))
    chosen: list[int] = []
    left = budget
    while True:
        best, best_value = -1, 0.0
        for index, sentence in enumerate(found):
            cost = len(sentence.line) + 1
            if index in chosen or cost > left:
                continue
            overlap = max((float(vectors[index] @ vectors[c]) for c in chosen), default=0.0)
            if overlap >= _REDUNDANT:
                continue
            value = weights[index] * (1.0 - 0.5 * max(overlap, 0.0)) / math.sqrt(cost)
            if value > best_value:
                best, best_value = index, value
        if best < 0:
            return sorted((found[i] for i in chosen), key=lambda s: s.position)
        chosen.append(best)
        left -= len(found[best].line) + 1


def _render(chosen: Sequence[_Sentence]) -> str:
    """The lines in order; consecutive attributed lines of one speaker share the label."""
    parts: list[str] = []
    previous = ""
    for sentence in chosen:
        if sentence.label and sentence.label == previous:
            parts.append(sentence.line[len(sentence.label) + 2 :])
        else:
            parts.append(sentence.line)
        previous = sentence.label
    return " ".join(parts)


def _open_line(threads: Sequence[OpenThread], said: set[str]) -> str | None:
    """The latest open thread (told by whoever left it open) not already in the summary,
    unless it is a fragment that leans on what was said before."""
    for thread in reversed(threads):
        lower = lowercase(thread.context)
        tokens = TOKEN.findall(lower)
        if dedup_key(lower) in said or leans_back(tokens) or len(tokens) < 4:
            continue
        return f"Open: {clip(thread.context, 200)}"
    return None


def _brief(msgs: Sequence[Msg], spoken: Sequence[Msg]) -> str:
    """A session with nothing to choose from: who spoke, and their first words."""
    if not spoken:
        return f"The session holds {len(msgs)} message(s), none from the user or the assistant."
    said = [m for m in spoken if m.text]
    if not said:
        return "The session has messages without text."
    first = said[0]
    name = display_name(first.record.speaker, first.record.role)
    return f"{name} said: {clip(first.text, 200)}" + ("" if first.text[-1:] in ".!?" else ".")


@dataclass
class SummaryDraft:
    """A session's summary before its sentences' vectors: ``texts`` are what to embed
    (`finish` takes their vectors, in order), so the sentences of many sessions can go
    to the model in one call."""

    msgs: Sequence[Msg]
    threads: Sequence[OpenThread]
    found: list[_Sentence]

    @property
    def texts(self) -> list[str]:
        return [s.text for s in self.found]

    def finish(self, vectors: np.ndarray) -> str:
        """At most ``BUDGET`` characters: the session's most informative sentences, in
        order, each attributed, then one thing left open."""
        msgs = self.msgs
        if not msgs:
            return "The session has no messages yet. Nothing was extracted."
        if not self.found:
            return _brief(msgs, [m for m in msgs if m.record.role in SPOKEN])
        return _compose(self.found, vectors, self.threads)


def summary_draft(
    msgs: Sequence[Msg], outcomes: Sequence[Outcome], threads: Sequence[OpenThread]
) -> SummaryDraft:
    """The candidate sentences of a session's summary (`SummaryDraft`)."""
    spoken = [m for m in msgs if m.record.role in SPOKEN]
    return SummaryDraft(msgs, threads, _candidates(spoken, outcomes) if msgs else [])


def _compose(found: Sequence[_Sentence], vectors: np.ndarray, threads: Sequence[OpenThread]) -> str:
    # room for the closing line, kept whatever is chosen (it may turn out to be said already)
    closing = _open_line(threads, set())
    chosen = _select(found, vectors, BUDGET - (len(closing) + 1 if closing else 0))
    closing = _open_line(threads, {dedup_key(lowercase(s.line)) for s in chosen})
    text = _render(chosen)
    if closing and len(text) + len(closing) + 1 <= BUDGET:
        text = f"{text} {closing}" if text else closing
    return text
