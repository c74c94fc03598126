"""Deterministic, offline extractor: regexes and word lists, no model, no network.

Each message is analysed once (tokens, cue scores, sentences only when a cue fires), and
the episode, memories and task card are assembled from those analyses, so the cost stays
linear in the text and bounded per message by `_SCAN_CAP`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from storage.records import MessageRecord, SessionState
from tasks.extraction import lexicon
from tasks.extraction.types import (
    EpisodeDraft,
    Extraction,
    MemoryDraft,
    MemoryKind,
    OpenThread,
    Outcome,
    TaskCard,
)

__all__ = ["HeuristicExtractor"]

_SCAN_CAP = 4_000  # chars analysed per message: a pasted log adds cost, not meaning
_TURN_CAP = 2_000
_MIN_TURN = 12
_MAX_ITEMS = 20
_CARD_ITEMS = 8
_WORD_CAP = 1_000  # longer "words" are blobs (base64, minified code), never a link or path
_TOPIC_CAP = 40  # an unbroken run longer than this is noise, not a topic
_SPOKEN = ("user", "assistant")


def _char_class(predicate: Callable[[str], bool]) -> str:
    """Body of a regex character class holding every BMP character meeting predicate."""
    parts: list[str] = []
    start = -1
    for code in range(0x10001):
        hit = code < 0x10000 and predicate(chr(code))
        if hit and start < 0:
            start = code
        elif not hit and start >= 0:
            first, last = re.escape(chr(start)), re.escape(chr(code - 1))
            parts.append(first if start == code - 1 else f"{first}-{last}")
            start = -1
    return "".join(parts)


# `re` has no \p{Lu}; an explicit class keeps capitalised names working beyond ASCII.
_UPPER = _char_class(str.isupper)
_TOKEN = re.compile(r"\w+(?:'\w+)*")
# Sentence ends: ASCII marks need a following space ("3.5", "e.g.x" stay whole), CJK do not.
_SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？\n]")
_NORMALISE = re.compile(r"[\W_]+")
# No lookbehind here (it triples the cost); `_names` checks the preceding character.
_CAPITALISED = re.compile(rf"[{_UPPER}][\w'-]*(?:[ \t]+[{_UPPER}][\w'-]*)*")
_EXTENSIONS = (
    r"\.(?:py|md|txt|json|ya?ml|toml|cfg|ini|js|ts|tsx|go|rs|java|rb|sh|sql|csv"
    r"|html|css|ipynb|lock|log)\b"
)
_HAS_EXTENSION = re.compile(_EXTENSIONS)
# Applied to one whitespace-separated word at a time, so no alternative scans the whole text.
_REFERENCE = re.compile(
    r"(?P<url>https?://\S+)"
    r"|(?P<mention>(?<![\w@/])@[^\W\d]\w*)"
    r"|(?P<tag>(?<![\w#&/])#[^\W\d]\w*)"
    r"|(?P<issue>(?<![\w#&])#\d+\b)"
    r"|(?P<path>(?<![\w./-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*\w\.[A-Za-z0-9]{1,8}\b"
    r"|[\w-]+" + _EXTENSIONS + ")"
)
_EDGES = "()[]<>{}\"'`,;:!?“”«»「」"


def _phrases(*alternatives: str) -> re.Pattern[str]:
    """Alternatives matched from a word start, each opening with a plain letter.

    A leading word-boundary assertion turns off re's first-character scan and triples the
    cost, so the word start is checked by a lookbehind just after the first letter instead.
    """
    return re.compile("|".join(rf"{a[0]}(?<=\b{a[0]}){a[1:]}" for a in alternatives))


_DECISION = _phrases(
    r"we decided\b",
    r"i decided\b",
    r"decided to\b",
    r"decision\s*:",
    r"let'?s go with\b",
    r"going with\b",
    r"settled on\b",
    r"we'll go with\b",
)
_AGREEMENT = _phrases(r"agreed\b", r"we agree\b", r"i agree\b", r"it's a deal\b")
_ACTION = _phrases(r"i'll\b", r"i will\b", r"we will\b", r"we'll\b", r"action item\b")
_FOLLOW_UP = _phrases(r"follow[ -]?up\b", r"remind me\b", r"later\b", r"next week\b", r"todo\b")
_PREFERENCE = _phrases(
    r"i (?:really )?(?:prefer|like|love|hate|dislike|enjoy)\b",
    r"i (?:don't|do not) (?:like|want|enjoy)\b",
    r"i'd rather\b",
    r"always\b",
    r"never\b",
)
_FACT = _phrases(r"i(?: am|'m|'ve| work| live| have| was born| study)\b", r"my\b")
_HEDGE = _phrases(r"not sure\b", r"don't know\b", r"no idea\b", r"i think\b", r"i guess\b")
_BOUNDARY = re.compile(r"\b(?:don't|do not|only|must not|without|scope)\b")
_ACCEPTANCE = re.compile(r"\b(?:done when|acceptance|must(?! not)|should|tests? pass)")
_NEXT = re.compile(r"\b(?:next|follow[ -]?up|todo)\b")
_DONE = re.compile(r"(?<!not )\b(?:done|completed|finished|merged)\b|\ball tests pass")
_BLOCKED = re.compile(r"\b(?:blocked|cannot|can't|waiting for)\b")
_FAILED = re.compile(r"\b(?:failed|error)\b")


def _build_cues() -> dict[str, tuple[float, float, float, int]]:
    """One lookup per token: (urgency, sentiment, risk, importance marker)."""
    words = (
        set(lexicon.URGENCY) | set(lexicon.SENTIMENT) | lexicon.RISK | lexicon.IMPORTANCE_MARKERS
    )
    return {
        word: (
            lexicon.URGENCY.get(word, 0.0),
            lexicon.SENTIMENT.get(word, 0.0),
            0.5 if word in lexicon.RISK else 0.0,
            int(word in lexicon.IMPORTANCE_MARKERS),
        )
        for word in sorted(words)
    }


_CUES = _build_cues()
_CUE_WORDS = frozenset(_CUES)


@dataclass(frozen=True, slots=True)
class _Cues:
    urgency: float
    sentiment: float
    risk: float
    markers: int
    vehemence: float


_CALM = _Cues(0.0, 0.0, 0.0, 0, 0.0)


@dataclass(slots=True)
class _Msg:
    record: MessageRecord
    text: str
    lower: str
    tokens: list[str]
    cues: _Cues
    sentences: list[tuple[str, str]] | None = None


def _unit(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 4)


def _lower(text: str) -> str:
    return text.lower().replace("\u2019", "'")


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _key(lower: str) -> str:
    """Dedup key: case, punctuation and spacing do not make a sentence new."""
    return _NORMALISE.sub(" ", lower).strip()


def _make_cues(urgency: float, sentiment: float, risk: float, markers: int) -> _Cues:
    urgency, risk = _unit(urgency), _unit(risk)
    sentiment = round(max(-1.0, min(1.0, sentiment)), 4)
    vehemence = _unit(0.5 * urgency + 0.3 * abs(sentiment) + 0.2 * risk)
    return _Cues(urgency, sentiment, risk, markers, vehemence)


def _score(tokens: Sequence[str], text: str) -> _Cues:
    """Urgency, sentiment, risk and importance markers of one text from the lexicons."""
    hits = _CUE_WORDS.intersection(tokens)
    bangs = text.count("!") + text.count("！")
    if not hits and not bangs:
        return _CALM
    urgency = 0.1 * min(bangs, 3)
    sentiment = risk = 0.0
    markers = 0
    for position in [i for i, token in enumerate(tokens) if token in hits]:
        cue = _CUES[tokens[position]]
        prev = tokens[position - 1] if position else ""
        negated = prev in lexicon.NEGATIONS
        urgency += 0.0 if negated else cue[0]
        sentiment += -cue[1] if negated else cue[1] * (1.5 if prev in lexicon.INTENSIFIERS else 1.0)
        risk += cue[2]
        markers += cue[3]
    # squash so that one strong word reads as clearly, not maximally, emotional
    return _make_cues(urgency, sentiment / (abs(sentiment) + 1.0), risk, markers)


def _is_content(token: str) -> bool:
    return len(token) >= 3 and token not in lexicon.STOPWORDS and not token.isdigit()


def _content_counts(counts: Mapping[str, int], exclude: Container[str]) -> dict[str, int]:
    """Counts of the words that may be topics (inlined test: this runs on every word)."""
    stop = lexicon.STOPWORDS
    return {
        w: n
        for w, n in counts.items()
        if 3 <= len(w) <= _TOPIC_CAP and w not in stop and not w.isdigit() and w not in exclude
    }


def _analyse(record: MessageRecord) -> _Msg:
    text = record.content.strip()[:_SCAN_CAP]
    lower = _lower(text)
    if record.role not in _SPOKEN:
        return _Msg(record, text, lower, [], _CALM)
    tokens = _TOKEN.findall(lower)
    return _Msg(record, text, lower, tokens, _score(tokens, text))


def _sentences(msg: _Msg) -> list[tuple[str, str]]:
    """(sentence, lower-cased sentence) pairs, split once and only when asked for."""
    if msg.sentences is None:
        text, start, pairs = msg.text, 0, []
        # slicing at the matches is faster than re.split with a lookbehind
        for end in [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text)]:
            sentence = text[start:end].strip()
            if sentence:
                pairs.append((sentence, _lower(sentence)))
            start = end
        msg.sentences = pairs
    return msg.sentences


def _cued(msg: _Msg, cues: frozenset[str]) -> list[tuple[str, str]]:
    """The message's sentences if any token announces a cue of this family, else none."""
    if msg.record.role not in _SPOKEN or cues.isdisjoint(msg.tokens):
        return []
    return _sentences(msg)


