"""What an episode records besides its summary and scores.

Topics, outcomes (decisions, agreements, action items), open threads, entities and the
user's state, each read from the analysed messages in message order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Sequence
from dataclasses import replace
from typing import Literal

from tasks.extraction import _lexicon as lexicon
from tasks.extraction._analysis import MAX_ITEMS, SPOKEN, Msg, cued, sentences
from tasks.extraction._person import attributed, display_name
from tasks.extraction._text import (
    TOKEN,
    TOPIC_CAP,
    at_sentence_start,
    clip,
    content_counts,
    dedup_key,
    is_content,
    is_question,
    lowercase,
    names,
    phrases,
    rank,
    references,
)
from tasks.extraction._types import OpenThread, Outcome

_DECISION = phrases(
    r"we decided\b",
    r"i decided\b",
    r"decided to\b",
    r"decision\s*:",
    r"let'?s go with\b",
    r"going with\b",
    r"settled on\b",
    r"we'll go with\b",
)
_AGREEMENT = phrases(r"agreed\b", r"we agree\b", r"i agree\b", r"it's a deal\b")
_ACTION = phrases(r"i'll\b", r"i will\b", r"we will\b", r"we'll\b", r"action item\b")
_FOLLOW_UP = phrases(r"follow[ -]?up\b", r"remind me\b", r"later\b", r"next week\b", r"todo\b")
_HEDGE = phrases(r"not sure\b", r"don't know\b", r"no idea\b", r"i think\b", r"i guess\b")


def _topic_word(key: str, exclude: Container[str]) -> bool:
    return (
        3 <= len(key) <= TOPIC_CAP
        and key not in lexicon.STOPWORDS
        and key not in lexicon.WEAK_TOPICS
        and not key.isdigit()
        and key not in exclude
    )


class _TopicCounts:
    """Words and two-word phrases of content words, and how each word is written where it
    does not open a sentence (so "Moreau" keeps its capital and "Budget" does not)."""

    def __init__(self, exclude: Container[str]) -> None:
        self.exclude = exclude
        self.words: Counter[str] = Counter()
        self.pairs: Counter[str] = Counter()
        self.forms: dict[str, Counter[str]] = {}
        self.openers: dict[str, str] = {}  # the form of a word seen only opening sentences
        self.lower: set[str] = set()  # words also written in lower case

    def add(self, text: str) -> None:
        previous, previous_end = "", -1
        for match in TOKEN.finditer(text):
            word, start = match.group(), match.start()
            key = lowercase(word)
            if not _topic_word(key, self.exclude):
                previous = ""
                continue
            self.words[key] += 1
            if word == key:
                self.lower.add(key)
            if not at_sentence_start(text, start):
                self.forms.setdefault(key, Counter())[word] += 1
            else:
                self.openers.setdefault(key, word)
            if previous and text[previous_end:start] == " ":
                self.pairs[f"{previous} {key}"] += 1
            previous, previous_end = key, match.end()

    def _word(self, key: str) -> str:
        forms = self.forms.get(key)
        if forms:
            return forms.most_common(1)[0][0]
        return key if key in self.lower else self.openers.get(key, key)

    def form(self, phrase: str) -> str:
        """The phrase as the session writes it mid-sentence; a word seen only opening
        sentences keeps its capital unless it is also written in lower case."""
        return " ".join(self._word(key) for key in phrase.split(" "))


def find_topics(msgs: Sequence[Msg], exclude: Container[str] = ()) -> tuple[str, ...]:
    """Up to five topics: two-word phrases said twice or more, then the words said most
    (twice or more, unless nothing is), never an everyday word alone; names keep their
    capitals."""
    counts = _TopicCounts(exclude)
    for msg in msgs:
        counts.add(msg.text)
    scored = {p: 2 * n for p, n in counts.pairs.items() if n >= 2}
    repeated = {w: n for w, n in counts.words.items() if n >= 2}
    scored.update({w: n for w, n in (repeated or counts.words).items() if w not in scored})
    chosen: list[str] = []
    for phrase in rank(scored, len(scored)):
        inside = any(phrase in c.split(" ") or c in phrase.split(" ") for c in chosen)
        if not inside:
            chosen.append(phrase)
        if len(chosen) == 5:
            break
    return tuple(counts.form(p) for p in chosen)


def _outcome_type(lower: str) -> Literal["decision", "agreement", "action"] | None:
    if _DECISION.search(lower):
        return "decision"
    if _AGREEMENT.search(lower):
        return "agreement"
    return "action" if _ACTION.search(lower) else None


def find_outcomes(msgs: Sequence[Msg]) -> tuple[Outcome, ...]:
    """Decisions, agreements and action items, one per sentence, first mention wins."""
    found: dict[str, Outcome] = {}
    for msg in msgs:
        for sentence, lower in cued(msg, lexicon.OUTCOME_CUES):
            kind = None if is_question(sentence) else _outcome_type(lower)
            key = dedup_key(lower) if kind is not None else ""
            if kind is not None and key not in found:
                found[key] = Outcome(kind, clip(sentence, 300), (msg.record.id,))
        if len(found) >= MAX_ITEMS:
            break
    return tuple(found.values())[:MAX_ITEMS]


def _answered_after(msgs: Sequence[Msg]) -> list[bool]:
    """Per message: did the assistant, or another person in a group, speak after it?"""
    answered = [False] * len(msgs)
    assistant_later = False
    later_speakers: set[str] = set()
    for position in range(len(msgs) - 1, -1, -1):
        record = msgs[position].record
        answered[position] = assistant_later or bool(later_speakers - {record.speaker})
        if record.role == "assistant":
            assistant_later = True
        elif record.role == "user":
            later_speakers.add(record.speaker)
    return answered


def _thread_topic(lower: str, topics: Sequence[str]) -> str:
    words = [w for w in TOKEN.findall(lower) if is_content(w)]
    for topic in topics:
        if topic in words:
            return topic
    return max(words, key=len) if words else "general"


def _thread_status(
    msg: Msg, sentence: str, lower: str, *, answered: bool
) -> Literal["unanswered_question", "promised", "follow_up"] | None:
    if is_question(sentence):
        return "unanswered_question" if msg.record.role == "user" and not answered else None
    if _FOLLOW_UP.search(lower):
        return "follow_up"
    return "promised" if _ACTION.search(lower) else None


def _thread_sentences(msg: Msg) -> list[tuple[str, str]]:
    if msg.record.role == "user" and ("?" in msg.text or "？" in msg.text):
        return sentences(msg)
    return cued(msg, lexicon.THREAD_CUES)


def find_open_threads(
    msgs: Sequence[Msg], topics: Sequence[str], outcomes: Sequence[Outcome] = ()
) -> tuple[OpenThread, ...]:
    """Unanswered user questions, promises and follow-ups, in message order; a sentence
    that is already a decision or an agreement is not also left open."""
    answered = _answered_after(msgs)
    settled = {dedup_key(o.content.lower()) for o in outcomes if o.type != "action"}
    threads: dict[str, OpenThread] = {}
    for position, msg in enumerate(msgs):
        for sentence, lower in _thread_sentences(msg):
            status = _thread_status(msg, sentence, lower, answered=answered[position])
            key = dedup_key(lower) if status is not None else ""
            if status is not None and key not in threads and key not in settled:
                topic = _thread_topic(lower, topics)
                threads[key] = OpenThread(topic, status, clip(sentence, 300), (msg.record.id,))
        if len(threads) >= MAX_ITEMS:
            break
    return tuple(threads.values())[:MAX_ITEMS]


def attribute_threads(threads: Sequence[OpenThread], msgs: Sequence[Msg]) -> tuple[OpenThread, ...]:
    """Each thread's context told by whoever left it open ("Aria will book it tonight.")."""
    records = {m.record.id: m.record for m in msgs}
    out: list[OpenThread] = []
    for thread in threads:
        record = records.get(thread.message_ids[0]) if thread.message_ids else None
        if record is not None:
            name = display_name(record.speaker, record.role)
            thread = replace(thread, context=attributed(thread.context, name))
        out.append(thread)
    return tuple(out)


