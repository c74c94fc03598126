"""A fact's text: its subject named, its context, the date it was said.

"I'm obsessed with them" alone tells an assistant nothing months later. A stored fact
names the speaker as its subject (``_person.as_note``, else "Name: ...") and closes with
the local date it was said: "Mara's knees ache after hills. (2026-02-03)". A fragment that
leans on something said before ("them", "that one") also carries what resolves it: the
question it answers, the session's title or, failing both, the sentence before it
("Nebraas is obsessed with them. (answering "What do you think of the new Spider-Man
games?", 2026-05-01)"); with nothing to resolve it, it is not stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import tzinfo

from storage.kernel.facts import closing
from tasks.extraction._analysis import Msg, sentences
from tasks.extraction._person import as_note, display_name
from tasks.extraction._text import TOKEN, clip, is_question, leans_back

TITLE_CAP = 80
QUOTE_CAP = 160


@dataclass(frozen=True)
class Setting:
    """What a fact's context draws on: the session's title and the run's time zone."""

    title: str | None
    tz: tzinfo


def question_before(previous: Msg | None, msg: Msg) -> str | None:
    """The question another speaker's message just before ``msg`` ended with, if any."""
    if previous is None or previous.record.speaker == msg.record.speaker:
        return None
    said = sentences(previous)
    if not said or not is_question(said[-1][0]):
        return None
    return said[-1][0]


def sentence_before(msg: Msg, sentence: str) -> str | None:
    """The sentence of the same message before ``sentence``, if it stands on its own."""
    said = [s for s, _ in sentences(msg)]
    index = said.index(sentence) if sentence in said else 0
    if index == 0:
        return None
    before = said[index - 1]
    tokens = TOKEN.findall(before.lower())
    return None if leans_back(tokens) or len(tokens) < 3 else before


def context_of(sentence: str, msg: Msg, previous: Msg | None, setting: Setting) -> tuple[str, bool]:
    """(context, enough): the context a fact from ``sentence`` carries, and whether it is
    enough to keep it. A statement that stands on its own carries none (its subject and
    date say enough, and a title in every fact would make each one match any question
    about the session's topic); one that leans back takes the question it answers, the
    session's title, or the sentence before it, and without any is not kept."""
    if not leans_back(TOKEN.findall(sentence.lower())):
        return "", True
    title = f'in "{clip(setting.title, TITLE_CAP)}"' if setting.title else ""
    question = question_before(previous, msg)
    asked = f'answering "{clip(question, QUOTE_CAP)}"' if question else ""
    if asked or title:
        return asked or title, True
    before = sentence_before(msg, sentence)
    after = f'after "{clip(before, QUOTE_CAP)}"' if before else ""
    return after, bool(after)


def fact_text(sentence: str, msg: Msg, context: str, *, tz: tzinfo, decision: bool) -> str:
    """The fact as stored: subject, statement, then (context, date said); a decision whose
    words do not say so reads "Alice decided: ..."."""
    name = display_name(msg.record.speaker, msg.record.role)
    text = clip(sentence, 500)
    note = as_note(text, name)
    capital = name[:1].upper() + name[1:]
    if note is not None and note.startswith(capital):
        statement = note
    elif decision and "decid" not in text.lower():
        statement = f"{name} decided: {text}"
    else:
        statement = f"{name}: {text}"
    return statement + closing(context, msg.record.timestamp.astimezone(tz).date())