def _rank(counts: Mapping[str, int], limit: int) -> tuple[str, ...]:
    # dicts keep first-seen order and sorted() is stable, so ties go to the earliest word
    return tuple(sorted(counts, key=lambda word: -counts[word])[:limit])


def _topics(msgs: Sequence[_Msg], exclude: Container[str] = ()) -> tuple[str, ...]:
    """The five most frequent content words; Counter.update keeps the loop in C."""
    counts: Counter[str] = Counter()
    for msg in msgs:
        counts.update(msg.tokens)
    return _rank(_content_counts(counts, exclude), 5)


def _is_question(sentence: str) -> bool:
    return sentence.endswith(("?", "？"))


def _outcome_type(lower: str) -> Literal["decision", "agreement", "action"] | None:
    if _DECISION.search(lower):
        return "decision"
    if _AGREEMENT.search(lower):
        return "agreement"
    return "action" if _ACTION.search(lower) else None


def _outcomes(msgs: Sequence[_Msg]) -> tuple[Outcome, ...]:
    """Decisions, agreements and action items, one per sentence, first mention wins."""
    found: dict[str, Outcome] = {}
    for msg in msgs:
        for sentence, lower in _cued(msg, lexicon.OUTCOME_CUES):
            kind = None if _is_question(sentence) else _outcome_type(lower)
            key = _key(lower) if kind is not None else ""
            if kind is not None and key not in found:
                found[key] = Outcome(kind, _clip(sentence, 300), (msg.record.id,))
        if len(found) >= _MAX_ITEMS:
            break
    return tuple(found.values())[:_MAX_ITEMS]


