"""Finders for the pattern-shaped categories: emails, payment cards, IBANs, IP addresses.

Each finder yields ``Span``s of candidates that passed their check: the Luhn sum and a card
network's number range for cards, the country format and mod-97 checksum for IBANs
(``stdnum``), the ``ipaddress`` module for IPs. A candidate that fails is left alone.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from dataclasses import dataclass

from stdnum import iban, luhn

from storage.redaction._words import words


@dataclass(frozen=True)
class Span:
    """A value found at ``text[start:end]``; ``key`` is its normal form (same value, same key)."""

    start: int
    end: int
    category: str
    key: str


# Unicode letters allowed on both sides ("jürgen@müller.de").
_EMAIL = re.compile(
    r"(?<![\w.+-])[^\W_][\w.%+-]{0,63}@"
    r"(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+[^\W\d_]{2,24}(?![\w-])"
)
# 13 to 19 digits, optionally in groups split by one space or dash.
_CARD = re.compile(r"(?<![\w.,-])\d(?:[ -]?\d){12,18}(?![\w-]|[.,]\d)")
_IBAN = re.compile(r"(?<![\w])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![\w])")
_IPV4 = re.compile(r"(?<![\w.-])(?:\d{1,3}\.){3}\d{1,3}(?![\w]|\.\d|-[A-Za-z])")
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?(?![\w:])"
)
_WORD_BEFORE = re.compile(r"(§|[^\W\d][\w.]*)[^\w§]*$")
_VERSION_WORDS = frozenset(words("ip", "versions"))


def emails(text: str) -> Iterator[Span]:
    for m in _EMAIL.finditer(text):
        yield Span(m.start(), m.end(), "EMAIL", m.group().lower())


def cards(text: str) -> Iterator[Span]:
    """Card numbers: the Luhn sum holds and the prefix and length are a network's."""
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if _card_network(digits) and luhn.is_valid(digits) and _even_groups(m.group()):
            yield Span(m.start(), m.end(), "CARD", digits)


def _card_network(digits: str) -> bool:
    """Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay or Maestro by prefix and length."""
    n, two, four = len(digits), int(digits[:2]), int(digits[:4])
    if digits[0] == "4":
        return n in (13, 16, 19)
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return n == 16
    if two in (34, 37):
        return n == 15
    if two in (36, 38, 39) or 300 <= int(digits[:3]) <= 305:
        return 14 <= n <= 19
    if digits.startswith(("6011", "65", "62")) or 644 <= int(digits[:3]) <= 649:
        return 16 <= n <= 19
    if 3528 <= four <= 3589:
        return 16 <= n <= 19
    return two in (50, 56, 57, 58, 63, 67) and 12 <= n <= 19


def _even_groups(raw: str) -> bool:
    """Either no separators, or one kind of separator between groups of 4 (Amex: 4-6-5)."""
    seps = set(re.findall(r"\D", raw))
    if not seps:
        return True
    groups = [len(g) for g in re.split(r"\D", raw)]
    return len(seps) == 1 and (all(g == 4 for g in groups[:-1]) or groups == [4, 6, 5])


def ibans(text: str) -> Iterator[Span]:
    for m in _IBAN.finditer(text):
        value = m.group().rstrip()
        if iban.is_valid(value):
            yield Span(m.start(), m.start() + len(value), "IBAN", iban.compact(value))


def ips(text: str) -> Iterator[Span]:
    """IPv4 and IPv6 addresses the ``ipaddress`` module accepts, except loopback and ``::``."""
    for m in _IPV4.finditer(text):
        if _word_before(text, m.start()) not in _VERSION_WORDS:
            yield from _address(m)
    for m in _IPV6.finditer(text):
        if m.group().count(":") >= 2 and sum(1 for g in m.group().split(":") if g) >= 3:
            yield from _address(m)


def _address(m: re.Match[str]) -> Iterator[Span]:
    try:
        address = ipaddress.ip_address(m.group())
    except ValueError:
        return
    if not (address.is_loopback or address.is_unspecified):
        yield Span(m.start(), m.end(), "IP", str(address))


def _word_before(text: str, start: int) -> str:
    """The word just before ``start`` (lower-cased), skipping spaces and punctuation."""
    found = _WORD_BEFORE.search(text[max(0, start - 30) : start])
    return found.group(1).lower() if found else ""


def custom(text: str, name: str, pattern: re.Pattern[str]) -> Iterator[Span]:
    for m in pattern.finditer(text):
        if m.end() > m.start():
            yield Span(m.start(), m.end(), name, m.group())