def speaker_names(msgs: Sequence[Msg]) -> list[str]:
    """Distinct named speakers of spoken messages, generic ones ("user") left out."""
    found: dict[str, None] = {}
    for msg in msgs:
        speaker = msg.record.speaker.strip()
        if msg.record.role in SPOKEN and speaker.lower() not in lexicon.GENERIC_SPEAKERS:
            found.setdefault(speaker, None)
    return list(found)


def find_entities(spoken: Sequence[Msg], speakers: Sequence[str]) -> tuple[str, ...]:
    """Named participants first, then names, links and paths by frequency."""
    counts: dict[str, int] = {}
    for msg in spoken:
        for name in names(msg.text):
            counts[name] = counts.get(name, 0) + 1
        for kind, ref in references(msg.text):
            if kind != "issue":
                counts[ref] = counts.get(ref, 0) + 1
    rest = [e for e in rank(counts, 10 + len(speakers)) if e not in speakers]
    return tuple([*speakers, *rest][:10])


def read_user_state(
    users: Sequence[Msg], topics: Sequence[str], exclude: Container[str]
) -> dict[str, str]:
    """Mood, confidence and focus of the user, from the user's own messages."""
    counts: Counter[str] = Counter()
    hedges = 0
    for msg in users:
        counts.update(msg.tokens)
        if not lexicon.HEDGE_CUES.isdisjoint(msg.tokens):
            hedges += len(_HEDGE.findall(msg.lower))
    mood, best = "neutral", 0
    for name, words in lexicon.MOODS:
        hits = sum(counts[w] for w in words)
        mood, best = (name, hits) if hits > best else (mood, best)
    unsure = hedges + sum(counts[w] for w in lexicon.UNCERTAIN)
    sure = sum(counts[w] for w in lexicon.CERTAIN)
    focus = rank(content_counts(counts, exclude), 1)
    return {
        "mood": mood,
        "confidence": "uncertain" if unsure > sure else "certain",
        "focus": (focus or tuple(topics) or ("general",))[0],
    }