def _answered_after(msgs: Sequence[_Msg]) -> list[bool]:
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
    words = [w for w in _TOKEN.findall(lower) if _is_content(w)]
    for topic in topics:
        if topic in words:
            return topic
    return max(words, key=len) if words else "general"


def _thread_status(
    msg: _Msg, sentence: str, lower: str, answered: bool
) -> Literal["unanswered_question", "promised", "follow_up"] | None:
    if _is_question(sentence):
        return "unanswered_question" if msg.record.role == "user" and not answered else None
    if _FOLLOW_UP.search(lower):
        return "follow_up"
    return "promised" if _ACTION.search(lower) else None


def _thread_sentences(msg: _Msg) -> list[tuple[str, str]]:
    if msg.record.role == "user" and ("?" in msg.text or "？" in msg.text):
        return _sentences(msg)
    return _cued(msg, lexicon.THREAD_CUES)


def _open_threads(msgs: Sequence[_Msg], topics: Sequence[str]) -> tuple[OpenThread, ...]:
    """Unanswered user questions, promises and follow-ups, in message order."""
    answered = _answered_after(msgs)
    threads: dict[str, OpenThread] = {}
    for position, msg in enumerate(msgs):
        for sentence, lower in _thread_sentences(msg):
            status = _thread_status(msg, sentence, lower, answered[position])
            key = _key(lower) if status is not None else ""
            if status is not None and key not in threads:
                threads[key] = OpenThread(
                    _thread_topic(lower, topics), status, _clip(sentence, 300), (msg.record.id,)
                )
        if len(threads) >= _MAX_ITEMS:
            break
    return tuple(threads.values())[:_MAX_ITEMS]


