"""The policy (which categories, compiled once) and the redactor (one scope of placeholders).

A ``Redactor`` is one scope: one extractor call, one webhook notice, one embedded text, one
stored session. Within it the same value always gets the same placeholder (``<EMAIL_1>``,
then ``<EMAIL_2>`` for another address), so a model still sees that two mentions are one
thing. It counts replacements per category and keeps the placeholder -> value map in
memory only, for ``restore``; nothing here logs or returns a removed value otherwise.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from storage.kernel.settings import RedactionSettings
from storage.redaction._addresses import addresses
from storage.redaction._finders import Span, cards, custom, emails, ibans, ips
from storage.redaction._phones import phones

Finder = Callable[[str], Iterator[Span]]
PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]*?)_(\d{1,6})>")


@dataclass(frozen=True)
class RedactionPolicy:
    """The finders a settings section turns on, in priority order (custom rules first)."""

    finders: tuple[Finder, ...]
    before_storage: bool = False

    @classmethod
    def from_settings(cls, settings: RedactionSettings | None) -> RedactionPolicy:
        """The policy of ``settings``; ``None`` means the defaults (every category on)."""
        config = settings if settings is not None else RedactionSettings()
        if not config.enabled:
            return cls(())
        found: list[Finder] = [
            _bind_custom(name, pattern) for name, pattern in config.custom_rules()
        ]
        regions = tuple(config.phone_regions)
        toggles: list[tuple[bool, Finder]] = [
            (config.emails, emails),
            (config.ibans, ibans),
            (config.cards, cards),
            (config.ips, ips),
            (config.phones, lambda text: phones(text, regions)),
            (config.addresses, addresses),
        ]
        found += [finder for on, finder in toggles if on]
        return cls(tuple(found), config.before_storage)

    @property
    def active(self) -> bool:
        return bool(self.finders)

    def redactor(self) -> Redactor:
        """A new scope of placeholders."""
        return Redactor(self)

    def spans(self, text: str) -> list[Span]:
        """Non-overlapping finds, earlier finders first, then longer, then earlier in the text."""
        ranked = [(rank, span) for rank, finder in enumerate(self.finders) for span in finder(text)]
        ranked.sort(key=lambda item: (item[0], item[1].start - item[1].end, item[1].start))
        taken: list[Span] = []
        for _, span in ranked:
            if all(span.end <= t.start or span.start >= t.end for t in taken):
                taken.append(span)
        return sorted(taken, key=lambda s: s.start)


@dataclass
class Redactor:
    """Replaces found values with typed placeholders, consistently within this scope."""

    policy: RedactionPolicy
    counts: Counter[str] = field(default_factory=Counter)
    _by_key: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)
    _values: dict[str, str] = field(default_factory=dict, repr=False)
    _used: set[str] = field(default_factory=set, repr=False)

    def redact(self, text: str) -> str:
        """``text`` with every found value replaced by its placeholder."""
        if not self.policy.active or not text:
            return text
        self._used.update(m.group() for m in PLACEHOLDER.finditer(text))
        parts: list[str] = []
        last = 0
        for span in self.policy.spans(text):
            parts += [text[last : span.start], self._placeholder(span, text)]
            last = span.end
            self.counts[span.category.lower()] += 1
        return "".join([*parts, text[last:]])

    def redact_all(self, data: Any) -> Any:
        """Every string inside ``data`` (dicts, lists, tuples) redacted, keys kept."""
        return _walk(data, self.redact)

    def restore(self, text: str) -> str:
        """Placeholders of this scope put back to their values; any other is left as is."""
        return PLACEHOLDER.sub(lambda m: self._values.get(m.group(), m.group()), text)

    def restore_all(self, data: Any) -> Any:
        return _walk(data, self.restore)

    @property
    def placeholders(self) -> Mapping[str, str]:
        """Placeholder -> original text, for local use only (``restore``)."""
        return self._values

    def _placeholder(self, span: Span, text: str) -> str:
        known = self._by_key.get((span.category, span.key))
        if known is not None:
            return known
        number = sum(1 for c, _ in self._by_key if c == span.category) + 1
        while (placeholder := f"<{span.category}_{number}>") in self._used:
            number += 1  # the text already holds this one (stored redacted, or typed)
        self._used.add(placeholder)
        self._by_key[(span.category, span.key)] = placeholder
        self._values[placeholder] = text[span.start : span.end]
        return placeholder


def _bind_custom(name: str, pattern: re.Pattern[str]) -> Finder:
    return lambda text: custom(text, name, pattern)


def _walk(data: Any, change: Callable[[str], str]) -> Any:
    if isinstance(data, str):
        return change(data)
    if isinstance(data, dict):
        return {key: _walk(value, change) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return type(data)(_walk(value, change) for value in data)
    return data
