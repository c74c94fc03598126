"""Who said it: speakers' display names, and first-person sentences told about their speaker.

A note about a session reads "Alice is allergic to penicillin", not "I'm allergic to
penicillin": ``as_note`` rewrites an English statement's "I", "my" and "me" into the
speaker's name, and gives up (None) on anything it cannot rewrite for certain, so the
caller falls back to "Alice: I'm ...". Other languages always fall back.
"""

from __future__ import annotations

import re

from tasks.extraction import _lexicon as lexicon
from tasks.extraction._text import is_question

_WORD = re.compile(r"\w+(?:'\w+)*")
_CONTRACTED = re.compile(r"I('m|'ve|'ll|'d)")


def display_name(speaker: str, role: str) -> str:
    """The speaker as a note names them: a label written in lower case ("aria", an agent's
    id) gets its capitals; a generic one ("user") becomes "the user"."""
    name = " ".join(speaker.split())
    if not name or name.casefold() in lexicon.GENERIC_SPEAKERS:
        return f"the {role}"
    if name.islower():
        return " ".join(part[:1].upper() + part[1:] for part in name.split(" "))
    return name


def _possessive(name: str) -> str:
    return f"{name}'" if name.endswith("'s") else f"{name}'s"


def _third_person(verb: str) -> str | None:
    """The verb after a name instead of "I": past forms stay, present ones take -s."""
    low = verb.lower()
    if verb == low and low in lexicon.AUXILIARIES:
        return lexicon.AUXILIARIES[low]
    if verb != low or not verb.isalpha() or low in lexicon.NOT_VERBS:
        return None  # a capitalised word, a number, a list: "I" is not a subject here
    if (low.endswith("ed") and not low.endswith("eed")) or low in lexicon.IRREGULAR_PAST:
        return verb
    if low in lexicon.THIRD_PERSON:
        return lexicon.THIRD_PERSON[low]
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


class _Rewrite:
    """One sentence's rewrite, word by word."""

    def __init__(self, text: str, name: str) -> None:
        self.text = text
        self.name = name
        self.words = list(_WORD.finditer(text))
        self.named = False  # the name has been said: later mentions take a pronoun
        self.parts: list[str] = []
        self.done = 0  # text consumed up to here

    def _emit(self, start: int, end: int, replacement: str) -> None:
        self.parts += [self.text[self.done : start], replacement]
        self.done = end

    def _adjacent(self, index: int) -> bool:
        """Whether word ``index`` follows word ``index - 1`` after white space alone."""
        if index >= len(self.words):
            return False
        between = self.text[self.words[index - 1].end() : self.words[index].start()]
        return between.isspace()

    def subject(self, index: int) -> int | None:
        """Rewrite the "I" (or "I'm", ...) at word ``index``; the next word index, or None."""
        word = self.words[index]
        contracted = _CONTRACTED.fullmatch(word.group())
        if contracted:
            auxiliary = lexicon.AUXILIARIES[contracted[1]]
            self._emit(word.start(), word.end(), f"{self.name} {auxiliary}")
            self.named = True
            return index + 1
        verb = index + 1
        while verb < len(self.words) and self.words[verb].group().lower() in lexicon.ADVERBS:
            verb += 1
        if not all(self._adjacent(i) for i in range(index + 1, verb + 1)):
            return None
        form = _third_person(self.words[verb].group())
        if form is None:
            return None
        middle = self.text[word.end() : self.words[verb].start()]
        self._emit(word.start(), self.words[verb].end(), f"{self.name}{middle}{form}")
        self.named = True
        return verb + 1

    def run(self) -> str | None:
        index, changed = 0, False
        while index < len(self.words):
            word = self.words[index]
            token = word.group()
            low = token.lower()
            if token == "I" or _CONTRACTED.fullmatch(token):
                following = self.subject(index)
                if following is None:
                    return None
                index, changed = following, True
                continue
            if low in ("my", "me"):
                pronoun = "their" if low == "my" else "them"
                named = _possessive(self.name) if low == "my" else self.name
                self._emit(word.start(), word.end(), pronoun if self.named else named)
                self.named = changed = True
            elif low in ("mine", "myself", "i"):
                return None  # "mine", "myself" and a lower-case "i" are not rewritten
            index += 1
        if not changed:
            return None
        note = "".join([*self.parts, self.text[self.done :]])
        return note[:1].upper() + note[1:]


def as_note(sentence: str, name: str) -> str | None:
    """The English statement told about ``name`` ("I've booked my flight" -> "Alice has
    booked their flight", "My knee hurts" -> "Alice's knee hurts"); None for a question,
    a sentence without "I", "my" or "me", or one it cannot rewrite for certain."""
    text = sentence.replace("\u2019", "'")
    if is_question(text):
        return None
    return _Rewrite(text, name).run()


def attributed(text: str, name: str) -> str:
    """The sentence with its speaker: a note about them when it rewrites to one starting
    with their name, "Name asked: ..." for a question, else "Name: ..."."""
    if is_question(text):
        return f"{name} asked: {text}"
    note = as_note(text, name)
    if note is not None and note.startswith(name[:1].upper() + name[1:]):
        return note
    return f"{name}: {text}"