def _references(text: str) -> list[tuple[str, str]]:
    """(kind, text) for URLs, file paths, @mentions, #tags and #123 refs, in text order."""
    # cheap checks first: most messages hold no reference at all
    if not ("/" in text or "@" in text or "#" in text or _HAS_EXTENSION.search(text)):
        return []
    found: list[tuple[str, str]] = []
    for word in text.split():
        if len(word) > _WORD_CAP or not (
            "/" in word or "@" in word or "#" in word or "." in word[:-1]
        ):
            continue
        match = _REFERENCE.search(word.lstrip(_EDGES).rstrip(_EDGES + "."))
        if match is not None and match.lastgroup is not None:
            found.append((match.lastgroup, match.group().rstrip(_EDGES + ".")))
    return found


def _at_sentence_start(text: str, start: int) -> bool:
    before = text[max(0, start - 4) : start].rstrip(" \t\"'(«“")
    return not before or before[-1] in ".!?。！？\n:"


def _names(text: str) -> Iterable[str]:
    """Capitalised words and phrases that do not merely open a sentence."""
    for match in _CAPITALISED.finditer(text):
        start, phrase = match.start(), match.group()
        if start and (text[start - 1].isalnum() or text[start - 1] in "_@#/.'-"):
            continue  # inside a word, handle or path, e.g. "iPhone" or "src/Main"
        single = " " not in phrase and "\t" not in phrase
        if single and phrase.lower() in lexicon.NOT_ENTITIES:
            continue
        opens = _at_sentence_start(text, start)
        if single and opens:
            continue
        words = phrase.split()[1:] if opens else phrase.split()
        while words and words[0].lower() in lexicon.NOT_ENTITIES:
            words = words[1:]
        name = " ".join(words)
        name = name[:-2] if name.endswith(("'s", "’s")) else name
        if len(name) >= 2 and name.lower() not in lexicon.STOPWORDS:
            yield name


def _speaker_names(msgs: Sequence[_Msg]) -> list[str]:
    names: dict[str, None] = {}
    for msg in msgs:
        speaker = msg.record.speaker.strip()
        if msg.record.role in _SPOKEN and speaker.lower() not in lexicon.GENERIC_SPEAKERS:
            names.setdefault(speaker, None)
    return list(names)


