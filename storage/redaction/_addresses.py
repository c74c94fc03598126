"""Street addresses, best effort: a house number next to a street word, in four languages.

Conservative on purpose: a street name alone ("Baker Street"), a postcode alone ("75001"),
a city or a PO box is not an address here; a number and a street word in the shapes below
are. A following postcode and town ("…, 10115 Berlin") joins the address.

- English: ``221B Baker Street``, ``1600 Pennsylvania Avenue``
- German: ``Hauptstraße 5``, ``Karl-Marx-Allee 12a``, ``Berliner Straße 3``
- French: ``12 rue de la Paix``, ``3 bis avenue Foch``
- Spanish: ``Calle Mayor 5``, ``Avenida de la Constitución, 12``, ``C/ Alcalá nº 20``
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from storage.redaction._finders import Span
from storage.redaction._words import alternation

_UP = r"[A-ZÀ-ÖØ-Þ]"  # an upper-case letter, accents included
_LOW = r"[a-zß-öø-ÿ]"
_NAME = rf"{_UP}[\w'’-]*"  # a capitalised word: "Baker", "Karl-Marx", "L'Église"
_LINK = r"(?:de la|de los|de las|del|de|des|du|d'|l'|la|le|les|y)"
_NUMBER = r"\d{1,5}[A-Za-z]?(?:\s?(?:bis|ter))?"
_TOWN = rf"(?:,?\s+\d{{4,5}}\s+{_NAME}(?:[ -]{_NAME})?)?"

_PATTERNS = (
    # English: number, one to three capitalised words, street word.
    rf"\b\d{{1,5}}[A-Za-z]?\s+(?:{_NAME}\s+){{1,3}}(?i:{alternation('street', 'en')})(?!\w)",
    # German: a capitalised compound ending in a street word ("Hauptstraße"), or capitalised
    # words and a separate one ("Berliner Straße"), then the number.
    rf"\b(?:(?:{_UP}{_LOW}*-)*{_UP}{_LOW}+(?i:{alternation('street', 'de')})"
    rf"|(?:{_UP}{_LOW}*[- ])+(?i:{alternation('street', 'de_separate')}))"
    rf"\s+\d{{1,4}}(?:\s?[a-z])?\b{_TOWN}",
    # French: number, street word, a linking word maybe, capitalised words.
    rf"\b{_NUMBER},?\s+(?i:{alternation('street', 'fr')})\s+(?:{_LINK}\s*)?{_NAME}"
    rf"(?:\s+(?:{_LINK}\s*)?{_NAME}){{0,3}}{_TOWN}",
    # Spanish: street word, name, number (with an optional "nº").
    rf"(?<!\w)(?i:{alternation('street', 'es')})\s+(?:{_LINK}\s+)?{_NAME}"
    rf"(?:\s+(?:{_LINK}\s+)?{_NAME}){{0,3}},?\s+(?:n[º°o]\.?\s*)?\d{{1,4}}\b{_TOWN}",
)
_ADDRESS = re.compile("|".join(f"(?:{p})" for p in _PATTERNS))


def addresses(text: str) -> Iterator[Span]:
    for m in _ADDRESS.finditer(text):
        yield Span(m.start(), m.end(), "ADDRESS", " ".join(m.group().casefold().split()))