def _entities(spoken: Sequence[_Msg], speakers: Sequence[str]) -> tuple[str, ...]:
    """Named participants first, then names, links and paths by frequency."""
    counts: dict[str, int] = {}
    for msg in spoken:
        for name in _names(msg.text):
            counts[name] = counts.get(name, 0) + 1
        for kind, ref in _references(msg.text):
            if kind != "issue":
                counts[ref] = counts.get(ref, 0) + 1
    rest = [e for e in _rank(counts, 10 + len(speakers)) if e not in speakers]
    return tuple([*speakers, *rest][:10])


def _user_state(
    users: Sequence[_Msg], topics: Sequence[str], exclude: Container[str]
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
    focus = _rank(_content_counts(counts, exclude), 1)
    return {
        "mood": mood,
        "confidence": "uncertain" if unsure > sure else "certain",
        "focus": (focus or tuple(topics) or ("general",))[0],
    }


def _blend(values: Sequence[float]) -> float:
    """Mostly the peak, partly the mean: one alarmed message should count."""
    if not values:
        return 0.0
    peak = max(values, key=abs)
    return round(0.6 * peak + 0.4 * sum(values) / len(values), 4)


def _episode_cues(spoken: Sequence[_Msg], users: Sequence[_Msg]) -> _Cues:
    voice = users or spoken
    return _make_cues(
        _blend([m.cues.urgency for m in voice]),
        _blend([m.cues.sentiment for m in voice]),
        _blend([m.cues.risk for m in spoken]),
        sum(m.cues.markers for m in voice),
    )


def _display_name(record: MessageRecord) -> str:
    if record.speaker.strip().lower() in lexicon.GENERIC_SPEAKERS:
        return f"the {record.role}"
    return record.speaker.strip()


def _join(names: Sequence[str]) -> str:
    if len(names) > 4:
        return f"{', '.join(names[:3])} and {len(names) - 3} others"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _opening(spoken: Sequence[_Msg], topics: Sequence[str], total: int) -> str:
    names = list(dict.fromkeys(_display_name(m.record) for m in spoken))
    if not names:
        return f"The session holds {total} message(s), none from the user or the assistant."
    who = _join(names)
    who = who[0].upper() + who[1:]
    if topics:
        return f"{who} talked about {', '.join(topics[:3])}."
    return f"{who} had a brief exchange."


def _request(users: Sequence[_Msg]) -> str:
    """What the user asked for: the first question, else the first thing they said."""
    for msg in users:
        questions = _thread_sentences(msg) if "?" in msg.text or "？" in msg.text else []
        for sentence, _ in questions:
            if _is_question(sentence):
                return f'{_display_name(msg.record)} asked: "{_clip(sentence, 160)}"'
    for msg in users:
        if msg.text:
            first = _sentences(msg)[0][0]
            return f'{_display_name(msg.record)} said: "{_clip(first, 160)}"'
    return "The user sent no text." if users else "The user did not speak."


def _summary(
    msgs: Sequence[_Msg],
    topics: Sequence[str],
    outcomes: Sequence[Outcome],
    threads: Sequence[OpenThread],
) -> str:
    if not msgs:
        return "The session has no messages yet. Nothing was extracted."
    spoken = [m for m in msgs if m.record.role in _SPOKEN]
    users = [m for m in msgs if m.record.role == "user"]
    parts = [_opening(spoken, topics, len(msgs)), _request(users)]
    labels = {"decision": "Decided", "agreement": "Agreed", "action": "Action"}
    if outcomes:
        more = f" (+{len(outcomes) - 1} more)" if len(outcomes) > 1 else ""
        parts.append(f'{labels[outcomes[0].type]}: "{_clip(outcomes[0].content, 160)}"{more}.')
    if threads:
        more = f" (+{len(threads) - 1} more)" if len(threads) > 1 else ""
        parts.append(f'Still open: "{_clip(threads[0].context, 160)}"{more}.')
    return " ".join(parts)


def _salient_kind(sentence: str, lower: str, tokens: Sequence[str]) -> MemoryKind | None:
    """Preference or personal fact stated by the user; questions state nothing."""
    if _is_question(sentence) or not any(_is_content(w) for w in tokens):
        return None
    if _PREFERENCE.search(lower):
        return "preference"
    return "fact" if _FACT.search(lower) else None


_BASE_IMPORTANCE: dict[MemoryKind, float] = {
    "turn": 0.15,
    "fact": 0.5,
    "preference": 0.55,
    "decision": 0.6,
}


def _memory(kind: MemoryKind, content: str, msg: _Msg, cues: _Cues) -> MemoryDraft:
    raw = _BASE_IMPORTANCE[kind] + min(0.2, 0.1 * cues.markers) + 0.25 * cues.vehemence
    # a turn is raw material: it stays below every distilled fact, preference or decision
    importance = min(raw, 0.45) if kind == "turn" else raw
    return MemoryDraft(
        kind, content, (msg.record.id,), msg.record.timestamp, _unit(importance), cues.vehemence
    )


def _sentence_memory(
    kind: MemoryKind, sentence: str, msg: _Msg, tokens: Sequence[str]
) -> MemoryDraft:
    content = f"{msg.record.speaker}: {_clip(sentence, 500)}"
    return _memory(kind, content, msg, _score(tokens, sentence))


def _message_memories(msg: _Msg, seen: set[str]) -> list[MemoryDraft]:
    """A turn for the message, then each new fact or preference the user stated in it."""
    drafts: list[MemoryDraft] = []
    if len(msg.text) >= _MIN_TURN:
        turn = f"{msg.record.speaker}: {msg.record.content.strip()[:_TURN_CAP]}"
        drafts.append(_memory("turn", turn, msg, msg.cues))
    if msg.record.role != "user":
        return drafts
    for sentence, lower in _cued(msg, lexicon.SALIENT_CUES):
        if not (_PREFERENCE.search(lower) or _FACT.search(lower)):
            continue
        tokens = _TOKEN.findall(lower)
        kind = _salient_kind(sentence, lower, tokens)
        key = _key(lower) if kind is not None else ""
        if kind is not None and key not in seen:
            seen.add(key)
            drafts.append(_sentence_memory(kind, sentence, msg, tokens))
    return drafts


def _memories(msgs: Sequence[_Msg], outcomes: Sequence[Outcome]) -> tuple[MemoryDraft, ...]:
    """Turns, facts, preferences and decisions, in message order."""
    decided: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        if outcome.type != "action":
            decided.setdefault(outcome.message_ids[0], []).append(outcome)
    seen: set[str] = set()
    drafts: list[MemoryDraft] = []
    for msg in msgs:
        if msg.record.role not in _SPOKEN:
            continue
        drafts.extend(_message_memories(msg, seen))
        for outcome in decided.get(msg.record.id, []):
            key = _key(_lower(outcome.content))
            if key not in seen:
                seen.add(key)
                tokens = _TOKEN.findall(_lower(outcome.content))
                drafts.append(_sentence_memory("decision", outcome.content, msg, tokens))
    return tuple(drafts)


def _importance(
    cues: _Cues,
    outcomes: Sequence[Outcome],
    threads: Sequence[OpenThread],
    memories: Sequence[MemoryDraft],
) -> float:
    personal = any(m.kind in ("fact", "preference") for m in memories)
    score = 0.3 + (0.15 if outcomes else 0.0) + (0.1 if threads else 0.0)
    score += min(0.2, 0.05 * cues.markers) + (0.15 if personal else 0.0)
    return _unit(score + 0.1 * cues.vehemence)


def _matching(msgs: Iterable[_Msg], pattern: re.Pattern[str]) -> tuple[str, ...]:
    """Distinct sentences of msgs matching pattern, at most `_CARD_ITEMS`."""
    found: dict[str, None] = {}
    for msg in msgs:
        for sentence, lower in _sentences(msg):
            if len(found) < _CARD_ITEMS and pattern.search(lower):
                found.setdefault(_clip(sentence, 300), None)
    return tuple(found)


def _goal(briefs: Sequence[_Msg]) -> str:
    """The first brief's opening sentences, up to 300 characters."""
    sentences = _sentences(briefs[0]) if briefs else []
    goal = ""
    for sentence, _ in sentences:
        candidate = f"{goal} {sentence}".strip()
        if goal and len(candidate) > 300:
            break
        goal = candidate
    return _clip(goal, 300) or "No goal stated."


def _artifacts(msgs: Sequence[_Msg]) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for msg in msgs:
        for kind, ref in _references(msg.text):
            if kind in ("url", "path", "issue"):
                found.setdefault(ref, None)
    return tuple(found)[:_MAX_ITEMS]


def _status(msgs: Sequence[_Msg]) -> Literal["done", "blocked", "in_progress", "failed"]:
    """Read from the last assistant message: the sub-agent's own final word."""
    last = next((m for m in reversed(msgs) if m.record.role == "assistant"), None)
    lower = last.lower if last else ""
    if _DONE.search(lower):
        return "done"
    if _BLOCKED.search(lower):
        return "blocked"
    return "failed" if _FAILED.search(lower) else "in_progress"


def _task_card(msgs: Sequence[_Msg], threads: Sequence[OpenThread]) -> TaskCard:
    """Result-only card of a sub-agent run: goal, limits, what was done, what is left."""
    briefs = [m for m in msgs if m.record.role in ("user", "system") and m.text]
    workers = [m for m in msgs if m.record.role in ("assistant", "tool") and m.text]
    actions = tuple(dict.fromkeys(_clip(_sentences(m)[0][0], 160) for m in workers))
    upcoming = [t.context for t in threads] + list(_matching(msgs, _NEXT))
    return TaskCard(
        goal=_goal(briefs),
        boundary=_matching(briefs, _BOUNDARY),
        acceptance=_matching(briefs, _ACCEPTANCE),
        actions=actions[:_CARD_ITEMS],
        artifacts=_artifacts(msgs),
        status=_status(msgs),
        next=tuple(dict.fromkeys(upcoming))[:_CARD_ITEMS],
    )


class HeuristicExtractor:
    """Extractor built from regexes and word lists: fast, offline, deterministic."""

    @property
    def name(self) -> str:
        """Identifier recorded with every memory this extractor writes."""
        return "heuristic-v1"

    def extract(self, state: SessionState) -> Extraction:
        """Episode, memories and, for sub-agent sessions, a task card for one state."""
        msgs = [_analyse(m) for m in state.messages]
        spoken = [m for m in msgs if m.record.role in _SPOKEN]
        users = [m for m in spoken if m.record.role == "user"]
        speakers = _speaker_names(spoken)
        own_names = {w for name in speakers for w in _TOKEN.findall(_lower(name))}
        topics = _topics(spoken, own_names)
        outcomes = _outcomes(spoken)
        threads = _open_threads(msgs, topics)
        memories = _memories(msgs, outcomes)
        cues = _episode_cues(spoken, users)
        episode = EpisodeDraft(
            summary=_summary(msgs, topics, outcomes, threads),
            topics=topics,
            entities=_entities(spoken, speakers),
            user_state=_user_state(users, topics, own_names),
            outcomes=outcomes,
            open_threads=threads,
            importance=_importance(cues, outcomes, threads, memories),
            vehemence=cues.vehemence,
            urgency=cues.urgency,
            sentiment=cues.sentiment,
            risk=cues.risk,
        )
        card = _task_card(msgs, threads) if state.session.kind == "subagent" else None
        return Extraction(episode=episode, memories=memories, task_card=card)
